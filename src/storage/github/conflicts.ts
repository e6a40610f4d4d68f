import { isCheckpointError } from '../../contract/errors.js';
import { decodeRunIndex, encodeRunIndex, mergeRunIndex, pruneRunIndex, type RunIndex, type RunIndexEntry } from '../../codec/run-index.js';
import { canonicalJson } from '../../codec/canonical-json.js';

function tryDecode(bytes: Uint8Array | undefined): RunIndex | undefined {
  if (!bytes) return undefined;
  try {
    return decodeRunIndex(bytes);
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
}

const same = (a: RunIndexEntry, b: RunIndexEntry): boolean => canonicalJson(a) === canonicalJson(b);

/**
 * Three-way merge of a run's `index.json` (phased-workflow-github.md `conflict_handling`:
 * "Merge checkpoint data if possible"). `ours` is what this writer wants to store, made
 * from `base` (the version it read, if any); `theirs` is what another writer stored
 * meanwhile. The result is `theirs` minus the entries `ours` removed from `base`
 * (retention) plus the entries `ours` added or changed (new checkpoints) — so neither
 * writer's checkpoints are lost and pruned entries do not come back.
 *
 * Recognises index documents by their schema (`decodeRunIndex`), without knowing the
 * profile. Returns `undefined` when any side is not a run index or the two name
 * different runs: the conflict is then a real one.
 */
export function mergeRunIndexBytes(ours: Uint8Array, base: Uint8Array | undefined, theirs: Uint8Array): Uint8Array | undefined {
  const o = tryDecode(ours);
  const t = tryDecode(theirs);
  if (!o || !t || o.run_id !== t.run_id) return undefined;
  const b = tryDecode(base);
  if (base && (!b || b.run_id !== o.run_id)) return undefined;
  const baseEntries = new Map((b?.checkpoints ?? []).map((e) => [e.sequence, e] as const));
  const ourEntries = new Map(o.checkpoints.map((e) => [e.sequence, e] as const));
  const removed = new Set([...baseEntries.values()].filter((e) => !ourEntries.has(e.sequence)).map((e) => e.file_path));
  const added = o.checkpoints.filter((e) => {
    const before = baseEntries.get(e.sequence);
    return !before || !same(before, e);
  });
  const lastUpdated = o.last_updated > t.last_updated ? o.last_updated : t.last_updated;
  return encodeRunIndex(mergeRunIndex(pruneRunIndex(t, removed, lastUpdated), added, lastUpdated));
}
