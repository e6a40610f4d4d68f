import type { BatchOperation } from '../../contract/storage.js';
import type { QueuedWrite } from './emergency-queue.js';
import type { GitHubStorageOptions } from './github-storage.js';
import { configError } from './options.js';
import { enqueue, existedBefore, type QueuedAnswer } from './queue-accept.js';
import { drain } from './queue-push.js';
import type { GitHubStoreState } from './store-state.js';

/** `holdBelowFloor` with its defaults: when the held writes are pushed as one commit. */
export interface HoldOption {
  /** Held writes that trigger the push. */
  readonly maxWrites: number;
  /** Longest a held write waits. */
  readonly maxHoldMs: number;
}

/** The `holdBelowFloor` option with its defaults, or undefined when writes are never held. */
export function holdOptionOf(option: GitHubStorageOptions['holdBelowFloor']): HoldOption | undefined {
  if (option === false) return undefined;
  if (option !== undefined && (option === null || typeof option !== 'object'))
    throw configError('holdBelowFloor must be false or { maxWrites?, maxHoldMs? }');
  const maxWrites = option?.maxWrites ?? 8;
  const maxHoldMs = option?.maxHoldMs ?? 30_000;
  if (!(Number.isInteger(maxWrites) && maxWrites >= 1)) throw configError('holdBelowFloor.maxWrites must be an integer >= 1');
  if (!(typeof maxHoldMs === 'number' && maxHoldMs >= 0 && Number.isFinite(maxHoldMs)))
    throw configError('holdBelowFloor.maxHoldMs must be a finite number >= 0');
  return { maxWrites, maxHoldMs };
}

/** Below the floor with a durable queue: writes are held and pushed together (see holdBelowFloor). */
export function isHolding(store: GitHubStoreState): boolean {
  return store.hold !== undefined && store.queueEnabled && store.queue.durable && store.http.budget().low;
}

/**
 * Holds a write below the floor: durable locally now, pushed with the writes held with it —
 * at once when the queue reached `maxWrites`, else by the time the oldest waited `maxHoldMs`.
 */
export async function holdWrite<T>(
  store: GitHubStoreState,
  kind: QueuedWrite['kind'],
  operations: readonly BatchOperation[],
  queued: QueuedAnswer<T>,
): Promise<T> {
  const { queue, clock } = store;
  const hold = store.hold!;
  const oldest = queue.peek()?.enqueuedAtMs ?? clock.now();
  const before = queue.overlay();
  const w = await enqueue(store, kind, operations, false, Math.max(clock.now(), oldest + hold.maxHoldMs), true);
  // The size bound: push the queue as one commit now. Still held if that fails (pushed later).
  const pushed = queue.size >= hold.maxWrites && (await drain(store, false).catch(() => false));
  return queued(w, (key) => existedBefore(store, key, before), !pushed);
}
