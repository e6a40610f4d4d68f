import { z } from 'zod';
import { assertOptionsArgument, assertStorageArgument, assertStringArgument } from '../model/arguments.js';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { isCheckpointError } from '../model/errors.js';
import { REASON_CODES } from '../model/reason-codes.js';
import { Rfc3339Schema } from '../model/snapshot.js';
import { assertValid, compileValidator, type DocumentValidator, type JsonSchema } from '../model/validate.js';
import type { StorageAdapter } from '../storage/adapter.js';

/*
 * phased-workflow-github.md: "retention_log.json: Log of cleanup actions" and cleanup step
 * 4 "Update retention log". The spec gives no shape; this is savepoint's: one entry per
 * applyRetention call, newest last, with counts, the runs touched and what was skipped.
 * Lists are capped so the file stays small on size-limited backends (GitHub).
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
    error: z.object({ reason_code: z.enum(REASON_CODES), key: z.string().optional() }).strict().optional(),
  })
  .strict();
/** One entry of the retention log. */
export type RetentionLogEntry = z.infer<typeof RetentionLogEntrySchema>;

/** `retention_log.json`: entries oldest first. */
export const RetentionLogSchema = z.object({ entries: z.array(RetentionLogEntrySchema) }).strict();
/** The retention log document. */
export type RetentionLog = z.infer<typeof RetentionLogSchema>;

/** JSON Schema of `retention_log.json`. */
export const retentionLogJsonSchema = z.toJSONSchema(RetentionLogSchema, { io: 'output' }) as JsonSchema;

/** Most entries the log keeps by default; older ones are dropped when a new one is appended. */
export const DEFAULT_RETENTION_LOG_ENTRIES = 500;

let validator: DocumentValidator | undefined;

/** Parses and validates `retention_log.json`; `checkpoint_schema_invalid` when it is not one. */
export function decodeRetentionLog(bytes: Uint8Array, where = 'retention_log.json'): RetentionLog {
  const doc = parseJson(utf8Decode(bytes, where), where);
  assertValid((validator ??= compileValidator(retentionLogJsonSchema))(doc), where);
  return doc as RetentionLog;
}

/** Canonical JSON bytes of the log. */
export function encodeRetentionLog(log: RetentionLog): Uint8Array {
  return utf8Encode(canonicalJson(log));
}

/** Reads `retention_log.json` under `key`; an empty log when there is none. */
export async function readRetentionLog(storage: StorageAdapter, key: string): Promise<RetentionLog> {
  assertStorageArgument(storage, 'readRetentionLog');
  assertStringArgument(key, 'readRetentionLog', 'key');
  const stored = await storage.get(key);
  return stored ? decodeRetentionLog(stored.bytes, key) : { entries: [] };
}

/**
 * Appends `entry` to the log under `key` with a conditional write (re-read and retried
 * on a conflict), keeping at most `maxEntries` entries. A log that exists but does not
 * validate is left alone and the call throws `checkpoint_schema_invalid`: savepoint
 * never overwrites a file it cannot read.
 */
export async function appendRetentionLog(storage: StorageAdapter, key: string, entry: RetentionLogEntry, maxEntries = DEFAULT_RETENTION_LOG_ENTRIES): Promise<void> {
  assertStorageArgument(storage, 'appendRetentionLog');
  assertStringArgument(key, 'appendRetentionLog', 'key');
  assertOptionsArgument(entry, 'appendRetentionLog');
  for (let attempt = 0; ; attempt++) {
    const stored = await storage.get(key);
    const log = stored ? decodeRetentionLog(stored.bytes, key) : { entries: [] };
    const entries = [...log.entries, entry].slice(-Math.max(1, maxEntries));
    try {
      await storage.put(key, encodeRetentionLog({ entries }), stored ? { ifVersion: stored.version } : { ifAbsent: true });
      return;
    } catch (err) {
      if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= 4) throw err;
    }
  }
}
