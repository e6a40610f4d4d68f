import { CheckpointError } from '../../contract/errors.js';
import { keysOf } from './emergency-queue.js';
import type { PendingWrite } from './github-storage.js';
import { loadQueue } from './queue-push.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/** `isPending()`: a write of `key` is held in the emergency queue (not yet on GitHub). */
export function isPending(store: GitHubStoreState, key: string): boolean {
  return store.queue.overlay().has(key);
}

/** `pendingWrites()`: the queued writes, oldest first. */
export function pendingWrites(store: GitHubStoreState): readonly PendingWrite[] {
  return store.queue.entries().map((w) => ({ seq: w.seq, keys: keysOf(w), enqueuedAtMs: w.enqueuedAtMs }));
}

/** `discardPendingWrite()`: gives up queued write `seq`; false when there is none. */
export async function discardPendingWrite(store: GitHubStoreState, seq: number): Promise<boolean> {
  assertOpen(store);
  if (!Number.isSafeInteger(seq))
    throw new CheckpointError('checkpoint_config_invalid', 'discardPendingWrite() takes the seq of a pending write (an integer)');
  return store.lock(async () => {
    await loadQueue(store);
    return store.queue.discard(seq);
  });
}
