import { toRfc3339 } from '../contract/clock.js';
import type { CheckpointError } from '../contract/errors.js';
import { newUuidV4 } from '../contract/ids.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import type { TriggerRecord } from '../contract/snapshot.js';
import { createWriterEmitter, type WriterEmitter } from './events.js';
import { createHeartbeat, type Heartbeat } from './heartbeat.js';
import type { IndexState } from './ordered-write.js';
import type { RetryOptions } from './retry.js';
import { createRunLock, defaultLockIdentity, type RunLock } from './run-lock.js';
import type { HeadLocation } from './sequence-recovery.js';
import type { SnapshotHeader } from './size-limit.js';
import type { MaterialState, ValidatedTrigger } from './triggers.js';
import type { CheckpointFailure, CheckpointResult, WriterEventMap } from './types.js';
import type { WriterConfig } from './writer-config.js';

/** A checkpoint call waiting in the queue. */
export interface Job<P> {
  readonly trigger: ValidatedTrigger;
  readonly resolve: (result: CheckpointResult<P>) => void;
  /**
   * Later calls with the same material state, queued right behind this one. They can only
   * coalesce (or, past the window, repeat the state), so a burst of identical triggers takes
   * one queue slot instead of exhausting the bound.
   */
  readonly riders: Job<P>[];
}

/** The newest durable snapshot: the coalescing base, and what a coalesced trigger rewrites. */
export interface Head<P> {
  /** Everything but the payload (private: results carry their own copies). */
  readonly header: SnapshotHeader<P>;
  /** The payload's canonical JSON: what a rewrite stores again, whatever the caller did to its objects. */
  readonly payloadText: string;
  /** Its pieces, when it holds big strings by reference (a rewrite encodes them piece by piece). */
  readonly payloadPieces?: readonly string[];
  /** Its material state (the coalescing key). */
  readonly state: MaterialState;
  readonly createdAtMs: number;
  readonly location: HeadLocation;
  /** Main document bytes as stored (batch-file members are re-encoded from these). */
  readonly bytes?: Uint8Array;
  /** Immutable history: coalesced triggers `latest` holds and the head's history entry lacks (the next snapshot's entry carries them). */
  readonly latestOnly: readonly TriggerRecord[];
}

/**
 * Everything one writer knows and holds between calls: its settings, its collaborators
 * (events, lock, heartbeat) and the run as it stands. The writer's steps (open-run.ts,
 * commit-group.ts, queue.ts, close.ts) are plain functions of this object.
 */
export interface WriterState<P> {
  readonly config: WriterConfig<P>;
  readonly emitter: WriterEmitter;
  /** The run lease; undefined when the writer runs without a lock. */
  readonly lock: RunLock | undefined;
  readonly heartbeat: Heartbeat;
  /** Backoff of storage calls, reporting each retry as an event. */
  readonly retry: RetryOptions;
  /** The writer's clock as RFC 3339 (one function for every write: the index stamps its time with it). */
  readonly now: () => string;
  /** Sequences a previous lock holder claimed and may still write (see run-lock.ts): never reused. */
  inheritedClaims: number;
  /** `close()` has begun: new checkpoints are refused. */
  closing: boolean;
  /** The split warning went to the console (only when no `split` listener handles it; once per writer). */
  splitLogged: boolean;
  closed: boolean;
  /** The run was opened (lock taken, numbering recovered) at least once. */
  opened: boolean;
  /** A group failed: storage is read again before the next group, so whatever landed keeps its number. */
  needsRecovery: boolean;
  /** Newest acknowledged sequence. */
  lastSequence: number;
  /** The number the next planned snapshot gets. */
  nextSequence: number;
  head: Head<P> | undefined;
  /** The run index as last read or written. */
  readonly index: IndexState;
  /** Index entries of durable snapshots the stored index does not list yet (see indexDeferral). */
  unindexed: readonly RunIndexEntry[];
  /**
   * Set when the writer opened the run from `latest` alone, without its index (recovery-latest.ts): the run's length
   * then, standing in for the index's until the index is read. The stored index and the entries it
   * lacks are not read yet (`index` is empty, `unindexed` holds this writer's entries only); the
   * run is recovered in full before a group or a flush that rewrites the index.
   */
  indexUnread: number | undefined;
  /** The run's history entries, ascending by sequence (kept only for automatic retention). */
  history: RunIndexEntry[];
  /** Part files written by this writer, by sequence (deleted with their snapshot). */
  readonly partsBySequence: Map<number, string[]>;
  /** The last state given: what a heartbeat stores again, and its material text (to tell whether it is news). */
  lastInput: ValidatedTrigger | undefined;
  /** Checkpoint calls waiting for the next group commit. */
  readonly queue: Job<P>[];
  /** A group commit is chained on `tail` and has not taken the queue yet. */
  scheduled: boolean;
  /** The last open or group commit in flight: the next one runs after it. */
  tail: Promise<unknown>;
}

/** A new writer's state: nothing opened, nothing queued. `onBeat` runs at every heartbeat. */
export function createWriterState<P>(config: WriterConfig<P>, onBeat: (state: WriterState<P>) => void): WriterState<P> {
  const { runId, clock } = config;
  const emitter = createWriterEmitter();
  const owner = newUuidV4();
  const lock: RunLock | undefined = config.lockEnabled
    ? createRunLock({
        storage: config.storage,
        key: config.layout.lockKey(runId),
        runId,
        owner,
        identity: config.lockIdentity ?? defaultLockIdentity(),
        leaseMs: config.leaseMs,
        clock,
        isProcessAlive: config.isProcessAlive,
        takeover: config.takeover,
        atomic: config.useAtomicBatch,
        onRenewalError: (error) => emitter.emit('error', { runId, reasonCode: error.reasonCode, error, during: 'lease' }),
      })
    : undefined;
  const state: WriterState<P> = {
    config,
    emitter,
    lock,
    heartbeat: createHeartbeat(clock, config.heartbeatMs, () => onBeat(state)),
    retry: {
      clock,
      attempts: config.maxAttempts,
      baseMs: config.retryBaseMs,
      maxMs: config.retryMaxMs,
      onRetry: (attempt: number, delayMs: number, error: CheckpointError) =>
        emitter.emit('retry', { runId, attempt, delayMs, reasonCode: error.reasonCode }),
    },
    now: () => toRfc3339(clock.now()),
    inheritedClaims: 0,
    splitLogged: false,
    closing: false,
    closed: false,
    opened: false,
    needsRecovery: false,
    lastSequence: 0,
    nextSequence: 1,
    head: undefined,
    index: {},
    unindexed: [],
    indexUnread: undefined,
    history: [],
    partsBySequence: new Map(),
    lastInput: undefined,
    queue: [],
    scheduled: false,
    tail: Promise.resolve(),
  };
  return state;
}

/** Reports `error` through the `error` event and makes the failure result a caller gets. */
export function failure<P>(state: WriterState<P>, error: CheckpointError, during: WriterEventMap['error']['during']): CheckpointFailure {
  state.emitter.emit('error', { runId: state.config.runId, reasonCode: error.reasonCode, error, during });
  return { ok: false, reasonCode: error.reasonCode, error };
}

/** In failMode 'throw', throws the failure's error; else hands the failure back. */
export function deliverFailure<P>(state: WriterState<P>, f: CheckpointFailure): CheckpointFailure {
  if (state.config.failMode === 'throw') throw f.error;
  return f;
}
