import { sleep, type Clock } from '../model/clock.js';
import { CheckpointError, toCheckpointError } from '../model/errors.js';
import type { ReasonCode } from '../model/reason-codes.js';

/** Failures another attempt cannot fix: bad input, bad config, a lost lock, a closed store. */
const PERMANENT: ReadonlySet<ReasonCode> = new Set<ReasonCode>([
  'checkpoint_schema_invalid',
  'checkpoint_too_large',
  'checkpoint_key_invalid',
  'checkpoint_run_locked',
  'checkpoint_closed',
  'checkpoint_config_invalid',
  'checkpoint_unsupported',
]);

/** True when retrying could help (storage unavailable, rate limited, a write that did not land, a conflict after reconciling). */
export function isRetryable(err: CheckpointError): boolean {
  return !PERMANENT.has(err.reasonCode);
}

/** Options of {@link withRetry}. */
export interface RetryOptions {
  readonly clock: Clock;
  readonly attempts: number;
  readonly baseMs: number;
  readonly maxMs: number;
  /** Called before each wait. */
  readonly onRetry?: (attempt: number, delayMs: number, error: CheckpointError) => void;
}

/**
 * Runs `fn` up to `attempts` times with exponential backoff (`baseMs`, ×2, capped at
 * `maxMs`), on the injectable clock. Anything thrown becomes a `CheckpointError`
 * (`checkpoint_atomic_write_failed` for foreign errors). Permanent failures are not retried.
 */
export async function withRetry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (raw) {
      const err = toCheckpointError(raw, 'checkpoint_atomic_write_failed', 'checkpoint write failed');
      if (attempt >= options.attempts || !isRetryable(err)) throw err;
      const delayMs = Math.min(options.maxMs, options.baseMs * 2 ** (attempt - 1));
      options.onRetry?.(attempt, delayMs, err);
      await sleep(options.clock, delayMs);
    }
  }
}
