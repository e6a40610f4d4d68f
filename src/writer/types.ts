import type { JsonValue } from '../contract/json.js';
import type { Clock } from '../contract/clock.js';
import type { CheckpointError } from '../contract/errors.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { AutoSweepOptions } from './auto-sweep.js';

/**
 * What the agent passes to {@link CheckpointWriter.checkpoint}. `T` and `S` are the profile's
 * trigger and status names, so a misspelt one is a compile error.
 */
export interface CheckpointInput<P = JsonValue, T extends string = string, S extends string = string> {
  /** The trigger that fired; must be one of the profile's triggers (`step_boundary`, `phase_complete`, …). */
  readonly source: T;
  /** Execution status; must be one of the profile's statuses (`in_progress`, `completed`, …). */
  readonly status: S;
  /** The state to save; validated with the profile's payload schema. */
  readonly payload: P;
}

/** How a successful checkpoint was handled. */
export type CheckpointOutcome = 'written' | 'coalesced' | 'queued';

/** A checkpoint that is durable (or, for `queued`, accepted into the adapter's durable-later queue). */
export interface CheckpointSuccess<P = unknown> {
  readonly ok: true;
  /**
   * - `written`: a new snapshot is durable in storage.
   * - `coalesced`: no material change within the coalescing window; the trigger was recorded in the
   *   `source_details` of the existing snapshot `snapshotId`, and that record is durable.
   * - `queued`: the adapter accepted the write into its local durable-later queue
   *   (`BufferedPutResult.pending`, phased-workflow-github.md `emergency_fallback`); `storage.flush()` pushes it.
   */
  readonly outcome: CheckpointOutcome;
  readonly snapshotId: string;
  readonly sequence: number;
  /** Storage key holding the snapshot: its history entry, its batch file, or `latest` for profiles without history. */
  readonly key: string;
  /** The snapshot as stored (for `coalesced`: with this trigger in `sourceDetails`). */
  readonly snapshot: Snapshot<P>;
  /**
   * Only for profiles without history (one active document, e.g. `NN-CHECKPOINT.json`): this
   * snapshot was group-committed behind a newer one, so the stored document is that newer
   * snapshot (with this sequence number never stored on its own).
   */
  readonly supersededBy?: number;
}

/** A checkpoint that failed; the agent carries on (fail-forward). */
export interface CheckpointFailure {
  readonly ok: false;
  readonly reasonCode: ReasonCode;
  readonly error: CheckpointError;
}

/** Result of {@link CheckpointWriter.checkpoint}. */
export type CheckpointResult<P = unknown> = CheckpointSuccess<P> | CheckpointFailure;

/** Identity written into a run lock, used to tell a live holder from a dead one. */
export interface WriterLockIdentity {
  readonly pid: number;
  readonly hostname: string;
}

/**
 * A writer's `heartbeatPayload`: the state a beat stores, from the last payload given. When it
 * hands the beat something it must get back if the beat stores no new snapshot (outcomes it
 * drained from a recorder), it also carries `settled`, which the writer calls once with the
 * beat's result — `ok: false` (the write failed, or the beat was refused) or `outcome:
 * 'coalesced'` mean the beat's own state is in no new snapshot. A `settled` that throws is
 * reported through the writer's `error` event (`during: 'heartbeat'`, `checkpoint_config_invalid`).
 */
export interface HeartbeatPayload<P> {
  (last: P): P;
  readonly settled?: (result: CheckpointResult<P>, payload: P) => void;
}

/** Options of {@link createWriter}. Every tunable defaults from the profile or the specs. */
export interface WriterOptions<P = JsonValue, T extends string = string, S extends string = string> {
  /** Where snapshots go. The writer never closes it: the caller owns it. */
  readonly storage: StorageAdapter;
  /**
   * The checkpoint system spoken (triggers, statuses, schema, layout).
   * @default defaultProfile (any JSON state, snapshot-lifecycle.md's triggers and statuses)
   */
  readonly profile?: Profile<P, T, S>;
  /** The run (session, workflow execution, plan) written to; checked with `profile.assertRunId`. */
  readonly runId: string;
  /**
   * Time source for timestamps, the coalescing window, the heartbeat and retry backoff.
   * @default systemClock
   */
  readonly clock?: Clock;
  /**
   * `'result'`: storage and validation failures resolve `{ ok: false, reasonCode, error }` and fire
   * an `error` event; the agent is never halted. `'throw'`: `checkpoint()` rejects with the
   * `CheckpointError` instead (and `flush()`/`close()` reject too).
   * @default 'result'
   */
  readonly failMode?: 'result' | 'throw';
  /**
   * Two triggers this close (inclusive) with the same material state make one snapshot.
   * @default profile.coalesceWindowMs (3000, snapshot-lifecycle.md)
   */
  readonly coalesceWindowMs?: number;
  /**
   * Heartbeat period while the status is the profile's active status, or `false` for none.
   * @default profile.heartbeat.intervalMs (120000 for profiles with a `timer` trigger), else false
   */
  readonly heartbeatIntervalMs?: number | false;
  /**
   * State a heartbeat snapshot carries, from the last payload given (e.g. to refresh volatile
   * fields). Must be valid for the profile's payload schema. The function may carry a
   * `settled` hook, called with the beat's result (see {@link HeartbeatPayload}).
   * @default the profile's `heartbeat.payload`, else the last payload unchanged
   */
  readonly heartbeatPayload?: HeartbeatPayload<P>;
  /**
   * A payload value JSON can keep only converted — a `Date` (stored as its ISO string) or
   * another object with `toJSON` — is refused with `checkpoint_schema_invalid`
   * (`details.paths`, `details.reason: 'non_json_value'`) under `'error'`, or stored converted
   * with a `converted` event under `'warn'`. Values JSON cannot keep at all (`Map`, `Set`,
   * `NaN`, `BigInt`, functions, class instances, `undefined` in an array) are always refused;
   * an object member that is `undefined` is left out (it reads back the same).
   * @default 'error': a resume must give back exactly what was saved
   */
  readonly nonJson?: 'error' | 'warn';
  /**
   * Most checkpoints waiting behind the group in flight; past it `checkpoint()` answers
   * `checkpoint_backpressure` at once. A call whose material state equals the one queued
   * just before it rides along with it (it can only coalesce) and does not take a slot,
   * up to `maxQueue` riders per slot.
   * @default 256
   */
  readonly maxQueue?: number;
  /**
   * Commit checkpoints that queued up while a write was in flight together: every history
   * entry written, `latest` and the index once per group. `false` writes them one by one
   * (each with its own latest and index write) — only useful for comparison.
   * @default true
   */
  readonly groupCommit?: boolean;
  /**
   * Open a long run from its `latest` alone where the store and the profile make that safe (an
   * atomic batch and a linked read; an immutable history no other tool writes; no automatic
   * retention) and the run's lock was free (a writer that takes it over from one that crashed
   * reads every file), reading its index and listing only before the index's next rewrite. `false`
   * always recovers from every file of the run, for runs into which another program stores
   * history entries without `latest` (see docs/writing.md, "Numbering and recovery").
   * @default true
   */
  readonly openFromLatest?: boolean;
  /**
   * Attempts per group write before the checkpoints fail (phased-workflow-github.md: "max 3 attempts").
   * @default 3
   */
  readonly maxAttempts?: number;
  /**
   * First retry delay; doubles on each attempt.
   * @default 200
   */
  readonly retryBaseMs?: number;
  /**
   * Cap of one retry delay (also for rate limits: the writer does not sleep to the reset; the adapter may).
   * @default 5000
   */
  readonly retryMaxMs?: number;
  /**
   * Largest stored document in bytes (capped further by `storage.capabilities.maxValueBytes`).
   * @default profile.maxSnapshotBytes (10 MB, phased-workflow-github.md)
   */
  readonly maxSnapshotBytes?: number;
  /**
   * Over the size limit: split large values into part files, or fail with `checkpoint_too_large`.
   * @default profile.onOversize ('split')
   */
  readonly onOversize?: 'split' | 'reject';
  /**
   * Take the run lock (`layout.lockKey(runId)`) so a second writer on the same run gets
   * `checkpoint_run_locked`. `'auto'` takes it when the adapter's conditional writes hold
   * across processes (`capabilities.crossProcessConditional`: fs, github), not for in-process memory.
   * @default 'auto'
   */
  readonly lock?: boolean | 'auto';
  /**
   * How long a lock stays valid without renewal. The live writer renews it on a background
   * timer every third of it (a timer that never keeps the process alive), so a run whose
   * writer died (a killed pod) can be taken over by another host within one lease.
   * @default 30000
   */
  readonly lockLeaseMs?: number;
  /**
   * `'stale'`: take the run over only from a holder whose lease ended without renewal, or
   * whose process on this host is gone. `'force'`: take it over from any holder at once (a
   * restarted pod that knows its predecessor is gone); the old holder, if it is still
   * running, is fenced out: its writes fail with `checkpoint_run_locked` and are never acknowledged.
   * @default 'stale'
   */
  readonly takeover?: 'stale' | 'force';
  /**
   * Identity stored in the lock.
   * @default `{ pid: process.pid, hostname: os.hostname() }` where available (Node), else `{ pid: 0, hostname: 'unknown' }`
   */
  readonly lockIdentity?: WriterLockIdentity;
  /**
   * Whether a process on this host is alive, used to take over a lock left by a killed process at once.
   * @default `process.kill(pid, 0)` where available; otherwise every process counts as alive (lease expiry only)
   */
  readonly isProcessAlive?: (pid: number) => boolean;
  /**
   * When the adapter's `rateBudget().low` is true and several checkpoints are queued, write them as one
   * `batch_{first}_{last}.json` file (phased-workflow-github.md `batching_strategy`).
   * @default true
   */
  readonly batchWhenBudgetLow?: boolean;
  /**
   * Keep the run within its profile's per-run retention policy as it is written: with the
   * default and snapshotLifecycle profiles, the newest 50 snapshots and the newest `failed`
   * and `completed` one; older history entries are dropped from the index and deleted in
   * batches (O(1) amortized per checkpoint). Runs in `preserved_runs.json` are never pruned.
   * Applies only when the profile's policy is made of `keep-last`, `keep-latest-status` and
   * `preserve-runs` rules; age limits, compression and cross-run tiers stay with
   * `runRetention` / `cleanupAfterRunCompletion`. `false` keeps every snapshot until those run.
   * @default true
   */
  readonly autoRetention?: boolean;
  /**
   * Store documents of 16 KiB and more as content chunks shared by every checkpoint, run and
   * thread of the store holding the same bytes (docs/storage.md, "Content chunks"): a long run's
   * history then costs about what its changes cost. Readers need savepoint's read path to
   * reassemble them, so spec profiles whose files other tools read leave it off.
   * @default the profile's `dedup` (on for `defaultProfile` and `jsonProfile`, off for the spec profiles)
   */
  readonly dedup?: boolean;
  /**
   * Free the content chunks that only the snapshots automatic retention deleted referenced: a
   * chunk sweep (`sweepChunks`) of the whole store, in the background, once enough snapshots were
   * deleted (see {@link AutoSweepOptions}); never failing a checkpoint (a failed sweep is an `error`
   * event `during: 'retention'`, and the next sweep goes on). Each sweep is reported by a `swept`
   * event. Only with automatic retention and content chunks on. `false` leaves chunks to
   * `runRetention` and `savepoint prune`.
   * @default true
   */
  readonly sweepChunks?: boolean | AutoSweepOptions;
}

/** Payloads of the writer's events. None carries payload contents. */
export interface WriterEventMap {
  /** A new snapshot is durable (or queued by the adapter). */
  written: {
    readonly runId: string;
    readonly snapshotId: string;
    readonly sequence: number;
    readonly source: string;
    readonly status: string;
    readonly key: string;
    readonly bytes: number;
    readonly outcome: 'written' | 'queued';
    /** Snapshots committed together in this group. */
    readonly groupSize: number;
    /** `sequential` puts, one atomic `batch`, or one phased-workflow `batch-file`. */
    readonly mode: 'sequential' | 'batch' | 'batch-file';
  };
  /** A trigger was folded into an existing snapshot and recorded in its `source_details`. */
  coalesced: {
    readonly runId: string;
    readonly snapshotId: string;
    readonly sequence: number;
    readonly source: string;
    readonly status: string;
    /** Triggers recorded in the snapshot's `source_details` so far. */
    readonly recorded: number;
  };
  /** A checkpoint, heartbeat, lock or flush failed. */
  error: {
    readonly runId: string;
    readonly reasonCode: ReasonCode;
    readonly error: CheckpointError;
    /** `'lease'`: a background renewal of the run lock failed, or found the run taken over; `'retention'`: automatic per-run retention failed. */
    readonly during: 'validate' | 'queue' | 'write' | 'open' | 'heartbeat' | 'flush' | 'close' | 'lease' | 'retention';
  };
  /**
   * Automatic per-run retention deleted old snapshots of the run (see `WriterOptions.autoRetention`).
   * `keys` lists the files deleted (history entries and their part files).
   */
  pruned: { readonly runId: string; readonly sequences: readonly number[]; readonly keys: readonly string[] };
  /**
   * An automatic chunk sweep of the store ended (see `WriterOptions.sweepChunks`): how many chunks
   * documents reference, and how many it hid, put back and deleted; `stopped` when it changed nothing
   * because a chunk-tree node could not be read.
   */
  swept: {
    readonly runId: string;
    readonly referenced: number;
    readonly hidden: number;
    readonly restored: number;
    readonly deleted: number;
    readonly stopped?: string;
  };
  /** A group write failed and will be attempted again after `delayMs`. */
  retry: { readonly runId: string; readonly attempt: number; readonly delayMs: number; readonly reasonCode: ReasonCode };
  /**
   * A warning: snapshot `sequence` was larger than the size limit (`bytes` over `limit`) and
   * was stored split into part files (`parts`, their keys) — phased-workflow-github.md's "log
   * warning about large checkpoint". Nothing is lost; reads put it back together.
   */
  split: {
    readonly runId: string;
    readonly sequence: number;
    readonly bytes: number;
    readonly limit: number;
    readonly parts: readonly string[];
  };
  /** The heartbeat timer fired. */
  heartbeat: { readonly runId: string; readonly at: number };
  /** With `nonJson: 'warn'`: a payload value was stored converted (a `Date` as its ISO string); `path` is where, never the value. */
  converted: { readonly runId: string; readonly path: string };
  /** The writer opened the run: took its lock (if any) and recovered its numbering. */
  opened: { readonly runId: string; readonly lastSequence: number; readonly locked: boolean; readonly tookOver: boolean };
  /** The writer closed. */
  closed: { readonly runId: string };
}

/** Name of a writer event. */
export type WriterEventName = keyof WriterEventMap;

/** Turns an agent's triggers into durable snapshots of one run. Created by {@link createWriter}. */
export interface CheckpointWriter<P = JsonValue, T extends string = string, S extends string = string> {
  readonly runId: string;
  readonly profile: Profile<P, T, S>;
  /** Sequence of the newest durable snapshot (0 before any, or before the run is opened). */
  readonly lastSequence: number;
  /** True after `close()`. */
  readonly closed: boolean;
  /**
   * Takes the run lock and recovers the numbering now (the first `checkpoint()` does it otherwise).
   * Resolves `{ ok: false }` (or rejects with `failMode: 'throw'`) with `checkpoint_run_locked` when another writer holds the run.
   */
  open(): Promise<{ ok: true; lastSequence: number } | CheckpointFailure>;
  /** Saves a checkpoint; resolves once it is durable. Calls are serialized in call order. */
  checkpoint(input: CheckpointInput<P, T, S>): Promise<CheckpointResult<P>>;
  /** Resolves when every checkpoint accepted so far is settled and the adapter's local queue (if any) is flushed. */
  flush(): Promise<void>;
  /** Flushes, stops the heartbeat, releases the run lock. Later checkpoints fail with `checkpoint_closed`. Idempotent. */
  close(): Promise<void>;
  /** Subscribes to an event; returns the unsubscribe function. Listener errors are swallowed. */
  on<E extends WriterEventName>(event: E, listener: (payload: WriterEventMap[E]) => void): () => void;
}
