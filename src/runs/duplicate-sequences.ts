/** A sequence that more than one stored document of a run claims. */
export interface DuplicateSequence {
  readonly sequence: number;
  /** Keys of the documents that hold it, in the order given. */
  readonly keys: readonly string[];
}

/**
 * The sequences of a run that more than one document holds. Sequences name one snapshot
 * each: two writers that each counted for themselves (two LangGraph savers on one thread,
 * before savers claimed sequences through the run's head) leave such pairs, and resume,
 * retention and diff can then no longer tell the two documents apart by sequence.
 */
export function duplicateSequences(documents: Iterable<{ readonly key: string; readonly sequence: number }>): DuplicateSequence[] {
  const bySequence = new Map<number, string[]>();
  for (const { key, sequence } of documents) {
    const keys = bySequence.get(sequence);
    if (keys) keys.push(key);
    else bySequence.set(sequence, [key]);
  }
  // `x.json` beside `x.json.gz` is one document caught mid-compression (a crash between the
  // compressed copy's write and the plain file's delete), not a second holder of its sequence.
  const documentsOf = (keys: readonly string[]): number => new Set(keys.map((k) => (k.endsWith('.gz') ? k.slice(0, -3) : k))).size;
  return [...bySequence.entries()]
    .filter(([, keys]) => documentsOf(keys) > 1)
    .sort(([a], [b]) => a - b)
    .map(([sequence, keys]) => ({ sequence, keys }));
}
