import { toRfc3339, type Clock } from '../contract/clock.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { ApplyRetentionOptions, RetentionOperationOutcome, RetentionReport } from './apply.js';
import { snapshotRef } from './apply-operations.js';
import type { RetentionPlan } from './plan.js';
import type { RetentionSummarizer } from '../contract/retention-policy.js';

/** What an apply did to one run, for the retention log. */
export interface RunStats {
  deleted: number;
  compressed: number;
  summarized: boolean;
  runDeleted: boolean;
}

/** One apply in progress: what it was given, and what it has done so far. */
export interface ApplyState<P> {
  readonly options: ApplyRetentionOptions<P>;
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  readonly plan: RetentionPlan;
  readonly clock: Clock;
  readonly summarizer: RetentionSummarizer;
  readonly startedAt: string;
  readonly logKey: string | undefined;
  /** One outcome per operation reached, in order. */
  readonly outcomes: RetentionOperationOutcome[];
  readonly totals: {
    done: number;
    skipped: number;
    filesDeleted: number;
    compressed: number;
    summariesWritten: number;
    indexesUpdated: number;
    bytesFreed: number;
  };
  /** Keys and snapshots (`snapshotRef`) whose deletion was skipped, so the index update leaves their entries alone. */
  readonly blocked: Set<string>;
  readonly compressedSnapshots: Set<string>;
  readonly plannedCompressions: ReadonlySet<string>;
  /** Runs whose remaining operations are skipped, and why. */
  readonly skippedRuns: Map<string, { reasonCode: ReasonCode; message: string }>;
  readonly perRun: Map<string, RunStats>;
}

export function applyState<P>(
  options: ApplyRetentionOptions<P>,
  clock: Clock,
  startedAt: string,
  summarizer: RetentionSummarizer,
): ApplyState<P> {
  const { plan } = options;
  return {
    options,
    storage: options.storage,
    profile: options.profile,
    plan,
    clock,
    summarizer,
    startedAt,
    logKey: options.profile.layout.retentionLogKey,
    outcomes: [],
    totals: { done: 0, skipped: 0, filesDeleted: 0, compressed: 0, summariesWritten: 0, indexesUpdated: 0, bytesFreed: 0 },
    blocked: new Set(),
    compressedSnapshots: new Set(),
    plannedCompressions: new Set(plan.operations.flatMap((op) => (op.type === 'compress' ? [snapshotRef(op.runId, op.snapshotId)] : []))),
    skippedRuns: new Map(),
    perRun: new Map(),
  };
}

/** The report of the apply so far, with `status` and what happened to the log. */
export function finishReport<P>(state: ApplyState<P>, status: RetentionReport['status'], log: RetentionReport['log']): RetentionReport {
  const { plan } = state;
  return {
    dryRun: state.options.dryRun ?? false,
    profile: plan.profile,
    policy: plan.policy,
    startedAt: state.startedAt,
    finishedAt: toRfc3339(state.clock.now()),
    status,
    planned: plan.totals,
    outcomes: state.outcomes,
    totals: { ...state.totals },
    log,
  };
}

/** A compression the plan has for this snapshot that has not been done (yet, or at all): its index entry keeps its name. */
export function pendingCompression<P>(state: ApplyState<P>, runId: string, snapshotId: string): boolean {
  const ref = snapshotRef(runId, snapshotId);
  return state.plannedCompressions.has(ref) && !state.compressedSnapshots.has(ref);
}

export function runStats<P>(state: ApplyState<P>, runId: string): RunStats {
  let s = state.perRun.get(runId);
  if (!s) state.perRun.set(runId, (s = { deleted: 0, compressed: 0, summarized: false, runDeleted: false }));
  return s;
}

/** The clock's time now, RFC 3339. */
export function nowIso<P>(state: ApplyState<P>): string {
  return toRfc3339(state.clock.now());
}
