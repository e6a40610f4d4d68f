import { keepLast, keepLatestStatus, keepRunTiers, type RetentionPolicy, type RetentionRule } from './policy.js';
import type { RetentionDuration } from './duration.js';
import { phasedWorkflowSummarizer, type RetentionSummarizer } from './summary.js';

/** Options of {@link createSnapshotLifecycleRetention}; every default is snapshot-lifecycle.md's. */
export interface SnapshotLifecycleRetentionOptions {
  /** Snapshots kept per run id. @default 50 */
  readonly keepLast?: number;
  /** Snapshots older than this are pruned unless a terminal-status rule (or a safety rule) keeps them. @default '14d' */
  readonly maxAge?: RetentionDuration;
  /** Statuses whose newest snapshot per run is always kept ("preserved terminal snapshots"). @default ['failed', 'completed'] */
  readonly keepLatestStatuses?: readonly string[];
  /** Gzip kept history entries older than this, or `false`. @default '24h' */
  readonly compressAfter?: RetentionDuration | false;
}

function freeze(policy: RetentionPolicy): RetentionPolicy {
  for (const rule of policy.rules) Object.freeze(rule);
  Object.freeze(policy.rules);
  return Object.freeze(policy);
}

/**
 * snapshot-lifecycle.md's retention defaults as a policy: keep the latest 50 snapshots
 * per run (`keep-last`, only those younger than 14 days: "prune snapshots older than 14
 * days"), always keep the latest `failed` and latest `completed` snapshot of each run
 * (`keep-latest-failed`, `keep-latest-completed`: the "preserved terminal snapshots" the
 * 14-day prune spares), and gzip kept history entries older than 24 hours (never
 * `latest.json`). A run's latest snapshot and preserved runs are kept by the safety rules.
 */
export function createSnapshotLifecycleRetention(options: SnapshotLifecycleRetentionOptions = {}): RetentionPolicy {
  const rules: RetentionRule[] = [keepLast(options.keepLast ?? 50, { maxAge: options.maxAge ?? '14d' })];
  for (const status of options.keepLatestStatuses ?? ['failed', 'completed']) rules.push(keepLatestStatus(status));
  const compressAfter = options.compressAfter === undefined ? '24h' : options.compressAfter;
  return freeze({ name: 'snapshotLifecycle', rules, ...(compressAfter === false ? {} : { compressAfter }) });
}

/** snapshot-lifecycle.md's default policy (see {@link createSnapshotLifecycleRetention}). */
export const snapshotLifecycleRetention: RetentionPolicy = createSnapshotLifecycleRetention();

/** Options of {@link createPhasedWorkflowRetention}; every default is phased-workflow-github.md's. */
export interface PhasedWorkflowRetentionOptions {
  /** Most recent runs that keep all checkpoints. @default 10 */
  readonly keepAll?: number;
  /** Runs after those that keep their final checkpoint only (spec: runs 11–50). @default 40 */
  readonly keepFinal?: number;
  /** Fills `phases_completed`, `total_cost_usd`, `errors_count` of archived runs' summaries. @default phasedWorkflowSummarizer */
  readonly summarizer?: RetentionSummarizer;
  /** Gzip kept checkpoints older than this (the spec does not; GitHub stores compress anyway). @default false */
  readonly compressAfter?: RetentionDuration | false;
}

/**
 * phased-workflow-github.md's `retention_policy` as a policy: the 10 most recent runs
 * keep all checkpoints, runs 11–50 keep their final checkpoint only (`latest.json` and
 * its history entry), runs 51+ are archived to a summary with the spec's
 * `summary_schema` fields. Runs in `preserved_runs.json` are kept whole.
 *
 * The spec deletes everything but the summary of runs 51+; savepoint does that only when
 * the plan is made with `allowRunDeletion: true` (see {@link cleanupAfterRunCompletion}),
 * because deleting a run's latest snapshot otherwise never happens.
 */
export function createPhasedWorkflowRetention(options: PhasedWorkflowRetentionOptions = {}): RetentionPolicy {
  const compressAfter = options.compressAfter ?? false;
  return freeze({
    name: 'phasedWorkflow',
    rules: [keepRunTiers({ keepAll: options.keepAll ?? 10, keepFinal: options.keepFinal ?? 40 })],
    summarizer: options.summarizer ?? phasedWorkflowSummarizer,
    ...(compressAfter === false ? {} : { compressAfter }),
  });
}

/** phased-workflow-github.md's default policy (see {@link createPhasedWorkflowRetention}). */
export const phasedWorkflowRetention: RetentionPolicy = createPhasedWorkflowRetention();
