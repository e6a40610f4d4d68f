/**
 * Every JSON Schema the package validates stored documents against, for
 * scripts/generate-validators.ts. Each one gets an ajv validator compiled at build time,
 * so validation never needs `new Function` at run time (a Content-Security-Policy
 * without 'unsafe-eval' allows it). tests/core/validators.test.ts fails when a schema
 * here changes without regeneration, or when a built-in schema is missing from here.
 */
import { defaultProfile } from '../src/profiles/default-profile.js';
import { phasedWorkflow } from '../src/profiles/phased-workflow/profile.js';
import { planExecutor } from '../src/profiles/plan-executor/profile.js';
import { snapshotLifecycle } from '../src/profiles/snapshot-lifecycle/profile.js';
import { runIndexJsonSchema } from '../src/model/run-index.js';
import type { JsonSchema } from '../src/model/validate.js';
import { batchFileJsonSchema } from '../src/profiles/batch-file.js';
import { preservedRunsCanonicalJsonSchema, preservedRunsJsonSchema } from '../src/retention/preserved-runs.js';
import { retentionLogJsonSchema } from '../src/retention/log.js';
import { retentionPolicyJsonSchema } from '../src/retention/policy.js';
import { retentionSummaryJsonSchema } from '../src/retention/summary.js';
import * as handoff from '../src/entries/handoff-markdown.js';
import * as progress from '../src/entries/progress-protocol.js';

const pick = (mod: Record<string, unknown>, prefix: string): [string, JsonSchema][] =>
  Object.entries(mod)
    .filter(([name, value]) => name.endsWith('JsonSchema') && typeof value === 'object' && value !== null)
    .map(([name, value]) => [`${prefix}${name}`, value as JsonSchema]);

/** Name → schema. Names only label the generated functions; lookup is by the schema's content. */
export const VALIDATOR_CATALOG: readonly (readonly [string, JsonSchema])[] = [
  ['defaultDocument', defaultProfile.document.jsonSchema],
  ['snapshotLifecycleDocument', snapshotLifecycle.document.jsonSchema],
  ['phasedWorkflowDocument', phasedWorkflow.document.jsonSchema],
  ['planExecutorDocument', planExecutor.document.jsonSchema],
  ['runIndex', runIndexJsonSchema],
  ['batchFile', batchFileJsonSchema],
  ['preservedRuns', preservedRunsJsonSchema],
  ['preservedRunsCanonical', preservedRunsCanonicalJsonSchema],
  ['retentionLog', retentionLogJsonSchema],
  ['retentionPolicy', retentionPolicyJsonSchema],
  ['retentionSummary', retentionSummaryJsonSchema],
  ...pick(handoff as Record<string, unknown>, 'handoff_'),
  ...pick(progress as Record<string, unknown>, 'progress_'),
];
