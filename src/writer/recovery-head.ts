import type { Snapshot } from '../contract/snapshot.js';
import { batchMembers, tryDecode, type RunRecovery } from './recovery-evidence.js';
import type { HeadLocation, RecoveredHead } from './sequence-recovery.js';

/** Where `s` is stored, as far as rewriting it (coalescing) is concerned. */
async function locate<P>(r: RunRecovery<P>, s: Snapshot<P>): Promise<HeadLocation> {
  const { layout } = r.profile;
  const known = r.decoded.get(s.sequence);
  if (known && known.snapshot.id === s.id) return known.location;
  if (!layout.historyKey) return { kind: 'latest' };
  const entry = r.index.doc?.checkpoints.find((e) => e.sequence === s.sequence && e.checkpoint_id === s.id);
  const key = entry?.file_path ?? layout.historyKey({ runId: r.runId, id: s.id, sequence: s.sequence, source: s.source });
  const listed = r.listed.get(key);
  if (!listed) return { kind: 'fixed' };
  const { entry: stored, info } = listed;
  if (info.compressed) return { kind: 'fixed' };
  if (info.kind === 'batch') {
    const obj = await r.storage.get(key);
    const raw = obj ? await batchMembers(r.storage, r.profile, key, obj.bytes) : undefined;
    return raw && obj ? { kind: 'batch', key, version: obj.version, members: raw } : { kind: 'fixed' };
  }
  return { kind: 'history', key, version: stored.version };
}

/** The head: the newest valid snapshot anywhere, preferring history's copy (history is the truth). */
export async function findHead<P>(r: RunRecovery<P>): Promise<RecoveredHead<P> | undefined> {
  const { decoded, index } = r;
  // A snapshot numbered out of the run's time order (no free number fitted) is older history, never the head.
  const latest = r.latest && !r.outOfOrder.has(r.latest.id) ? r.latest : undefined;
  const newestDecoded = [...decoded.entries()]
    .filter(([, d]) => !r.outOfOrder.has(d.snapshot.id))
    .map(([n]) => n)
    .sort((a, b) => b - a)[0];
  if (newestDecoded !== undefined && (!latest || newestDecoded > latest.sequence)) {
    const d = decoded.get(newestDecoded)!;
    return { snapshot: d.snapshot, location: d.location };
  }
  let head: RecoveredHead<P> | undefined;
  const maxIndexed = index.doc?.checkpoints.at(-1);
  if (maxIndexed && (!latest || maxIndexed.sequence > latest.sequence)) {
    const obj = await r.storage.get(maxIndexed.file_path);
    const s = obj ? await tryDecode(r.storage, r.profile, maxIndexed.file_path, obj.bytes) : undefined;
    if (s && s.sequence === maxIndexed.sequence) head = { snapshot: s, location: await locate(r, s) };
  }
  if (!head && latest) head = { snapshot: latest, location: await locate(r, latest) };
  return head;
}
