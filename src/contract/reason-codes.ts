/**
 * Every failure savepoint reports carries one of these stable reason codes.
 *
 * The first four come from snapshot-lifecycle.md ("parser/validation errors return
 * deterministic reason codes"); the rest are the ones the library itself needs.
 * Codes are part of the public API: they are never renamed, only added.
 */
export const REASON_CODES = [
  /** A document, payload or input value does not match its schema, or cannot be encoded as JSON. */
  'checkpoint_schema_invalid',
  /** A stored document's checksum (or its gzip CRC) does not match its content. */
  'checkpoint_integrity_mismatch',
  /** A storage write could not be completed durably (fsync, rename, network, verify). */
  'checkpoint_atomic_write_failed',
  /** A retention plan could not be applied completely. */
  'checkpoint_retention_prune_failed',
  /** A key, run id or path is malformed or would escape the adapter's root. */
  'checkpoint_key_invalid',
  /** A conditional write lost: the key exists (create-only) or its version changed. */
  'checkpoint_conflict',
  /** The requested key, run or snapshot does not exist. */
  'checkpoint_not_found',
  /** A snapshot exceeds the configured or backend size limit. */
  'checkpoint_too_large',
  /** No stored snapshot of the run passed validation. */
  'checkpoint_no_valid_snapshot',
  /** Another writer holds the run. */
  'checkpoint_run_locked',
  /** The writer's queue is full. */
  'checkpoint_backpressure',
  /** The storage backend could not be reached or answered with a server error. */
  'checkpoint_storage_unavailable',
  /** The storage backend refused the call because of a rate limit. */
  'checkpoint_rate_limited',
  /** The writer or adapter was used after close(). */
  'checkpoint_closed',
  /** The operation is not supported by this adapter or profile. */
  'checkpoint_unsupported',
  /** Options passed to a factory are invalid. */
  'checkpoint_config_invalid',
  /**
   * An issue tracker (progress-protocol.md's status comment: Linear, GitHub issues) could not be
   * reached, timed out, refused the request or answered with an error.
   */
  'checkpoint_tracker_unavailable',
  /**
   * An encrypted store's value or keyring cannot be opened with the keys given: none of them
   * wraps the store's data key (a wrong key, or none). The message names the key ids the store
   * needs, never a key.
   */
  'checkpoint_encryption_key_missing',
] as const;

/** A stable reason code; see {@link REASON_CODES}. */
export type ReasonCode = (typeof REASON_CODES)[number];

const KNOWN = new Set<string>(REASON_CODES);

/** True when `value` is one of savepoint's reason codes. */
export function isReasonCode(value: unknown): value is ReasonCode {
  return typeof value === 'string' && KNOWN.has(value);
}
