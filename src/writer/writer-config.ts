import { declareAndAssertProfileStore } from '../contract/shared-files.js';
import { systemClock, type Clock } from '../contract/clock.js';
import { CheckpointError } from '../contract/errors.js';
import type { Profile } from '../contract/profile.js';
import type { ProfileLayout } from '../contract/layout.js';
import type { StorageAdapter } from '../contract/storage.js';
import { perRunPolicyOf, type PerRunPolicy } from './auto-retention.js';
import { resolveAutoSweep, type AutoSweep } from './auto-sweep.js';
import { defaultIsProcessAlive } from './run-lock.js';
import type { SizePolicy } from './size-limit.js';
import type { HeartbeatPayload, WriterLockIdentity, WriterOptions } from './types.js';

/** The settings of one writer: its options checked and resolved against the profile and the store, fixed for its life. */
export interface WriterConfig<P> {
  readonly storage: StorageAdapter;
  readonly runId: string;
  readonly profile: Profile<P>;
  readonly clock: Clock;
  readonly failMode: 'result' | 'throw';
  /** Coalescing window in ms. */
  readonly windowMs: number;
  readonly heartbeatMs: number | false;
  /** The trigger a beat stores under; undefined when the profile has none. */
  readonly heartbeatSource: string | undefined;
  readonly nonJson: 'error' | 'warn';
  /** The caller's `heartbeatPayload` option, as given. */
  readonly heartbeatPayload: HeartbeatPayload<P> | undefined;
  /** What a beat stores: the caller's heartbeatPayload, else the profile's (fields "since the previous snapshot"), else the last state. */
  readonly beatPayload: ((last: P) => P) | undefined;
  /** The profile stores nothing on a beat when the state did not change. */
  readonly skipUnchangedBeats: boolean;
  readonly maxQueue: number;
  readonly maxAttempts: number;
  readonly retryBaseMs: number;
  readonly retryMaxMs: number;
  /** Largest stored document: the profile's or the option, capped by the store's limit. */
  readonly maxBytes: number;
  readonly onOversize: 'split' | 'reject';
  /** What encodeForStorageSync needs of the policy (it never splits): built once, not per checkpoint. */
  readonly withinLimit: SizePolicy;
  readonly lockEnabled: boolean;
  readonly leaseMs: number;
  readonly takeover: 'stale' | 'force';
  /** The `lockIdentity` option (the process's own identity is looked up only when a lock is used). */
  readonly lockIdentity: WriterLockIdentity | undefined;
  readonly isProcessAlive: (pid: number) => boolean;
  /** Write a queued group as one batch file when the store's rate budget is low. */
  readonly batchWhenLow: boolean;
  readonly groupCommit: boolean;
  /** See WriterOptions.openFromLatest. */
  readonly openFromLatest: boolean;
  /** The store has an atomic `batch()`. */
  readonly useAtomicBatch: boolean;
  /** The per-run retention bound, unless the run is exempt or the option is off. */
  readonly autoRetention: PerRunPolicy | undefined;
  readonly layout: ProfileLayout;
  readonly latestKey: string;
  /** The profile keeps history entries (not only `latest`). */
  readonly hasHistory: boolean;
  /** History entries are never rewritten: coalesced triggers go to latest, then into the next entry (coalescing.ts). */
  readonly immutableHistory: boolean;
  /** Other tools read the profile's files in place: a checkpoint is acknowledged once the store has them in its files (`appliedOf`). */
  readonly readInPlace: boolean;
  readonly indexKey: string | undefined;
  readonly activeStatus: string;
  /** Large documents are stored as content chunks shared store-wide (the profile's `dedup`, or the writer's option). */
  readonly dedup: boolean;
  /** The automatic chunk sweep after automatic retention's deletes; undefined without automatic retention or content chunks, or when off. */
  readonly autoSweep: AutoSweep | undefined;
}

export function configError(why: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `createWriter: ${why}`);
}

const positive = (name: string, value: number | undefined): void => {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw configError(`${name} must be a positive number`);
};

/** A boolean option as given, else its default; anything else is `checkpoint_config_invalid`. */
function booleanOption(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw configError(`${name} must be a boolean`);
  return value;
}

/** The writer's automatic retention, content chunks and automatic chunk sweep (only with both). */
function retentionOf<P>(
  options: WriterOptions<P>,
  profile: Profile<P>,
  clock: Clock,
): Pick<WriterConfig<P>, 'autoRetention' | 'dedup' | 'autoSweep'> {
  const dedup = booleanOption(options.dedup, 'dedup', profile.dedup ?? false);
  const retentionOn = booleanOption(options.autoRetention, 'autoRetention', true);
  const perRunPolicy = !retentionOn || typeof profile.layout.historyKey !== 'function' ? undefined : perRunPolicyOf(profile.retention);
  const autoRetention = perRunPolicy && !perRunPolicy.preserveRunIds.has(options.runId) ? perRunPolicy : undefined;
  const autoSweep = resolveAutoSweep(options.sweepChunks, 'createWriter', clock);
  return { autoRetention, dedup, autoSweep: autoRetention && dedup ? autoSweep : undefined };
}

/** Checks `options` (throwing `checkpoint_config_invalid`) and resolves every default from the profile and the store. */
export function resolveWriterConfig<P>(options: WriterOptions<P>, profile: Profile<P>): WriterConfig<P> {
  const { storage, runId } = options;
  if (!storage || typeof storage.put !== 'function') throw configError('storage must be a StorageAdapter');
  if (!profile || typeof profile.trigger !== 'function') throw configError('profile must come from defineProfile');
  profile.assertRunId(runId);
  const failMode = options.failMode ?? 'result';
  if (failMode !== 'result' && failMode !== 'throw') throw configError("failMode must be 'result' or 'throw'");
  const windowMs = options.coalesceWindowMs ?? profile.coalesceWindowMs;
  if (!(windowMs >= 0)) throw configError('coalesceWindowMs must be >= 0');
  const heartbeatMs = options.heartbeatIntervalMs ?? (profile.heartbeat ? profile.heartbeat.intervalMs : false);
  if (heartbeatMs !== false) positive('heartbeatIntervalMs', heartbeatMs);
  const heartbeatSource = profile.heartbeat ? profile.heartbeat.source : Object.hasOwn(profile.triggers, 'timer') ? 'timer' : undefined;
  const nonJson = options.nonJson ?? 'error';
  if (nonJson !== 'error' && nonJson !== 'warn') throw configError("nonJson must be 'error' or 'warn'");
  if (heartbeatMs !== false && heartbeatSource === undefined) throw configError(`profile "${profile.name}" has no heartbeat trigger`);
  const maxQueue = options.maxQueue ?? 256;
  positive('maxQueue', maxQueue);
  const maxAttempts = options.maxAttempts ?? 3;
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) throw configError('maxAttempts must be an integer >= 1');
  const retryBaseMs = options.retryBaseMs ?? 200;
  const retryMaxMs = options.retryMaxMs ?? 5000;
  if (!(retryBaseMs >= 0) || !(retryMaxMs >= 0)) throw configError('retry delays must be >= 0');
  positive('maxSnapshotBytes', options.maxSnapshotBytes ?? profile.maxSnapshotBytes);
  const leaseMs = options.lockLeaseMs ?? 30_000;
  positive('lockLeaseMs', leaseMs);
  const takeover = options.takeover ?? 'stale';
  if (takeover !== 'stale' && takeover !== 'force') throw configError("takeover must be 'stale' or 'force'");
  const clock = options.clock ?? systemClock;
  const { autoRetention, dedup, autoSweep } = retentionOf(options, profile, clock);
  // Once every option is checked (a refused writer fixes nothing), and before its capabilities are read: a new fs directory gets the layout the profile's readers need.
  declareAndAssertProfileStore(storage, profile, 'createWriter');
  const maxBytes = Math.min(
    options.maxSnapshotBytes ?? profile.maxSnapshotBytes,
    storage.capabilities.maxValueBytes ?? Number.POSITIVE_INFINITY,
  );
  positive('maxSnapshotBytes', maxBytes);
  const onOversize = options.onOversize ?? profile.onOversize;
  const lockEnabled = options.lock === undefined || options.lock === 'auto' ? storage.capabilities.crossProcessConditional : options.lock;
  const layout = profile.layout;
  return {
    storage,
    runId,
    profile,
    clock,
    failMode,
    windowMs,
    heartbeatMs,
    heartbeatSource,
    nonJson,
    heartbeatPayload: options.heartbeatPayload,
    beatPayload: options.heartbeatPayload ?? (profile.heartbeat ? profile.heartbeat.payload : undefined),
    skipUnchangedBeats: profile.heartbeat !== false && profile.heartbeat?.whenUnchanged === 'skip',
    maxQueue,
    maxAttempts,
    retryBaseMs,
    retryMaxMs,
    maxBytes,
    onOversize,
    withinLimit: { maxBytes, onOversize },
    lockEnabled,
    leaseMs,
    takeover,
    lockIdentity: options.lockIdentity,
    isProcessAlive: options.isProcessAlive ?? defaultIsProcessAlive,
    batchWhenLow: options.batchWhenBudgetLow ?? true,
    groupCommit: options.groupCommit ?? true,
    openFromLatest: booleanOption(options.openFromLatest, 'openFromLatest', true),
    useAtomicBatch: storage.capabilities.atomicBatch && typeof storage.batch === 'function',
    autoRetention,
    layout,
    latestKey: layout.latestKey(runId),
    hasHistory: typeof layout.historyKey === 'function',
    immutableHistory: profile.immutableHistory && typeof layout.historyKey === 'function',
    // Files other tools read are read in place: acknowledged once the store has applied them.
    readInPlace: profile.sharedFiles !== undefined,
    indexKey: layout.indexKey?.(runId),
    activeStatus: profile.statuses.active,
    dedup,
    autoSweep,
  };
}
