import { toRfc3339 } from '../contract/clock.js';
import { isCheckpointError } from '../contract/errors.js';
import { parseLock, type AcquireResult, type WriteFence } from './run-lock.js';
import { confirm, resync, rewrite, take } from './run-lock-lease.js';
import { liveOwners, lockDocument, locked, notHeld, serial, staleness, stopTimer, type RunLockState } from './run-lock-state.js';
import { promiseOf } from '../storage/promise-of.js';

/** Takes the lock: create-only, or over a stale holder (lease ended, process dead) or any holder with `takeover: 'force'`. */
export function acquireLock(state: RunLockState): Promise<AcquireResult> {
  return serial(state, async () => {
    const { storage, key, owner, clock, takeover } = state.options;
    state.released = false;
    state.lostError = undefined;
    state.acquiredAt = toRfc3339(clock.now());
    state.claimedThrough = 0;
    for (let round = 0; round < 3; round++) {
      try {
        return await take(state, async () => (await storage.put(key, lockDocument(state), { ifAbsent: true })).version, false, 0, true);
      } catch (err) {
        if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
      }
      const current = await storage.get(key);
      if (!current) continue; // released meanwhile: try to create again
      const holder = parseLock(current.bytes);
      // This writer's own: an earlier try's create or takeover landed, its answer lost (which of the two is not known).
      if (holder?.owner === owner) return await take(state, async () => current.version, false, 0);
      const stale = staleness(state, holder);
      if (stale === 'valid' && takeover !== 'force') {
        throw locked(
          state,
          holder,
          'is locked by another writer',
          "; it is taken over when that lease ends without renewal, or at once with createWriter({ takeover: 'force' })",
        );
      }
      // A holder whose process is gone wrote nothing after its claims; any other may still wake up and try.
      const claimed = holder?.claimed_through;
      const inherited = stale === 'dead' || typeof claimed !== 'number' || !Number.isSafeInteger(claimed) || claimed < 0 ? 0 : claimed;
      try {
        return await take(
          state,
          async () => (await storage.put(key, lockDocument(state), { ifVersion: current.version })).version,
          true,
          inherited,
        );
      } catch (err) {
        if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
        const now = await storage.get(key);
        throw locked(state, now ? parseLock(now.bytes) : undefined, 'was taken over by another writer first');
      }
    }
    throw locked(state, undefined, 'has a lock that keeps changing');
  });
}

/**
 * Runs one group write under the lease: renewals wait for it, and it can only land while
 * the lock holds this writer's version. `through` is the highest sequence the write uses.
 * The usual write (fenced by a batch check, the lease fresh, nothing queued on the lock) goes
 * the direct way: no queued step, one promise; anything else queues on the lock's chain.
 */
export function fencedWrite<T>(state: RunLockState, through: number, write: (fence: WriteFence) => Promise<T>): Promise<T> {
  const { clock, leaseMs } = state.options;
  const direct =
    state.queued === 0 &&
    state.directWrite === undefined &&
    state.useCheck &&
    !state.uncertain &&
    state.version !== undefined &&
    clock.now() < state.leaseUntil - leaseMs / 2;
  return direct ? directWrite(state, state.version!, through, write) : serial(state, () => queuedWrite(state, through, write));
}

/** The fence of `version`: a batch check of the lock's version (made once per version: every write of the lease shares it). */
function checkFence(state: RunLockState, version: string): WriteFence {
  if (state.fence?.version !== version) {
    const check = Object.freeze({ type: 'check' as const, key: state.options.key, ifVersion: version });
    state.fence = { version, fence: Object.freeze({ check, confirm: () => confirm(state) }) };
  }
  return state.fence.fence;
}

/**
 * A write fenced by the batch check of `version`, not queued: a renewal or release queued
 * meanwhile waits until it is settled (`state.directWrite`), its failure's handling included.
 */
function directWrite<T>(state: RunLockState, version: string, through: number, write: (fence: WriteFence) => Promise<T>): Promise<T> {
  const settled = promiseOf(() => write(checkFence(state, version))).then(
    (result) => {
      state.directWrite = undefined;
      return result;
    },
    (err: unknown) => afterFailedCheck(state, through, write, err),
  );
  state.directWrite = settled;
  return settled;
}

/**
 * A write fenced by a batch check failed: a store refusing `check` is fenced by claims from
 * now on (the write is made again, still before anything queued), else a lost lease explains
 * the failure better.
 */
async function afterFailedCheck<T>(
  state: RunLockState,
  through: number,
  write: (fence: WriteFence) => Promise<T>,
  err: unknown,
): Promise<T> {
  try {
    if (!isCheckpointError(err, 'checkpoint_unsupported')) {
      await confirm(state);
      throw err;
    }
    state.useCheck = false; // refused before anything was applied
    return await queuedWrite(state, through, write);
  } finally {
    state.directWrite = undefined;
  }
}

/** A fenced write queued on the lock's chain: after an uncertain rewrite, near the lease's end, or fenced by claims. */
async function queuedWrite<T>(state: RunLockState, through: number, write: (fence: WriteFence) => Promise<T>): Promise<T> {
  const { clock, leaseMs } = state.options;
  for (;;) {
    const withCheck = state.useCheck;
    if (state.uncertain) await resync(state);
    if (withCheck) {
      if (clock.now() >= state.leaseUntil - leaseMs / 2) await rewrite(state); // the timer is late (event loop stalled): renew now
    } else {
      // Claim the numbers first: a writer taking over after this point numbers after them.
      state.claimedThrough = Math.max(state.claimedThrough, through);
      await rewrite(state);
    }
    if (state.version === undefined) throw notHeld(state);
    const fence: WriteFence = withCheck ? checkFence(state, state.version) : { confirm: () => confirm(state) };
    let result: T;
    try {
      result = await write(fence);
    } catch (err) {
      if (withCheck && isCheckpointError(err, 'checkpoint_unsupported')) {
        state.useCheck = false; // refused before anything was applied: fence by claims from now on
        continue;
      }
      await confirm(state); // a lost lease explains the failure better than the storage error
      throw err;
    }
    if (!withCheck) await confirm(state); // never acknowledge a write made after the lease was lost
    return result;
  }
}

/** Stops renewing and deletes the lock if this writer still holds it. */
export function releaseLock(state: RunLockState): Promise<void> {
  state.released = true;
  stopTimer(state);
  return serial(state, async () => {
    liveOwners.delete(state.options.owner);
    if (state.version === undefined) return;
    const v = state.version;
    state.version = undefined;
    try {
      await state.options.storage.delete(state.options.key, { ifVersion: v });
    } catch (err) {
      // Someone took over (conflict) — then it is theirs to keep.
      if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
    }
  });
}
