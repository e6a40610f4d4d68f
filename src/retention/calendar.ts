import { CheckpointError } from '../contract/errors.js';
import type { CalendarUnit } from '../contract/retention-policy.js';
import { assertStringArgument } from '../contract/arguments.js';

/*
 * Calendar buckets in an IANA time zone without a time-zone library: the platform's
 * Intl.DateTimeFormat gives the local wall-clock time of an instant; the bucket is
 * computed from that wall-clock time with plain arithmetic. A repeated local hour at a
 * DST fall-back is one bucket (restic does the same: it formats local time).
 */

const HOUR = 3_600_000;
const DAY = 86_400_000;

/** Throws `checkpoint_config_invalid` unless `timeZone` is an IANA zone the platform knows. */
export function assertTimeZone(timeZone: string, field = 'timeZone'): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone });
  } catch {
    throw new CheckpointError('checkpoint_config_invalid', `${field}: unknown IANA time zone`, { details: { field } });
  }
}

/** Year, month (1–12) and day of a count of days since 1970-01-01 (proleptic Gregorian). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  return { year: yoe + era * 400 + (month <= 2 ? 1 : 0), month, day };
}

/** Days since 1970-01-01 of a civil date. */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = year - (month <= 2 ? 1 : 0);
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const mp = month > 2 ? month - 3 : month + 9;
  const doy = Math.floor((153 * mp + 2) / 5) + day - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146_097 + doe - 719_468;
}

/**
 * The offset (local − UTC, in ms) of `timeZone` at each instant, memoized per UTC hour:
 * when the offsets at both ends of an hour agree the whole hour shares it (zones change
 * offset at most once an hour); otherwise the instant is formatted exactly.
 */
function offsetFunction(timeZone: string): (ms: number) => number {
  if (timeZone === 'UTC' || timeZone === 'Etc/UTC') return () => 0;
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
    era: 'short',
  });
  const exact = (ms: number): number => {
    const whole = Math.floor(ms / 1000) * 1000;
    let year = 0;
    let month = 1;
    let day = 1;
    let hour = 0;
    let minute = 0;
    let second = 0;
    let bc = false;
    for (const part of format.formatToParts(whole)) {
      switch (part.type) {
        case 'year':
          year = Number(part.value);
          break;
        case 'month':
          month = Number(part.value);
          break;
        case 'day':
          day = Number(part.value);
          break;
        case 'hour':
          hour = Number(part.value);
          break;
        case 'minute':
          minute = Number(part.value);
          break;
        case 'second':
          second = Number(part.value);
          break;
        case 'era':
          bc = part.value.startsWith('B');
          break;
        default:
          break;
      }
    }
    if (bc) year = 1 - year;
    const local = daysFromCivil(year, month, day) * DAY + hour * HOUR + minute * 60_000 + second * 1000;
    return local - whole;
  };
  const memo = new Map<number, number>();
  return (ms) => {
    const slot = Math.floor(ms / HOUR);
    let offset = memo.get(slot);
    if (offset === undefined) {
      const start = exact(slot * HOUR);
      offset = exact(slot * HOUR + HOUR - 1000) === start ? start : NaN;
      memo.set(slot, offset);
    }
    return Number.isNaN(offset) ? exact(ms) : offset;
  };
}

/**
 * Returns a function giving the calendar bucket of an instant: a number, equal for two
 * instants exactly when they fall in the same local hour / day / ISO week (Monday to
 * Sunday) / month / year of `timeZone`. Bucket numbers grow with local time.
 */
export function calendarBucketer(unit: CalendarUnit, timeZone: string): (ms: number) => number {
  assertStringArgument(timeZone, 'calendarBucketer', 'timeZone');
  if (!['hour', 'day', 'week', 'month', 'year'].includes(unit))
    throw new CheckpointError('checkpoint_config_invalid', 'calendarBucketer: unit must be hour, day, week, month or year');
  assertTimeZone(timeZone);
  const offset = offsetFunction(timeZone);
  switch (unit) {
    case 'hour':
      return (ms) => Math.floor((ms + offset(ms)) / HOUR);
    case 'day':
      return (ms) => Math.floor((ms + offset(ms)) / DAY);
    case 'week':
      // 1970-01-01 was a Thursday: day -3 is the Monday that starts week 0.
      return (ms) => Math.floor((Math.floor((ms + offset(ms)) / DAY) + 3) / 7);
    case 'month':
      return (ms) => {
        const { year, month } = civilFromDays(Math.floor((ms + offset(ms)) / DAY));
        return year * 12 + (month - 1);
      };
    case 'year':
      return (ms) => civilFromDays(Math.floor((ms + offset(ms)) / DAY)).year;
  }
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/**
 * A readable label of a bucket number from {@link calendarBucketer}: `2024-11-03T01`,
 * `2024-11-03`, `2025-W01` (ISO week-numbering year), `2024-11`, `2024`.
 */
export function calendarBucketLabel(unit: CalendarUnit, bucket: number): string {
  switch (unit) {
    case 'hour': {
      const { year, month, day } = civilFromDays(Math.floor(bucket / 24));
      return `${year}-${pad(month)}-${pad(day)}T${pad(((bucket % 24) + 24) % 24)}`;
    }
    case 'day': {
      const { year, month, day } = civilFromDays(bucket);
      return `${year}-${pad(month)}-${pad(day)}`;
    }
    case 'week': {
      const thursday = bucket * 7; // Monday (bucket * 7 - 3) + 3
      const { year } = civilFromDays(thursday);
      const week = Math.floor((thursday - daysFromCivil(year, 1, 1)) / 7) + 1;
      return `${year}-W${pad(week)}`;
    }
    case 'month':
      return `${Math.floor(bucket / 12)}-${pad((((bucket % 12) + 12) % 12) + 1)}`;
    case 'year':
      return String(bucket);
  }
}
