import type { z } from 'zod';
import { assertOptionsArgument, assertStorageArgument, assertStringArgument } from '../contract/arguments.js';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { isCheckpointError } from '../contract/errors.js';
import { assertValid, documentValidator } from '../codec/document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import * as generated from '../codec/generated/retention-log.js';
import type { RetentionLogEntrySchema, RetentionLogSchema } from './log-schema.js';
import type { StorageAdapter } from '../contract/storage.js';

/*
 * phased-workflow-github.md: "retention_log.json: Log of cleanup actions" and cleanup step
 * 4 "Update retention log". The spec gives no shape; this is savepoint's: one entry per
 * applyRetention call, newest last, with counts, the runs touched and what was skipped.
 * Lists are capped so the file stays small on size-limited backends (GitHub).
 */

/** One entry of the retention log: what one retention run did. */
export type RetentionLogEntry = z.infer<typeof RetentionLogEntrySchema>;
/** The retention log document. */
export type RetentionLog = z.infer<typeof RetentionLogSchema>;

/** JSON Schema of `retention_log.json`. */
export const retentionLogJsonSchema: JsonSchema = generated.jsonSchema;

/** Most entries the log keeps by default; older ones are dropped when a new one is appended. */
export const DEFAULT_RETENTION_LOG_ENTRIES = 500;

const validator = documentValidator(generated.validate);

/** Parses and validates `retention_log.json`; `checkpoint_schema_invalid` when it is not one. */
export function decodeRetentionLog(bytes: Uint8Array, where = 'retention_log.json'): RetentionLog {
  const doc = parseJson(utf8Decode(bytes, where), where);
  assertValid(validator(doc), where);
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
export async function appendRetentionLog(
  storage: StorageAdapter,
  key: string,
  entry: RetentionLogEntry,
  maxEntries = DEFAULT_RETENTION_LOG_ENTRIES,
): Promise<void> {
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
