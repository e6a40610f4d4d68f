import type { StorageEntry } from '../../contract/storage.js';
import { assertKey, assertPrefix } from '../keys.js';
import { compareWithBranch, judgeOwnWrite, type BranchComparison } from './branch-comparison.js';
import { readBlob } from './contents.js';
import { INIT_MARKER_PATH } from './init-repository.js';
import { listTree } from './listing.js';
import { loadQueue } from './queue-push.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/** `list()`: the branch's tree, overlaid with this adapter's own fresh writes (see {@link overlayOwnWrites}), then with the queue; sorted by key. */
export async function* listKeys(store: GitHubStoreState, prefix: string): AsyncIterable<StorageEntry> {
  const { ctx } = store;
  assertOpen(store);
  assertPrefix(prefix);
  await loadQueue(store);
  const scanPrefix = ctx.toPath(prefix);
  const entries = new Map<string, StorageEntry>();
  for (const f of await listTree(ctx, store.branch, scanPrefix)) {
    if (store.basePath === '' && f.path === INIT_MARKER_PATH) continue;
    const key = ctx.toKey(f.path);
    if (key === undefined || !key.startsWith(prefix)) continue;
    try {
      assertKey(key);
    } catch {
      continue; // a file savepoint could not have written (not a valid key)
    }
    entries.set(key, { key, version: f.sha, size: f.size });
  }
  await overlayOwnWrites(store, prefix, entries);
  for (const [key, v] of store.queue.overlay()) {
    if (!key.startsWith(prefix)) continue;
    if (v === null) entries.delete(key);
    else entries.set(key, { key, version: v.version, size: v.bytes.length });
  }
  const sorted = [...entries.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const e of sorted) yield e;
}

/**
 * Overlays this adapter's own fresh writes on the branch's listing. Where the listing shows
 * another blob, the compare API (one request per own commit) tells a lagging replica (ours
 * stands) from another writer's newer commit (theirs stands, and ours is forgotten).
 */
async function overlayOwnWrites(store: GitHubStoreState, prefix: string, entries: Map<string, StorageEntry>): Promise<void> {
  const { ctx } = store;
  const comparisons = new Map<string, Promise<BranchComparison>>();
  for (const [path, w] of ctx.state.ownWrites(store.clock.now() - store.readYourWritesMs)) {
    const key = ctx.toKey(path);
    if (key === undefined || !key.startsWith(prefix)) continue;
    const listed = entries.get(key);
    if ((listed?.version ?? null) === w.sha) continue;
    let cmp = comparisons.get(w.commit);
    if (!cmp) comparisons.set(w.commit, (cmp = compareWithBranch(ctx, w.commit)));
    const verdict = judgeOwnWrite(await cmp, path, listed?.version ?? null);
    const shown = verdict.kind === 'ours' ? w.sha : verdict.kind === 'blob' ? verdict.sha : undefined;
    if (verdict.kind !== 'ours') ctx.state.forgetOwnWrites([path]);
    if (shown === undefined) continue; // the branch's listing stands
    if (shown === null) entries.delete(key);
    else entries.set(key, { key, version: shown, size: verdict.kind === 'ours' ? w.size : await blobSize(store, shown) });
  }
}

/** The size of a blob read by sha (a listing that lagged behind a newer blob does not know it). */
async function blobSize(store: GitHubStoreState, sha: string): Promise<number> {
  return (await readBlob(store.ctx, sha))?.length ?? 0;
}
