import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { assertValid, documentValidator } from '../codec/document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import * as generated from '../codec/generated/retention-summary.js';
import { assertObjectArgument, assertFunctionArgument } from '../contract/arguments.js';
import { type RetentionSummary, type RetentionSummaryInput, type RetentionSummarizer } from '../contract/retention-policy.js';

/** JSON Schema of a run summary document. */
export const retentionSummaryJsonSchema: JsonSchema = generated.jsonSchema;

/**
 * The generic summarizer: adds nothing. The summary then has `run_id`, `started_at`
 * (first checkpoint), `completed_at` (time of the final checkpoint, also for a run that
 * never reached a terminal status), `final_status` (status of the final checkpoint) and
 * savepoint's own fields; `phases_completed`, `total_cost_usd` and `errors_count` are
 * left out because a generic payload does not carry them.
 */
export const genericRetentionSummarizer: RetentionSummarizer = () => ({});

/** Builds the summary document of a run from its final snapshot. */
export function buildRetentionSummary(input: RetentionSummaryInput, summarizer: RetentionSummarizer, archivedAt: string): RetentionSummary {
  assertObjectArgument(input, 'buildRetentionSummary', 'input');
  assertObjectArgument(input.latest, 'buildRetentionSummary', 'input.latest');
  assertFunctionArgument(summarizer, 'buildRetentionSummary', 'summarizer');
  const generic = {
    run_id: input.runId,
    started_at: input.startedAt,
    completed_at: input.latest.createdAt,
    final_status: input.latest.status,
  };
  const owned = {
    run_id: input.runId,
    checkpoint_count: input.checkpointCount,
    last_checkpoint_id: input.latest.id,
    last_checkpoint_at: input.latest.createdAt,
    archived_at: archivedAt,
  };
  return { ...generic, ...summarizer(input), ...owned } as RetentionSummary;
}

const validator = documentValidator(generated.validate);

/** Canonical JSON bytes of a summary. */
export function encodeRetentionSummary(summary: RetentionSummary): Uint8Array {
  return utf8Encode(canonicalJson(summary));
}

/** Parses and validates a summary document; `checkpoint_schema_invalid` when it is not one. */
export function decodeRetentionSummary(bytes: Uint8Array, where = 'summary.json'): RetentionSummary {
  const doc = parseJson(utf8Decode(bytes, where), where);
  assertValid(validator(doc), where);
  return doc as RetentionSummary;
}
