import { z } from 'zod';
import { REASON_CODES } from '../contract/reason-codes.js';
import { Rfc3339Schema } from '../contract/snapshot.js';

/*
 * The zod schemas of `retention_log.json`, for tools (`savepoint/toolkit`) and the
 * build-time catalog of validators (scripts/validator-catalog.ts). log.ts reads and
 * writes the document with the JSON Schema and validator generated from them
 * (src/codec/generated/), so the core entry does not load zod.
 */

const count = z.number().int().min(0);

/** What one retention run did to one run. */
export const RetentionLogRunSchema = z
  .object({
    run_id: z.string().min(1),
    deleted: count,
    compressed: count,
    summarized: z.boolean(),
    run_deleted: z.boolean(),
  })
  .strict();

/** One entry of `retention_log.json`. */
export const RetentionLogEntrySchema = z
  .object({
    /** When the apply finished (RFC 3339). */
    at: Rfc3339Schema,
    profile: z.string().min(1),
    policy: z.string().min(1),
    /** `completed`; `completed_with_skips` when some operations were skipped (see `skipped`); `failed` when the apply stopped at `error`. */
    status: z.enum(['completed', 'completed_with_skips', 'failed']),
    /** Planned snapshot actions. */
    snapshots: z.object({ keep: count, compress: count, summarize: count, delete: count }).strict(),
    /** Operations planned, done (or already done), skipped. */
    operations: z.object({ planned: count, done: count, skipped: count }).strict(),
    files_deleted: count,
    bytes_freed: count,
    /** Runs whose summary was written. */
    summaries_written: z.array(z.string().min(1)),
    /** Runs archived completely (only their summary left). */
    runs_deleted: z.array(z.string().min(1)),
    /** Runs touched (at most 200; `runs_truncated` counts the rest). */
    runs: z.array(RetentionLogRunSchema),
    runs_truncated: count,
    /** Operations skipped and why (at most 100). */
    skipped: z.array(z.object({ key: z.string(), reason_code: z.enum(REASON_CODES) }).strict()),
    /** Why a failed apply stopped. */
    error: z
      .object({ reason_code: z.enum(REASON_CODES), key: z.string().optional() })
      .strict()
      .optional(),
  })
  .strict();

/** `retention_log.json`: entries oldest first. */
export const RetentionLogSchema = z.object({ entries: z.array(RetentionLogEntrySchema) }).strict();
