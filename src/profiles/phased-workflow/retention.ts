import { freezePolicy, keepRunTiers } from '../../retention/policy.js';
import { type RetentionPolicy } from '../../contract/retention-policy.js';
import type { RetentionDuration } from '../../contract/retention-policy.js';
import type { RetentionSummarizer } from '../../contract/retention-policy.js';
import { phasedWorkflowSummarizer } from './summary.js';
import { assertOptionsArgument } from '../../contract/arguments.js';
import { CheckpointError } from '../../contract/errors.js';

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
  /**
   * Keep more than the spec: runs 11–50 keep their final checkpoint's history entry, the
   * index trimmed to it and a summary beside `latest.json`, and runs 51+ keep their final
   * checkpoint beside the summary unless the cleanup passes `allowRunDeletion: true`
   * (savepoint's earlier default). @default false (the spec's tiers)
   */
  readonly conservative?: boolean;
}

/**
 * phased-workflow-github.md's `retention_policy` as a policy: the 10 most recent runs
 * keep all checkpoints; runs 11–50 keep their final checkpoint only — `cleanup_process`
 * step 2, "delete all except latest.json" (history entries, batch files and the index go;
 * `latest.json` holds the final checkpoint); runs 51+ keep only a summary with the spec's
 * `summary_schema` fields (step 3, "delete all checkpoints, keep only summary": the summary
 * is written first, then everything else goes, `latest.json` last). Runs in
 * `preserved_runs.json` are kept whole.
 *
 * `conservative: true` keeps more (see {@link PhasedWorkflowRetentionOptions.conservative}).
 */
export function createPhasedWorkflowRetention(options: PhasedWorkflowRetentionOptions = {}): RetentionPolicy {
  assertOptionsArgument(options, 'createPhasedWorkflowRetention');
  const compressAfter = options.compressAfter ?? false;
  const conservative = options.conservative ?? false;
  if (typeof conservative !== 'boolean')
    throw new CheckpointError('checkpoint_config_invalid', 'createPhasedWorkflowRetention: conservative must be a boolean');
  const tiers = conservative ? {} : ({ finalKeeps: 'latest', archiveKeeps: 'summary' } as const);
  return freezePolicy({
    name: conservative ? 'phasedWorkflowConservative' : 'phasedWorkflow',
    rules: [keepRunTiers({ keepAll: options.keepAll ?? 10, keepFinal: options.keepFinal ?? 40, ...tiers })],
    summarizer: options.summarizer ?? phasedWorkflowSummarizer,
    ...(compressAfter === false ? {} : { compressAfter }),
  });
}

/** phased-workflow-github.md's default policy (see {@link createPhasedWorkflowRetention}). */
export const phasedWorkflowRetention: RetentionPolicy = createPhasedWorkflowRetention();
