import { sleep, type Clock } from '../contract/clock.js';
import { CheckpointError, toCheckpointError } from '../contract/errors.js';
import type { ReasonCode } from '../contract/reason-codes.js';

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
export function withRetry<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  return withRetryFrom(fn, options, 1);
}

/**
 * {@link withRetry} after a first attempt the caller made itself and saw fail with `firstError`:
 * the writer's hot path awaits `fn(1)` directly (an async wrapper costs a promise and a
 * microtask turn per checkpoint) and calls this only when it threw. Same attempts, delays,
 * `onRetry` calls and errors as `withRetry(fn, options)`.
 */
export async function retryAfterFirst<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions, firstError: unknown): Promise<T> {
  await backOff(firstError, 1, options);
  return withRetryFrom(fn, options, 2);
}

async function withRetryFrom<T>(fn: (attempt: number) => Promise<T>, options: RetryOptions, from: number): Promise<T> {
  for (let attempt = from; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (raw) {
      await backOff(raw, attempt, options);
    }
  }
}

/** After attempt `attempt` failed with `raw`: throws it when it is the last or permanent, else reports and waits. */
async function backOff(raw: unknown, attempt: number, options: RetryOptions): Promise<void> {
  const err = toCheckpointError(raw, 'checkpoint_atomic_write_failed', 'checkpoint write failed');
  if (attempt >= options.attempts || !isRetryable(err)) throw err;
  const delayMs = Math.min(options.maxMs, options.baseMs * 2 ** (attempt - 1));
  options.onRetry?.(attempt, delayMs, err);
  await sleep(options.clock, delayMs);
}
