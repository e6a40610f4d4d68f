import type { StorageAdapter } from '../contract/storage.js';
import { checkpointKey, runDir } from './keys.js';
import type { LangGraphPayload, StoredChannel } from './profile.js';
import type { Snapshot } from '../contract/snapshot.js';

/** The newest checkpoint a saver wrote in a run, kept so the next put copies unchanged channels without a read. */
export interface LastCheckpoint {
  readonly id: string;
  readonly channels: Readonly<Record<string, StoredChannel>>;
  /** Canonical JSON of each of `channels`, so a channel carried over is not encoded again. */
  readonly texts: Readonly<Record<string, string>>;
}

/**
 * What a saver knows about one run (a thread's namespace) after listing it once: every
 * checkpoint id in ascending order, the sequences it has learned, and the highest
 * sequence. Later puts extend it without listing again, so a put costs the same on the
 * thousandth checkpoint as on the first.
 */
export interface RunState {
  readonly runId: string;
  /** Checkpoint ids stored in the run, ascending (LangGraph's uuid6 ids sort by creation). */
  readonly ids: string[];
  /** Sequence of each checkpoint id, where known (reserved before its document is written). */
  readonly sequences: Map<string, number>;
  maxSequence: number;
  /** `maxSequence` when the run was listed: sequences above it were reserved by this saver. */
  loadedMaxSequence: number;
  last?: LastCheckpoint;
  /**
   * Writes keys this saver stored, by checkpoint sequence: pruning deletes them without
   * listing (a list costs what the store holds on some adapters). Sequences not here are listed.
   */
  readonly writeKeys: Map<number, Set<string>>;
  /**
   * Sequences above the newest checkpoint whose `parts/` folder already held writes when the
   * run was listed: a saver that died left them for checkpoints it never stored (LangGraph
   * saves a task's writes without waiting for the checkpoint before it). This saver reuses
   * those sequences, so pruning lists their folders and the leftovers go with the new checkpoint.
   */
  readonly leftoverWrites: ReadonlySet<number>;
}

const HISTORY_NAME = /\/history\/([^/]+)\.json$/;
const PARTS_SEQUENCE = /\/parts\/(\d+)\//;

/**
 * Lists a run's checkpoint ids and writes folders — one listing of the run's folder, not one
 * of `history/` and one of `parts/` (on fs each listing walks the run's directories,
 * a new thread's first checkpoint waited for both) — and reads its newest document's sequence.
 */
export async function loadRunState(
  storage: StorageAdapter,
  runId: string,
  readSequence: (key: string) => Promise<Snapshot<LangGraphPayload> | undefined>,
): Promise<RunState> {
  const ids: string[] = [];
  const writeSequences = new Set<number>();
  const prefix = `${runDir(runId)}/`;
  for await (const entry of storage.list(prefix)) {
    const rest = entry.key.slice(prefix.length - 1);
    const history = rest.startsWith('/history/') ? HISTORY_NAME.exec(rest) : null;
    if (history) ids.push(history[1]!);
    const parts = rest.startsWith('/parts/') ? PARTS_SEQUENCE.exec(rest) : null;
    if (parts) writeSequences.add(Number(parts[1]));
  }
  ids.sort(compareIds);
  let maxSequence = 0;
  const sequences = new Map<string, number>();
  const newest = ids.at(-1);
  if (newest !== undefined) {
    const snapshot = await readSequence(checkpointKey(runId, newest));
    if (snapshot) {
      sequences.set(newest, snapshot.sequence);
      maxSequence = snapshot.sequence;
    }
  }
  const leftoverWrites = new Set([...writeSequences].filter((sequence) => sequence > maxSequence));
  return { runId, ids, sequences, maxSequence, loadedMaxSequence: maxSequence, writeKeys: new Map(), leftoverWrites };
}

/** Code-unit order, the order `list()` returns and LangGraph's ids sort in. */
export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Index of the first id not below `id` (binary search: a put stays O(log n) on a thread kept whole). */
function lowerBound(ids: readonly string[], id: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** True when the run holds checkpoint `id`, as far as this saver knows. */
export function hasId(state: RunState, id: string): boolean {
  return state.ids[lowerBound(state.ids, id)] === id;
}

/** Adds `id` to the ascending id list (at the end in the usual case: ids grow). */
export function insertId(state: RunState, id: string): void {
  const ids = state.ids;
  if (ids.length === 0 || ids[ids.length - 1]! < id) {
    ids.push(id);
    return;
  }
  const at = lowerBound(ids, id);
  if (ids[at] !== id) ids.splice(at, 0, id);
}

/**
 * The sequence of checkpoint `id`: known, else reserved as the next one. Synchronous, so
 * a put and the writes LangGraph sends for the same checkpoint before that put started
 * (it chains puts but not writes) agree on one sequence.
 */
export function reserveSequence(state: RunState, id: string): number {
  let sequence = state.sequences.get(id);
  if (sequence === undefined) {
    sequence = ++state.maxSequence;
    state.sequences.set(id, sequence);
  }
  return sequence;
}
