import { freezePolicy, keepRunTiers, type RetentionPolicy } from '../../retention/policy.js';
import type { RetentionDuration } from '../../retention/duration.js';
import type { RetentionSummarizer } from '../../retention/summary.js';
import { phasedWorkflowSummarizer } from './summary.js';
import { assertOptionsArgument } from '../../model/arguments.js';

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
  assertOptionsArgument(options, 'createPhasedWorkflowRetention');
  const compressAfter = options.compressAfter ?? false;
  return freezePolicy({
    name: 'phasedWorkflow',
    rules: [keepRunTiers({ keepAll: options.keepAll ?? 10, keepFinal: options.keepFinal ?? 40 })],
    summarizer: options.summarizer ?? phasedWorkflowSummarizer,
    ...(compressAfter === false ? {} : { compressAfter }),
  });
}

/** phased-workflow-github.md's default policy (see {@link createPhasedWorkflowRetention}). */
export const phasedWorkflowRetention: RetentionPolicy = createPhasedWorkflowRetention();
