import type { StorageEntry } from '../../contract/storage.js';
import { assertKey, assertPrefix } from '../keys.js';
import { INIT_MARKER_PATH } from './init-repository.js';
import { listTree } from './listing.js';
import { loadQueue } from './queue-push.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/** `list()`: the branch's tree, overlaid with this adapter's own fresh writes, then with the queue; sorted by key. */
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
  for (const [path, w] of ctx.state.ownWrites(store.clock.now() - store.readYourWritesMs)) {
    const key = ctx.toKey(path);
    if (key === undefined || !key.startsWith(prefix)) continue;
    if (w.sha === null) entries.delete(key);
    else entries.set(key, { key, version: w.sha, size: w.size });
  }
  for (const [key, v] of store.queue.overlay()) {
    if (!key.startsWith(prefix)) continue;
    if (v === null) entries.delete(key);
    else entries.set(key, { key, version: v.version, size: v.bytes.length });
  }
  const sorted = [...entries.values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const e of sorted) yield e;
}
