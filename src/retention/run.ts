import { sweepChunks, type ChunkSweepOptions, type ChunkSweepReport } from './chunk-sweep.js';
import { systemClock, type Clock } from '../contract/clock.js';
import { assertStorageProfileOptions } from '../contract/arguments.js';
import { isCheckpointError } from '../contract/errors.js';
import type { Profile } from '../contract/profile.js';
import { readSnapshot } from '../snapshot-io/read-snapshot.js';
import type { StorageAdapter } from '../contract/storage.js';
import { applyRetention, type RetentionReport } from './apply.js';
import { buildInventory, type RetentionInventory } from './inventory.js';
import { planRetention, type RetentionPlan } from './plan.js';
import type { RetentionPolicy } from '../contract/retention-policy.js';
import type { RetentionSummarizer } from '../contract/retention-policy.js';

/** Options of {@link runRetention}. */
export interface RunRetentionOptions<P = unknown> {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  /** @default the profile's `retention`, else a policy without rules (keeps everything) */
  readonly policy?: RetentionPolicy;
  /** Gives `now` for planning and the timestamps written. @default systemClock */
  readonly clock?: Clock;
  /** Plan and report, change nothing. @default false */
  readonly dryRun?: boolean;
  /** See {@link PlanRetentionOptions.allowRunDeletion}. @default false */
  readonly allowRunDeletion?: boolean;
  /** See {@link PlanRetentionOptions.deleteUnreadable}. @default false */
  readonly deleteUnreadable?: boolean;
  /** @default the policy's summarizer, else the generic one */
  readonly summarizer?: RetentionSummarizer;
  /** Reads in flight while building the inventory. @default 8 */
  readonly concurrency?: number;
  /** Append to `retention_log.json`. @default true */
  readonly log?: boolean;
  /**
   * After applying, free the content chunks no document references any more (`sweepChunks`:
   * unreferenced chunks are hidden, and hidden copies older than the grace period deleted).
   * `false` skips it. @default true (with `sweepChunks`'s defaults; nothing is changed on a dry run)
   */
  readonly sweepChunks?: boolean | ChunkSweepOptions;
}

/** What {@link runRetention} returns. */
export interface RetentionRun {
  readonly inventory: RetentionInventory;
  readonly plan: RetentionPlan;
  readonly report: RetentionReport;
  /** What the chunk sweep did (absent when `sweepChunks` is `false`). */
  readonly chunks?: ChunkSweepReport;
}

/**
 * Inventory → plan → apply in one call: what the CLI's `retention` command and
 * {@link cleanupAfterRunCompletion} run. Throws like its parts.
 *
 * @example
 * ```ts
 * const { plan, report } = await runRetention({ storage, profile, dryRun: true });
 * console.log(formatRetentionPlan(plan));
 * ```
 */
export async function runRetention<P>(options: RunRetentionOptions<P>): Promise<RetentionRun> {
  assertStorageProfileOptions(options, 'runRetention');
  const { storage, profile } = options;
  const clock = options.clock ?? systemClock;
  const policy = options.policy ?? profile.retention ?? { name: 'none', rules: [] };
  const inventory = await buildInventory({
    storage,
    profile,
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
  });
  const plan = planRetention(inventory, policy, clock.now(), {
    allowRunDeletion: options.allowRunDeletion ?? false,
    deleteUnreadable: options.deleteUnreadable ?? false,
  });
  const report = await applyRetention({
    storage,
    profile,
    plan,
    clock,
    dryRun: options.dryRun ?? false,
    ...(options.summarizer ? { summarizer: options.summarizer } : {}),
    ...(options.log !== undefined ? { log: options.log } : {}),
  });
  const sweep = options.sweepChunks ?? true;
  if (sweep === false) return { inventory, plan, report };
  const chunks = await sweepChunks(storage, { clock, ...(sweep === true ? {} : sweep), ...(options.dryRun ? { dryRun: true } : {}) });
  return { inventory, plan, report, chunks };
}

/** Options of {@link cleanupAfterRunCompletion}. */
export interface CleanupAfterRunCompletionOptions<P = unknown> extends Omit<RunRetentionOptions<P>, 'dryRun'> {
  /** The run that just finished. */
  readonly runId: string;
  /** Statuses of its final snapshot that count as a successful completion. @default ['completed'] */
  readonly successStatuses?: readonly string[];
}

/** What {@link cleanupAfterRunCompletion} did. */
export type RetentionCleanupResult =
  | { readonly ran: true; readonly plan: RetentionPlan; readonly report: RetentionReport }
  | { readonly ran: false; readonly reason: 'run_not_found' | 'run_not_completed' | 'latest_unreadable'; readonly status?: string };

/**
 * phased-workflow-github.md `cleanup_process` ("trigger: after successful run
 * completion"): a writer or orchestrator calls this after a run's final checkpoint. It
 * reads the run's `latest.json`; when its status is a successful completion it runs the
 * profile's retention policy over the whole store (count runs, thin runs 11–50, archive
 * runs 51+, update the retention log) and returns the plan and report. Otherwise it
 * changes nothing and says why.
 *
 * @example
 * ```ts
 * await writer.checkpoint('phase_complete', state, { status: 'completed' });
 * await cleanupAfterRunCompletion({ storage, profile: phasedWorkflow, runId, allowRunDeletion: true });
 * ```
 */
export async function cleanupAfterRunCompletion<P>(options: CleanupAfterRunCompletionOptions<P>): Promise<RetentionCleanupResult> {
  assertStorageProfileOptions(options, 'cleanupAfterRunCompletion');
  const { storage, profile, runId } = options;
  profile.assertRunId(runId);
  let status: string;
  try {
    const latest = await readSnapshot(storage, profile, profile.layout.latestKey(runId));
    if (!latest) return { ran: false, reason: 'run_not_found' };
    status = latest.status;
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_schema_invalid') || isCheckpointError(err, 'checkpoint_integrity_mismatch'))
      return { ran: false, reason: 'latest_unreadable' };
    throw err;
  }
  if (!(options.successStatuses ?? ['completed']).includes(status)) return { ran: false, reason: 'run_not_completed', status };
  const { plan, report } = await runRetention({ ...options, dryRun: false });
  return { ran: true, plan, report };
}
