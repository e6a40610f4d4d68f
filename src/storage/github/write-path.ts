import { isCheckpointError } from '../../contract/errors.js';
import type { BatchOperation } from '../../contract/storage.js';
import type { QueuedWrite } from './emergency-queue.js';
import { holdWrite, isHolding } from './hold.js';
import { retryAtOf } from './http.js';
import { enqueue, existedBefore, type QueuedAnswer } from './queue-accept.js';
import { drain, loadQueue } from './queue-push.js';
import { attemptDirect } from './repeat-failures.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/**
 * Runs a write, or queues it when the queue is not empty (order) or the rate limit is
 * exhausted. A queued write that fails for another reason does not fail this one: it is
 * reported (`queue_flush_failed`), retried later, and this write queues behind it. `urgent`
 * (`BatchOptions`): never held below the floor.
 */
export function runWrite<T>(
  store: GitHubStoreState,
  kind: QueuedWrite['kind'],
  operations: readonly BatchOperation[],
  direct: () => Promise<T>,
  queued: QueuedAnswer<T>,
  urgent = false,
): Promise<T> {
  const { queue, clock } = store;
  return store.lock(async () => {
    assertOpen(store);
    await loadQueue(store);
    // Only atomic batches (a writer's checkpoints) are held. A single put or delete — a lease
    // renewal above all — pushes what is held first and goes at once: holding must never let
    // a live writer's lease look stale on GitHub. An urgent batch (a critical trigger's) is not held either.
    const held = kind === 'batch' && !urgent && isHolding(store);
    if (queue.size > 0 && !held) await drain(store, false).catch(() => undefined);
    const accept = async (maybeLanded: boolean, retryAtMs: number): Promise<T> => {
      const before = queue.overlay();
      return queued(await enqueue(store, kind, operations, maybeLanded, retryAtMs), (key) => existedBefore(store, key, before), true);
    };
    if (held) return holdWrite(store, kind, operations, queued);
    if (store.queueEnabled && queue.size > 0) return accept(false, store.http.blockedUntil() ?? clock.now() + 60_000);
    try {
      return await attemptDirect(store, kind, operations, direct);
    } catch (err) {
      if (!store.queueEnabled || !isCheckpointError(err, 'checkpoint_rate_limited')) throw err;
      // An earlier attempt of this write may have landed before the limit hit: pushing checks first.
      return accept(true, retryAtOf(err) ?? clock.now() + 60_000);
    }
  });
}
