import { z } from 'zod';
import { Rfc3339Schema } from './snapshot.js';

/*
 * The zod schemas of a run summary (`summary.json`), for tools (`savepoint/toolkit`) and the
 * build-time catalog of validators (scripts/validator-catalog.ts). summary.ts reads and
 * writes the document with the JSON Schema and validator generated from them
 * (src/codec/generated/), so the core entry does not load zod.
 */

/**
 * The summary kept for an archived run: the generic fields of a run summary (`run_id`,
 * `started_at`, `completed_at`, `final_status`) plus four fields savepoint owns:
 *
 * - `checkpoint_count`: how many checkpoints the run wrote (its newest sequence number);
 * - `last_checkpoint_id`, `last_checkpoint_at`: the newest checkpoint the summary was
 *   made from (a run that resumes later gets its summary rewritten; archived runs are
 *   ranked by `last_checkpoint_at`);
 * - `archived_at`: when retention wrote the summary.
 *
 * A profile's summarizer adds the fields its spec asks for (the phased workflow's
 * `phases_completed`, `total_cost_usd` and `errors_count`, checked by that profile's own
 * schema); the generic one adds none. Fields a summarizer adds are kept as they are.
 */
export const RetentionSummarySchema = z.looseObject({
  run_id: z.string().min(1),
  started_at: z.string().min(1),
  completed_at: z.string().min(1),
  final_status: z.string().min(1),
  checkpoint_count: z.number().int().min(0),
  last_checkpoint_id: z.string().min(1),
  last_checkpoint_at: Rfc3339Schema,
  archived_at: Rfc3339Schema,
});
