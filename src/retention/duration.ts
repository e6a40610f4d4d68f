import { CheckpointError } from '../contract/errors.js';
import { type RetentionDuration } from '../contract/retention-policy.js';

const UNIT_MS: Readonly<Record<string, number>> = {
  w: 7 * 86_400_000,
  d: 86_400_000,
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
};

/** The pattern a duration string must match (also used in the policy's JSON Schema). */
export const RETENTION_DURATION_PATTERN = '^(?:\\d+(?:\\.\\d+)?(?:ms|w|d|h|m|s))+$';
const WHOLE = new RegExp(RETENTION_DURATION_PATTERN);
const PAIR = /(\d+(?:\.\d+)?)(ms|w|d|h|m|s)/g;

/**
 * Milliseconds of a {@link RetentionDuration}. Throws `checkpoint_config_invalid` for a
 * negative, non-finite or malformed value.
 *
 * @example
 * ```ts
 * parseRetentionDuration('1d12h'); // 129_600_000
 * ```
 */
export function parseRetentionDuration(value: RetentionDuration, what = 'duration'): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw invalid(what);
    return value;
  }
  if (typeof value !== 'string' || !WHOLE.test(value)) throw invalid(what);
  let total = 0;
  for (const m of value.matchAll(PAIR)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  if (!Number.isFinite(total)) throw invalid(what);
  return total;
}

/** Short human form of a duration in milliseconds (`14d`, `1d12h`, `250ms`), for dry runs and logs. */
export function formatRetentionDuration(ms: number): string {
  if (ms === 0) return '0s';
  let rest = ms;
  let out = '';
  for (const unit of ['d', 'h', 'm', 's', 'ms'] as const) {
    const size = UNIT_MS[unit]!;
    const n = Math.floor(rest / size);
    if (n > 0) {
      out += `${n}${unit}`;
      rest -= n * size;
    }
  }
  return out || `${ms}ms`;
}

function invalid(what: string): CheckpointError {
  return new CheckpointError(
    'checkpoint_config_invalid',
    `${what} must be a non-negative number of milliseconds or a string like "14d", "24h", "1w2d"`,
    {
      details: { field: what },
    },
  );
}
