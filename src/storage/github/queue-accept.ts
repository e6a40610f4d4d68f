import { conditionFailed } from '../../contract/errors.js';
import type { BatchOperation } from '../../contract/storage.js';
import { isOwnDamage } from './contents.js';
import { keysOf, type QueuedWrite } from './emergency-queue.js';
import { scheduleFlush } from './queue-push.js';
import type { GitHubStoreState } from './store-state.js';

/**
 * How a write answers once it is queued or held: its written versions (`w.versions`), what
 * its deletes found (`existed`), and whether it is still `pending` (not yet on GitHub).
 */
export type QueuedAnswer<T> = (w: QueuedWrite, existed: (key: string) => boolean, pending: boolean) => T;

/** Checks a queued write's conditions against what this adapter already knows (the queue, then its cached listings). */
function checkQueuedConditions(store: GitHubStoreState, operations: readonly BatchOperation[]): void {
  const { ctx } = store;
  const overlay = store.queue.overlay();
  for (const op of operations) {
    const queued = overlay.get(op.key);
    const known = queued !== undefined ? (queued === null ? null : { sha: queued.version }) : ctx.state.fileAt(ctx.toPath(op.key));
    if (known === undefined) continue; // unknown: checked when the write is pushed
    if (queued === undefined && isOwnDamage(ctx, ctx.toPath(op.key), known?.sha)) continue; // our own damaged write: the push replaces it
    const exists = known !== null;
    if (op.type !== 'delete' && op.ifAbsent && exists) throw conditionFailed(op.key, 'key exists');
    if (op.ifVersion !== undefined && known?.sha !== op.ifVersion)
      throw conditionFailed(op.key, exists ? 'version changed' : 'key is gone');
  }
}

/** Accepts a write into the emergency queue (`held`: below the floor, not rate-limited), reports it, and schedules its push. */
export async function enqueue(
  store: GitHubStoreState,
  kind: QueuedWrite['kind'],
  operations: readonly BatchOperation[],
  maybeLanded: boolean,
  retryAtMs: number,
  held = false,
): Promise<QueuedWrite> {
  const { queue } = store;
  checkQueuedConditions(store, operations);
  const w = await queue.enqueue(kind, operations, maybeLanded, store.clock.now());
  const budget = store.http.budget();
  store.emit({
    type: 'write_queued',
    level: 'warn',
    seq: w.seq,
    keys: keysOf(w),
    pending: queue.size,
    retryAtMs,
    durable: queue.durable,
    message: held
      ? `Rate limit low: ${budget.remaining} remaining; ${w.operations.length} write(s) held in the durable local queue, to be pushed as one commit with the ones held with them by ${new Date(retryAtMs).toISOString()}`
      : `Rate limit exhausted: ${w.operations.length} write(s) queued for delayed persistence until ${new Date(retryAtMs).toISOString()}${queue.durable ? '' : ' (in memory only: lost if this process dies before flush())'}`,
  });
  scheduleFlush(store, retryAtMs);
  return w;
}

/** What a queued delete reports as `existed`: the queue's view, else the cached listing, else true (GitHub cannot be asked). */
export function existedBefore(store: GitHubStoreState, key: string, overlay: ReadonlyMap<string, unknown>): boolean {
  const queued = overlay.get(key);
  if (queued !== undefined) return queued !== null;
  return store.ctx.state.fileAt(store.ctx.toPath(key)) !== null;
}
