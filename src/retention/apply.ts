import { assertStorageProfileOptions } from '../contract/arguments.js';
import { systemClock, toRfc3339, type Clock } from '../contract/clock.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import type { Profile } from '../contract/profile.js';
import type { KeyKind } from '../contract/layout.js';
import { GZIP_SUFFIX } from '../contract/layout.js';
import type { StorageAdapter } from '../contract/storage.js';
import { compressHistoryEntry, Skip, SKIPPABLE, snapshotRef, updateIndex, writeSummary } from './apply-operations.js';
import { applyState, finishReport, nowIso, pendingCompression, runStats, type ApplyState, type RunStats } from './apply-state.js';
import { appendRetentionLog, DEFAULT_RETENTION_LOG_ENTRIES, type RetentionLogEntry } from './log.js';
import type { RetentionOperation, RetentionPlan } from './plan.js';
import { genericRetentionSummarizer } from './summary.js';
import { type RetentionSummarizer } from '../contract/retention-policy.js';

/** What happened to one operation. */
export interface RetentionOperationOutcome {
  readonly operation: RetentionOperation;
  /**
   * `done`; `already-done` (found done, e.g. by an earlier interrupted apply); `skipped`
   * (a data problem or a skipped prerequisite, see `reasonCode`); `planned` (dry run);
   * `failed` (the operation the apply stopped at).
   */
  readonly outcome: 'done' | 'already-done' | 'skipped' | 'planned' | 'failed';
  readonly reasonCode?: ReasonCode;
  readonly message?: string;
}

/** What {@link applyRetention} did. */
export interface RetentionReport {
  readonly dryRun: boolean;
  readonly profile: string;
  readonly policy: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  /**
   * `dry_run`; `completed`; `completed_with_skips` when some operations were skipped for
   * a data problem (each listed with its reason code; running again retries them);
   * `failed` only inside the `checkpoint_retention_prune_failed` error of a stopped apply.
   */
  readonly status: 'dry_run' | 'completed' | 'completed_with_skips' | 'failed';
  /** The plan's snapshot decisions. */
  readonly planned: RetentionPlan['totals'];
  /** One outcome per operation reached, in order. */
  readonly outcomes: readonly RetentionOperationOutcome[];
  readonly totals: {
    readonly done: number;
    readonly skipped: number;
    readonly filesDeleted: number;
    readonly compressed: number;
    readonly summariesWritten: number;
    readonly indexesUpdated: number;
    readonly bytesFreed: number;
  };
  /** The retention log: where it is and whether this apply's entry was appended. */
  readonly log: { readonly key?: string; readonly written: boolean; readonly reasonCode?: ReasonCode };
}

/** The `checkpoint_retention_prune_failed` error of an apply that stopped: `report` says what was done. */
export class RetentionPruneError extends CheckpointError {
  readonly report: RetentionReport;
  constructor(message: string, report: RetentionReport, cause: unknown, details: Record<string, string | number>) {
    super('checkpoint_retention_prune_failed', message, { cause, details });
    this.report = report;
  }
}

/** Options of {@link applyRetention}. */
export interface ApplyRetentionOptions<P = unknown> {
  readonly storage: StorageAdapter;
  /** The profile the plan was made for (its layout is checked against every key; its document format reads snapshots). */
  readonly profile: Profile<P>;
  readonly plan: RetentionPlan;
  /** Change nothing: return the plan as a report of `planned` operations. @default false */
  readonly dryRun?: boolean;
  /** Stamps the index's `last_updated`, summaries' `archived_at` and the log entry. @default systemClock */
  readonly clock?: Clock;
  /** Summarizer of archived runs. @default the plan's (its policy's), else {@link genericRetentionSummarizer} */
  readonly summarizer?: RetentionSummarizer;
  /** Append an entry to `retention_log.json`. @default true */
  readonly log?: boolean;
  /** Most entries kept in the log. @default 500 */
  readonly maxLogEntries?: number;
}

const EXPECTED_KIND: Record<RetentionOperation['type'], readonly KeyKind[]> = {
  'write-summary': ['summary'],
  compress: ['history'],
  delete: ['history', 'batch', 'part', 'latest', 'index'],
  'update-index': ['index'],
};

/**
 * Executes a plan: writes summaries, compresses, deletes, updates run indexes, then
 * appends an entry to `retention_log.json` and returns a report.
 *
 * Order and crash safety: per run, the summary is written (create-only, or refreshed
 * when it describes an older final snapshot) before any snapshot of the run is removed;
 * a compression writes `<entry>.gz` create-only, reads it back and checks it against the
 * plain entry before deleting the plain one; the index stops listing snapshots before
 * their files are deleted (so it never names a missing file, and `verify` finds nothing
 * wrong after a crash mid-prune); a history entry is deleted before its part files; a
 * deleted run loses its index first (and keeps everything else when the index changed
 * since the plan: a writer came back), then its files, then latest.json, so a run with
 * history left always has its latest. A crash
 * anywhere leaves a consistent store that a new inventory, plan and apply bring to the
 * same end state as one uninterrupted apply.
 *
 * A data problem in one operation (an unreadable file, a conflicting concurrent write)
 * skips that operation — and the rest of its run after a skipped summary — and the
 * report says so (`completed_with_skips`). A storage failure stops the apply with a
 * {@link RetentionPruneError} (`checkpoint_retention_prune_failed`) whose `report` lists
 * what was done.
 *
 * Every key is checked against the profile's layout before anything is touched
 * (`checkpoint_config_invalid` otherwise), so a plan cannot reach outside it.
 */
export async function applyRetention<P>(options: ApplyRetentionOptions<P>): Promise<RetentionReport> {
  assertStorageProfileOptions(options, 'applyRetention');
  const planArg: unknown = options.plan;
  if (typeof planArg !== 'object' || planArg === null || !Array.isArray((planArg as { operations?: unknown }).operations)) {
    throw new CheckpointError('checkpoint_config_invalid', 'applyRetention: plan must be a plan made by planRetention', {
      details: { function: 'applyRetention' },
    });
  }
  const { profile, plan } = options;
  const clock = options.clock ?? systemClock;
  const startedAt = toRfc3339(clock.now());
  const summarizer = options.summarizer ?? plan.summarizer ?? genericRetentionSummarizer;
  if (plan.profile !== profile.name) {
    throw new CheckpointError('checkpoint_config_invalid', `the plan was made for profile "${plan.profile}", not "${profile.name}"`, {
      details: { profile: profile.name },
    });
  }
  assertPlanInLayout(plan, profile);

  const state = applyState(options, clock, startedAt, summarizer);
  if (options.dryRun) {
    for (const operation of plan.operations) state.outcomes.push({ operation, outcome: 'planned' });
    return finishReport(state, 'dry_run', { ...(state.logKey ? { key: state.logKey } : {}), written: false });
  }
  for (const op of plan.operations) await applyOperation(state, op);
  return appendLogAndFinish(state);
}

/** Every key of the plan must be one the profile's layout recognizes, of the kind its operation expects. */
function assertPlanInLayout<P>(plan: RetentionPlan, profile: Profile<P>): void {
  for (const op of plan.operations) {
    const info = profile.layout.classify(op.key);
    if (
      !info ||
      info.runId !== op.runId ||
      !EXPECTED_KIND[op.type].includes(info.kind) ||
      (op.type === 'delete' && info.kind !== op.kind)
    ) {
      throw new CheckpointError('checkpoint_config_invalid', `plan operation ${op.type} names a key outside the profile's layout`, {
        details: { runId: op.runId },
      });
    }
    if (op.type === 'compress' && (info.compressed || profile.layout.classify(op.key + GZIP_SUFFIX)?.kind !== 'history')) {
      throw new CheckpointError('checkpoint_config_invalid', 'plan compress operation has a bad target', { details: { runId: op.runId } });
    }
  }
}

/** Carries out one operation: done, skipped (its run's earlier step was, or a data problem), or the apply stops with a {@link RetentionPruneError}. */
async function applyOperation<P>(state: ApplyState<P>, op: RetentionOperation): Promise<void> {
  const runSkip = op.type !== 'compress' ? state.skippedRuns.get(op.runId) : undefined;
  if (runSkip) {
    state.outcomes.push({ operation: op, outcome: 'skipped', ...runSkip });
    state.totals.skipped++;
    markSkipped(state, op);
    return;
  }
  let outcome: 'done' | 'already-done';
  try {
    outcome = await executeOperation(state, op);
  } catch (err) {
    const code =
      err instanceof Skip ? err.reasonCode : isCheckpointError(err) && SKIPPABLE.has(err.reasonCode) ? err.reasonCode : undefined;
    if (code === undefined) return stopAt(state, op, err);
    state.outcomes.push({ operation: op, outcome: 'skipped', reasonCode: code, message: err instanceof Error ? err.message : String(err) });
    state.totals.skipped++;
    markSkipped(state, op);
    // No summary, or a deleted run whose index or latest.json changed since the plan: the run's files stay.
    if (op.type === 'write-summary')
      state.skippedRuns.set(op.runId, {
        reasonCode: 'checkpoint_no_valid_snapshot',
        message: "skipped: the run's summary could not be written",
      });
    else if (op.type === 'delete' && (op.kind === 'latest' || op.kind === 'index')) {
      state.skippedRuns.set(op.runId, {
        reasonCode: code,
        message: `skipped: the run's ${op.kind} changed since the plan, so the run is kept`,
      });
    }
    return;
  }
  recordDone(state, op, outcome);
}

async function executeOperation<P>(state: ApplyState<P>, op: RetentionOperation): Promise<'done' | 'already-done'> {
  const { storage, profile } = state;
  switch (op.type) {
    case 'write-summary':
      return writeSummary(storage, profile, op, state.summarizer, nowIso(state));
    case 'compress':
      return compressHistoryEntry(storage, profile, op);
    case 'delete': {
      const existed = await storage.delete(op.key, op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {});
      return existed ? 'done' : 'already-done';
    }
    case 'update-index':
      return updateIndex(storage, op, state.blocked, (runId, snapshotId) => pendingCompression(state, runId, snapshotId), nowIso(state));
  }
}

/** What did not happen, so the index update leaves those entries alone. */
function markSkipped<P>(state: ApplyState<P>, op: RetentionOperation): void {
  if (op.type !== 'delete') return;
  state.blocked.add(op.key);
  if (op.snapshotId !== undefined) state.blocked.add(snapshotRef(op.runId, op.snapshotId));
}

function recordDone<P>(state: ApplyState<P>, op: RetentionOperation, outcome: 'done' | 'already-done'): void {
  const { totals } = state;
  state.outcomes.push({ operation: op, outcome });
  totals.done++;
  if (op.type === 'compress') state.compressedSnapshots.add(snapshotRef(op.runId, op.snapshotId));
  const stats = runStats(state, op.runId);
  if (op.type === 'delete') {
    if (outcome === 'done') {
      totals.filesDeleted++;
      totals.bytesFreed += op.size;
    }
    if (op.kind === 'history') stats.deleted++;
    if (op.kind === 'latest') stats.runDeleted = true;
  } else if (op.type === 'compress') {
    totals.compressed++;
    stats.compressed++;
  } else if (op.type === 'write-summary') {
    if (outcome === 'done') {
      totals.summariesWritten++;
      stats.summarized = true;
    }
  } else if (outcome === 'done') {
    totals.indexesUpdated++;
  }
}

/** A storage failure at `op`: logs what was done (when the store lets it) and throws a {@link RetentionPruneError}. */
async function stopAt<P>(state: ApplyState<P>, op: RetentionOperation, err: unknown): Promise<never> {
  const { storage, plan, options, logKey, totals } = state;
  const reasonCode: ReasonCode = isCheckpointError(err) ? err.reasonCode : 'checkpoint_storage_unavailable';
  state.outcomes.push({ operation: op, outcome: 'failed', reasonCode });
  let logged = false;
  if (options.log !== false && logKey) {
    try {
      await appendRetentionLog(
        storage,
        logKey,
        logEntry(plan, state.outcomes, totals, state.perRun, 'failed', nowIso(state), { reason_code: reasonCode, key: op.key }),
        options.maxLogEntries,
      );
      logged = true;
    } catch {
      // The store that just failed may refuse this too; the thrown error carries the report.
    }
  }
  const report = finishReport(state, 'failed', { ...(logKey ? { key: logKey } : {}), written: logged });
  throw new RetentionPruneError(
    `retention stopped at ${op.type} of ${op.key} after ${totals.done} of ${plan.operations.length} operations`,
    report,
    err,
    {
      operationsDone: totals.done,
      operationsPlanned: plan.operations.length,
      failedOperation: op.type,
      failedKey: op.key,
      reason: reasonCode,
    },
  );
}

/** Appends this apply's entry to the retention log (unless told not to) and makes the report. */
async function appendLogAndFinish<P>(state: ApplyState<P>): Promise<RetentionReport> {
  const { storage, plan, options, logKey, totals } = state;
  const status = totals.skipped > 0 ? 'completed_with_skips' : 'completed';
  if (options.log === false || !logKey) return finishReport(state, status, { ...(logKey ? { key: logKey } : {}), written: false });
  try {
    await appendRetentionLog(
      storage,
      logKey,
      logEntry(plan, state.outcomes, totals, state.perRun, status, nowIso(state)),
      options.maxLogEntries ?? DEFAULT_RETENTION_LOG_ENTRIES,
    );
    return finishReport(state, status, { key: logKey, written: true });
  } catch (err) {
    if (isCheckpointError(err) && SKIPPABLE.has(err.reasonCode)) {
      // A log savepoint cannot read is never overwritten; the report says it was not appended.
      return finishReport(state, 'completed_with_skips', { key: logKey, written: false, reasonCode: err.reasonCode });
    }
    const reasonCode: ReasonCode = isCheckpointError(err) ? err.reasonCode : 'checkpoint_storage_unavailable';
    const report = finishReport(state, 'failed', { key: logKey, written: false, reasonCode });
    throw new RetentionPruneError(`retention applied every operation but could not append to ${logKey}`, report, err, {
      operationsDone: totals.done,
      operationsPlanned: plan.operations.length,
      failedKey: logKey,
      reason: reasonCode,
    });
  }
}

/** The retention log's entry for this apply. */
function logEntry(
  plan: RetentionPlan,
  outcomes: readonly RetentionOperationOutcome[],
  totals: RetentionReport['totals'],
  perRun: ReadonlyMap<string, RunStats>,
  status: RetentionLogEntry['status'],
  at: string,
  error?: { reason_code: ReasonCode; key: string },
): RetentionLogEntry {
  const runs = [...perRun.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const skipped = outcomes.filter((o) => o.outcome === 'skipped');
  return {
    at,
    profile: plan.profile,
    policy: plan.policy,
    status,
    snapshots: { keep: plan.totals.keep, compress: plan.totals.compress, summarize: plan.totals.summarize, delete: plan.totals.delete },
    operations: { planned: plan.operations.length, done: totals.done, skipped: totals.skipped },
    files_deleted: totals.filesDeleted,
    bytes_freed: totals.bytesFreed,
    summaries_written: runs.filter(([, s]) => s.summarized).map(([id]) => id),
    runs_deleted: runs.filter(([, s]) => s.runDeleted).map(([id]) => id),
    runs: runs.slice(0, 200).map(([id, s]) => ({
      run_id: id,
      deleted: s.deleted,
      compressed: s.compressed,
      summarized: s.summarized,
      run_deleted: s.runDeleted,
    })),
    runs_truncated: Math.max(0, runs.length - 200),
    skipped: skipped.slice(0, 100).map((o) => ({ key: o.operation.key, reason_code: o.reasonCode ?? 'checkpoint_schema_invalid' })),
    ...(error ? { error } : {}),
  };
}
