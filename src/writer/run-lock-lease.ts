import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import { parseLock } from './run-lock.js';
import { liveOwners, lockDocument, lost, notHeld, serial, stopTimer, type RunLockState } from './run-lock-state.js';
import type { AcquireResult } from './run-lock.js';

const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

/** Rewrites the lock (new lease, current claims), conditional on the version this writer holds. */
export async function rewrite(state: RunLockState): Promise<void> {
  if (state.version === undefined) throw notHeld(state);
  const { storage, key, owner } = state.options;
  const bytes = lockDocument(state);
  try {
    state.version = (await storage.put(key, bytes, { ifVersion: state.version })).version;
  } catch (err) {
    const conflict = isCheckpointError(err, 'checkpoint_conflict');
    // A write whose answer was lost may have landed all the same: the next fenced write must
    // check the version the store now holds, not the one before, or it can never pass.
    const current = await storage.get(key).catch(() => undefined);
    const ours = current !== undefined && parseLock(current.bytes)?.owner === owner;
    if (ours && (conflict || sameBytes(current.bytes, bytes))) {
      // An earlier rewrite (or this one) landed although it reported failure: the lock is still ours.
      state.version = current.version;
      state.uncertain = false;
      scheduleRenewal(state);
      return;
    }
    if (!conflict) {
      // The outcome is unknown (and the store could not say): the next fenced write reads the
      // lock first instead of fencing with a version that may be gone.
      state.uncertain = true;
      throw err;
    }
    throw lost(state, current);
  }
  state.uncertain = false;
  scheduleRenewal(state);
}

/** After a rewrite with an unknown outcome: adopts the version the store holds while the lock is still ours. */
export async function resync(state: RunLockState): Promise<void> {
  const current = await state.options.storage.get(state.options.key);
  if (!current || parseLock(current.bytes)?.owner !== state.options.owner) throw lost(state, current);
  state.version = current.version;
  state.uncertain = false;
}

/** Throws `checkpoint_run_locked` unless the lock still holds this writer's version. */
export async function confirm(state: RunLockState): Promise<void> {
  if (state.version === undefined) throw notHeld(state);
  const current = await state.options.storage.get(state.options.key);
  if (current?.version !== state.version) throw lost(state, current);
}

/** Arms the renewal timer: a third of the lease, never keeping the process alive. */
export function scheduleRenewal(state: RunLockState): void {
  stopTimer(state);
  if (state.version === undefined || state.released) return;
  const { clock, leaseMs, onRenewalError } = state.options;
  const renewEveryMs = Math.max(1, Math.floor(leaseMs / 3));
  state.timer = clock.setTimeout(
    () => {
      state.timer = undefined;
      void serial(state, async () => {
        if (state.version === undefined || state.released) return;
        try {
          await rewrite(state);
        } catch (raw) {
          const err = isCheckpointError(raw)
            ? raw
            : new CheckpointError('checkpoint_storage_unavailable', 'lease renewal failed', { cause: raw });
          onRenewalError?.(err);
          scheduleRenewal(state); // storage trouble: try again next period (a lost lease stops here: version is gone)
        }
      });
    },
    renewEveryMs,
    { background: true },
  );
}

/** Holds the lock at the version `put` stored, and starts renewing it. */
export async function take(
  state: RunLockState,
  put: () => Promise<string>,
  tookOver: boolean,
  inheritedClaims: number,
  created = false,
): Promise<AcquireResult> {
  state.version = await put();
  liveOwners.add(state.options.owner);
  scheduleRenewal(state);
  return { tookOver, created, inheritedClaims };
}
