import type { z } from 'zod';
import { canonicalJson, parseJson, type JsonValue } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import type { Snapshot } from '../model/snapshot.js';
import { assertValid, documentValidator, type JsonSchema } from '../model/document-validator.js';
import * as generated from '../model/generated/retention-summary.js';
import type { RetentionSummarySchema } from './summary-schema.js';
import { assertObjectArgument, assertFunctionArgument } from '../model/arguments.js';

/** An archived run's summary document (`<root>/<run_id>/summary.json`); see {@link RetentionSummarySchema}. */
export type RetentionSummary = z.infer<typeof RetentionSummarySchema>;

/** JSON Schema of a run summary document. */
export const retentionSummaryJsonSchema: JsonSchema = generated.jsonSchema;

/** What a {@link RetentionSummarizer} is given. */
export interface RetentionSummaryInput {
  readonly runId: string;
  /** The newest readable snapshot of the run (its final checkpoint). */
  readonly latest: Snapshot<unknown>;
  /** Creation time of the run's first checkpoint, as far as storage (and an earlier summary) still know it. */
  readonly startedAt: string;
  /** Checkpoints the run wrote (its newest sequence number). */
  readonly checkpointCount: number;
  /** The summary written earlier, when the run is summarized again after resuming. */
  readonly previous?: RetentionSummary;
}

/**
 * Returns the profile-specific fields of an archived run's summary. They are merged over
 * the generic ones (`run_id`, `started_at`, `completed_at`, `final_status`), so a
 * summarizer may also override `started_at`, `completed_at` or `final_status`; the
 * fields savepoint owns cannot be overridden.
 */
export type RetentionSummarizer = (input: RetentionSummaryInput) => Readonly<Record<string, JsonValue>>;

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
