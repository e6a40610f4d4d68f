import type { StoredObject } from '../../contract/storage.js';
import { assertKey } from '../keys.js';
import { readFile } from './contents.js';
import { loadQueue } from './queue-push.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/** `get()`: the queue first (a queued write is what the key holds), then the branch, then this adapter's own fresh commit. */
export async function getKey(store: GitHubStoreState, key: string): Promise<StoredObject | undefined> {
  const { ctx } = store;
  assertOpen(store);
  assertKey(key);
  await loadQueue(store);
  const queued = store.queue.overlay().get(key);
  if (queued !== undefined) return queued === null ? undefined : { bytes: queued.bytes.slice(), version: queued.version };
  const path = ctx.toPath(key);
  const found = await readFile(ctx, path, store.branch);
  const own = ctx.state.ownWrites(store.clock.now() - store.readYourWritesMs).get(path);
  if (own && (found?.sha ?? null) !== own.sha) {
    // The branch answered from a replica that has not seen our commit yet.
    if (own.sha === null) return undefined;
    const mine = await readFile(ctx, path, own.commit);
    if (mine) return { bytes: mine.bytes, version: mine.sha };
  }
  return found ? { bytes: found.bytes, version: found.sha } : undefined;
}
