/**
 * Every JSON Schema the package validates stored documents against, for
 * scripts/generate-validators.ts. Each one gets an ajv validator compiled at build time,
 * so validation never needs `new Function` at run time (a Content-Security-Policy
 * without 'unsafe-eval' allows it), and a module of its own under src/codec/generated/,
 * loaded only by the code that reads that document. tests/codec/validators.test.ts fails
 * when a schema here changes without regeneration, or when a built-in schema is missing
 * from here.
 *
 * The core's schemas are converted from their zod definitions here, at build time: the
 * core entry imports the generated JSON Schema and validator and never loads zod.
 */
import { z } from 'zod';
import { phasedWorkflow } from '../src/profiles/phased-workflow/profile.js';
import { planExecutor } from '../src/profiles/plan-executor/profile.js';
import { snapshotLifecycle } from '../src/profiles/snapshot-lifecycle/profile.js';
import { langGraphProfile } from '../src/langgraph/profile.js';
import { DefaultDocumentSchema } from '../src/profiles/default-document-schema.js';
import { RunIndexSchema } from '../src/codec/run-index-schema.js';
import type { JsonSchema } from '../src/codec/validate.js';
import { BatchFileSchema } from '../src/snapshot-io/batch-file-schema.js';
import { PreservedRunsInputSchema, PreservedRunsSchema } from '../src/retention/preserved-runs-schema.js';
import { RetentionLogSchema } from '../src/retention/log-schema.js';
import { RetentionPolicySchema } from '../src/retention/policy-schema.js';
import { RetentionSummarySchema } from '../src/contract/retention-summary-schema.js';
import * as handoff from '../src/entries/handoff-markdown.js';
import * as progress from '../src/entries/progress-protocol.js';

const pick = (mod: Record<string, unknown>, prefix: string): [string, JsonSchema][] =>
  Object.entries(mod)
    .filter(([name, value]) => name.endsWith('JsonSchema') && typeof value === 'object' && value !== null)
    .map(([name, value]) => [`${prefix}${name}`, value as JsonSchema]);

/** A stored document's JSON Schema, as savepoint exports it (what the document holds: zod's output side). */
const stored = (schema: z.ZodType): JsonSchema => z.toJSONSchema(schema, { io: 'output' }) as JsonSchema;

/** Name → schema. A name is the generated module's (`runIndex` → src/codec/generated/run-index.js). */
export const VALIDATOR_CATALOG: readonly (readonly [string, JsonSchema])[] = [
  ['defaultDocument', z.toJSONSchema(DefaultDocumentSchema, { io: 'output', unrepresentable: 'any' }) as JsonSchema],
  ['snapshotLifecycleDocument', snapshotLifecycle.document.jsonSchema],
  ['phasedWorkflowDocument', phasedWorkflow.document.jsonSchema],
  ['planExecutorDocument', planExecutor.document.jsonSchema],
  // Every replica of a LangGraph service reads these documents from its first request: no ajv compile at start.
  ['langgraphDocument', langGraphProfile.document.jsonSchema],
  ['runIndex', stored(RunIndexSchema)],
  ['batchFile', stored(BatchFileSchema)],
  ['preservedRuns', stored(PreservedRunsInputSchema)],
  ['preservedRunsCanonical', stored(PreservedRunsSchema)],
  ['retentionLog', stored(RetentionLogSchema)],
  // A policy is what a person writes: the input side (defaults may be left out).
  ['retentionPolicy', z.toJSONSchema(RetentionPolicySchema, { io: 'input' }) as JsonSchema],
  ['retentionSummary', stored(RetentionSummarySchema)],
  ...pick(handoff as Record<string, unknown>, 'handoff_'),
  ...pick(progress as Record<string, unknown>, 'progress_'),
];
