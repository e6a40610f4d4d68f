import { CheckpointError, type CheckpointErrorDetails } from '../../contract/errors.js';
import type { ReasonCode } from '../../contract/reason-codes.js';
import { safeCause, type Scrubber } from '../github/secrets.js';
import { CONFLICT_SQLSTATE } from './sql.js';

/** What node-postgres errors carry (server errors: `code` is the SQLSTATE; socket errors: `code` is errno). */
interface DriverError {
  readonly code?: unknown;
  readonly message?: unknown;
}

/** SQLSTATEs that mean "another attempt may succeed, the batch was not applied". */
const RETRY_AS_CONFLICT = new Set([
  '40001', // serialization_failure
  '40P01', // deadlock_detected: two batches locked the same keys in opposite orders
  '23505', // unique_violation: cannot happen through our statements; never leaks as such
]);

function classify(code: string, message: string): { reason: ReasonCode; why: string } {
  if (code === CONFLICT_SQLSTATE || RETRY_AS_CONFLICT.has(code)) return { reason: 'checkpoint_conflict', why: 'a condition failed' };
  if (code === '57014')
    return { reason: 'checkpoint_storage_unavailable', why: 'statement timed out (statement_timeout) or was cancelled' };
  if (code === '54000' || code === '22001' || code === '54001')
    return { reason: 'checkpoint_too_large', why: 'the server refused the value size' };
  if (message === 'timeout exceeded when trying to connect') {
    // pg-pool's message when every pooled connection stayed busy for connectionTimeoutMillis.
    return { reason: 'checkpoint_backpressure', why: 'connection pool is full (every connection stayed busy for connectionTimeoutMillis)' };
  }
  if (/^(08|53|57P|58)/.test(code) || /^E[A-Z]+$/.test(code))
    return { reason: 'checkpoint_storage_unavailable', why: 'server unreachable or connection lost' };
  if (/Connection terminated|connection timeout|Client has encountered a connection error|Connection ended/i.test(message)) {
    return { reason: 'checkpoint_storage_unavailable', why: 'connection lost' };
  }
  if (/^(42|3F|3D|28)/.test(code))
    return { reason: 'checkpoint_config_invalid', why: 'the server refused the store setup (missing table, permissions or database)' };
  return { reason: 'checkpoint_storage_unavailable', why: 'the server answered with an error' };
}

/**
 * Turns anything the driver threw into a `CheckpointError` with a stable reason code. The
 * driver's error is never attached as such (it can reference the client and its config):
 * only its name, SQLSTATE and a scrubbed message travel on, as `cause` and `details.sqlstate`.
 */
export function toStoreError(err: unknown, during: string, scrubber: Scrubber, details: CheckpointErrorDetails = {}): CheckpointError {
  if (err instanceof CheckpointError) return err;
  const e = (err ?? {}) as DriverError;
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  const { reason, why } = classify(code, message);
  return new CheckpointError(reason, `postgres ${during} failed: ${why}`, {
    cause: safeCause(err, scrubber),
    details: { ...details, ...(code ? { sqlstate: code } : {}) },
  });
}
