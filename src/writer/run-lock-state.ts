import { formatDuration } from '../contract/human-duration.js';
import { canonicalJson } from '../codec/canonical-json.js';
import { utf8Encode } from '../codec/utf8.js';
import { toRfc3339, type TimerHandle } from '../contract/clock.js';
import { CheckpointError } from '../contract/errors.js';
import { parseLock, type RunLockDocument, type RunLockOptions, type WriteFence } from './run-lock.js';

/** Owner ids of writers alive in this process: a lock naming this pid but no live owner was left by a dead writer. */
export const liveOwners = new Set<string>();

/** Why a holder's lock may be taken over; `'dead'` means its claims can be reused. */
export type Staleness = 'valid' | 'expired' | 'dead' | 'unreadable';

/** Everything one run lock holds between calls (see createRunLock in run-lock.ts). */
export interface RunLockState {
  readonly options: RunLockOptions;
  /** The lock's stored version while this writer holds it; undefined when it does not. */
  version: string | undefined;
  /** Epoch ms the lease written last runs until. */
  leaseUntil: number;
  /** Highest sequence claimed in the lock document (stores fenced by claims). */
  claimedThrough: number;
  /** A rewrite failed without saying whether it landed: `version` may be stale. */
  uncertain: boolean;
  acquiredAt: string;
  /** Fence with a `check` batch operation; a store whose batch refuses `check` (an adapter still without it) is fenced by claims instead. */
  useCheck: boolean;
  /** The renewal timer. */
  timer: TimerHandle | undefined;
  released: boolean;
  /** Why the lease was lost, repeated to every later fenced write (until the lock is acquired again). */
  lostError: CheckpointError | undefined;
  /**
   * Renewals, fenced writes and release run one at a time, so a renewal never changes the
   * version a write in flight is fenced with.
   */
  chain: Promise<unknown>;
  /** Operations queued on `chain` and not finished: a write takes the direct way only when none is. */
  queued: number;
  /** A write that took the direct way (see `fencedWrite`) and has not settled: what the next queued operation waits for first. */
  directWrite: Promise<unknown> | undefined;
  /** The fence of the version held, made once per version (a write checks the lock with it). */
  fence: { readonly version: string; readonly fence: WriteFence } | undefined;
}

export function createRunLockState(options: RunLockOptions): RunLockState {
  return {
    options,
    version: undefined,
    leaseUntil: 0,
    claimedThrough: 0,
    uncertain: false,
    acquiredAt: toRfc3339(options.clock.now()),
    useCheck: options.atomic,
    timer: undefined,
    released: false,
    lostError: undefined,
    chain: Promise.resolve(),
    queued: 0,
    directWrite: undefined,
    fence: undefined,
  };
}

const ignore = (): void => undefined;

/** Runs `fn` after every renewal, fenced write or release before it (a write in flight on the direct way too). */
export function serial<T>(state: RunLockState, fn: () => Promise<T>): Promise<T> {
  const writing = state.directWrite;
  state.queued++;
  const run = (writing ? state.chain.then(() => writing.then(ignore, ignore)) : state.chain).then(fn);
  const done = (): void => {
    state.queued--;
  };
  state.chain = run.then(done, done);
  return run;
}

/** The lock document with a new lease from now (and the current claims). */
export function lockDocument(state: RunLockState): Uint8Array {
  const { options } = state;
  state.leaseUntil = options.clock.now() + options.leaseMs;
  const doc: RunLockDocument = {
    savepoint_lock: 1,
    run_id: options.runId,
    owner: options.owner,
    pid: options.identity.pid,
    hostname: options.identity.hostname,
    acquired_at: state.acquiredAt,
    lease_until: state.leaseUntil,
    ...(state.claimedThrough > 0 ? { claimed_through: state.claimedThrough } : {}),
  };
  return utf8Encode(canonicalJson(doc as never));
}

const sameHost = (state: RunLockState, holder: RunLockDocument): boolean =>
  state.options.identity.hostname !== 'unknown' && holder.hostname === state.options.identity.hostname;

/** What is known about a holder, for messages: who, where, and when its lease ends. Never a guess. */
function describe(state: RunLockState, holder: RunLockDocument): string {
  const { clock, identity, isProcessAlive } = state.options;
  const left = holder.lease_until - clock.now();
  const lease =
    left > 0 ? `lease ends in ${formatDuration(left)} (${toRfc3339(holder.lease_until)})` : `lease ended ${formatDuration(left)} ago`;
  const where = sameHost(state, holder)
    ? `on this host (${holder.hostname})${holder.pid !== identity.pid && isProcessAlive(holder.pid) ? ', process running' : ''}`
    : `on host ${holder.hostname}`;
  return `pid ${holder.pid} ${where}, ${lease}`;
}

/** `checkpoint_run_locked`, saying what is known about the holder. */
export function locked(state: RunLockState, holder: RunLockDocument | undefined, what: string, hint = ''): CheckpointError {
  const { runId, key, clock } = state.options;
  return new CheckpointError(
    'checkpoint_run_locked',
    `run ${runId} ${what}${holder ? `: held by ${describe(state, holder)}` : ''}${hint}`,
    {
      details: {
        runId,
        key,
        ...(holder
          ? {
              owner: holder.owner,
              hostname: holder.hostname,
              pid: holder.pid,
              leaseUntil: toRfc3339(holder.lease_until),
              leaseEndsInMs: Math.max(0, holder.lease_until - clock.now()),
            }
          : {}),
      },
    },
  );
}

export function staleness(state: RunLockState, holder: RunLockDocument | undefined): Staleness {
  if (!holder) return 'unreadable'; // nobody can prove they hold it
  const { identity, isProcessAlive, clock } = state.options;
  if (sameHost(state, holder)) {
    if (holder.pid === identity.pid ? !liveOwners.has(holder.owner) : !isProcessAlive(holder.pid)) return 'dead';
  }
  return clock.now() > holder.lease_until ? 'expired' : 'valid';
}

export function stopTimer(state: RunLockState): void {
  if (state.timer !== undefined) state.options.clock.clearTimeout(state.timer);
  state.timer = undefined;
}

/** Marks the lease lost and builds the error saying who holds the run now. */
export function lost(state: RunLockState, current: { bytes: Uint8Array } | undefined): CheckpointError {
  state.version = undefined;
  stopTimer(state);
  liveOwners.delete(state.options.owner);
  const holder = current ? parseLock(current.bytes) : undefined;
  state.lostError = locked(state, holder, 'was taken over by another writer', "; this writer's checkpoints are refused from now on");
  return state.lostError;
}

export const notHeld = (state: RunLockState): CheckpointError => state.lostError ?? locked(state, undefined, 'is not held by this writer');
