import { sleep } from '../../contract/clock.js';
import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import { commitOperations } from './commit-builder.js';
import { deleteFile } from './contents.js';
import { putFile } from './put-file.js';
import { keysOf, mergeQueuedWrites, type QueuedWrite } from './emergency-queue.js';
import { retryAtOf } from './http.js';
import type { GitHubStoreState } from './store-state.js';

/** Pushes one queued write; the same code paths as a direct write, told that an earlier attempt may have landed. */
async function applyQueuedWrite(store: GitHubStoreState, queued: QueuedWrite): Promise<void> {
  const { ctx } = store;
  const w = store.attempted.has(queued.seq) ? { ...queued, maybeLanded: true } : queued;
  const [op] = w.operations;
  if (w.kind === 'put' && op?.type === 'put' && op.bytes.length <= ctx.inlineMaxBytes) {
    const { type: _t, key, bytes, ...cond } = op;
    await putFile(ctx, key, bytes, cond, w.maybeLanded);
  } else if (w.kind === 'delete' && op?.type === 'delete') {
    await deleteFile(ctx, op.key, op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {}, w.maybeLanded);
  } else {
    await commitOperations(ctx, w.operations, { operation: w.kind, maybeLanded: w.maybeLanded });
  }
}

/** Schedules a push of the queue at `atMs` (at least a second away), unless one is scheduled or the adapter is closed. */
export function scheduleFlush(store: GitHubStoreState, atMs: number): void {
  if (store.flushTimer !== undefined || store.closed) return;
  const { clock } = store;
  // A background timer: an opportunistic push must not keep a finished program alive.
  // Programs call flush()/close() to wait for the queue (or spill it to durable storage).
  store.flushTimer = clock.setTimeout(
    () => {
      store.flushTimer = undefined;
      store.lock(() => drain(store, false)).catch(() => undefined); // failures are reported as queue_flush_failed events
    },
    Math.max(1000, atMs - clock.now()),
    { background: true },
  );
}

/** Drops a pushed write (the oldest) from the queue and reports it. */
async function shiftPushed(store: GitHubStoreState, w: QueuedWrite): Promise<void> {
  await store.queue.shift(w.seq);
  store.attempted.delete(w.seq);
  store.emit({ type: 'queue_flushed', level: 'info', seq: w.seq, keys: keysOf(w), pending: store.queue.size });
}

/**
 * Pushes queued writes in order. With `wait`, waits out rate limits however long they
 * last (flush/close); without, stops at the first rate limit and schedules a retry.
 * Resolves true when the queue is empty.
 */
export async function drain(store: GitHubStoreState, wait: boolean): Promise<boolean> {
  const { queue, clock } = store;
  await queue.load();
  let merge = true;
  while (queue.peek()) {
    const blocked = store.http.blockedUntil();
    if (blocked !== undefined && !wait) {
      scheduleFlush(store, blocked + 5000);
      return false;
    }
    if (merge && queue.size > 1) {
      // The whole queue as one commit; if that fails for any reason but the rate limit
      // (an entry landed on its own before a crash, a condition lost), one at a time.
      const pushed = await pushMerged(store, wait);
      if (pushed === 'rate-limited') return false;
      if (pushed === 'failed') merge = false;
      continue;
    }
    const w = queue.peek()!;
    try {
      await applyQueuedWrite(store, w);
    } catch (err) {
      store.attempted.add(w.seq);
      if (isCheckpointError(err, 'checkpoint_rate_limited')) {
        const at = retryAtOf(err) ?? clock.now() + 60_000;
        if (wait) {
          await sleep(clock, Math.max(0, at - clock.now()));
          continue;
        }
        scheduleFlush(store, at);
        return false;
      }
      const e = isCheckpointError(err) ? err : new CheckpointError('checkpoint_storage_unavailable', 'queued write failed');
      store.emit({ type: 'queue_flush_failed', level: 'error', seq: w.seq, keys: keysOf(w), reasonCode: e.reasonCode, message: e.message });
      if (!wait) scheduleFlush(store, clock.now() + 60_000);
      throw err;
    }
    await shiftPushed(store, w);
  }
  return true;
}

/**
 * The writes one merged push sends: the whole queue, or after a merged push that may have
 * landed (a rate limit, a lost answer), the same writes again. With the writes queued since,
 * it would be another batch, which cannot tell that commit for its own: a queued put that a
 * later write of the same key overwrote in it would conflict with that later write.
 */
function writesToMerge(store: GitHubStoreState): readonly QueuedWrite[] {
  const all = store.queue.entries();
  let tried = 0;
  while (tried < all.length && store.attempted.has(all[tried]!.seq)) tried++;
  return tried > 1 ? all.slice(0, tried) : all;
}

/** Pushes the queued writes (see writesToMerge) in one commit (mergeQueuedWrites). */
async function pushMerged(store: GitHubStoreState, wait: boolean): Promise<'pushed' | 'failed' | 'rate-limited' | 'waited'> {
  const { clock } = store;
  const writes = writesToMerge(store);
  try {
    await commitOperations(store.ctx, mergeQueuedWrites(writes), {
      operation: 'batch',
      maybeLanded: writes.some((w) => w.maybeLanded || store.attempted.has(w.seq)),
    });
  } catch (err) {
    for (const w of writes) store.attempted.add(w.seq);
    if (!isCheckpointError(err, 'checkpoint_rate_limited')) return 'failed';
    const at = retryAtOf(err) ?? clock.now() + 60_000;
    if (!wait) {
      scheduleFlush(store, at);
      return 'rate-limited';
    }
    await sleep(clock, Math.max(0, at - clock.now()));
    return 'waited';
  }
  for (const w of writes) await shiftPushed(store, w);
  return 'pushed';
}

/** Loads writes a previous process spilled, and schedules their push. */
export async function loadQueue(store: GitHubStoreState): Promise<void> {
  const fresh = !store.queueLoaded;
  store.queueLoaded = true;
  await store.queue.load();
  if (fresh && store.queue.size > 0) scheduleFlush(store, store.clock.now());
}
