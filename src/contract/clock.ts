import { assertTimeMsArgument } from './arguments.js';
import { CheckpointError } from './errors.js';
/** Opaque handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/** Options of {@link Clock.setTimeout}. */
export interface TimerOptions {
  /**
   * A background timer does not keep a Node process alive (heartbeats, opportunistic
   * flushes): a program that forgot `close()` still exits. Timers that a pending promise
   * waits on (retry backoff, rate-limit waits) must not be background timers, or the
   * process could exit with that promise unsettled.
   * @default false
   */
  readonly background?: boolean;
}

/**
 * Time as savepoint sees it. Everything time-dependent (timestamps, coalescing windows,
 * heartbeats, rate-limit waits, retention ages) goes through a Clock, so tests can use
 * a fake one and run hours of schedule in milliseconds.
 */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/** The real clock: `Date.now` and the platform timers (background timers unref'd in Node). */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms, options) {
    const handle = globalThis.setTimeout(callback, ms) as unknown as { unref?: () => void };
    if (options?.background) handle.unref?.();
    return handle;
  },
  clearTimeout(handle) {
    globalThis.clearTimeout(handle as Parameters<typeof globalThis.clearTimeout>[0]);
  },
};

/**
 * RFC 3339 UTC timestamp with millisecond precision, e.g. `2025-12-14T15:30:00.000Z`.
 * Remembers the last millisecond (the writer formats it several times per checkpoint) and
 * the text of the last second: within it only the milliseconds change, so the next time
 * joins two strings instead of making a `Date` and its ISO text (the LangGraph
 * saver formats a time per put, between LangGraph's own steps, where that cost ~1 µs).
 */
export function toRfc3339(ms: number): string {
  if (ms === lastMs) return lastText;
  const within = ms - secondStart;
  if (within >= 0 && within < 1000 && Number.isInteger(within)) {
    lastText = `${secondPrefix}${within < 10 ? '00' : within < 100 ? '0' : ''}${within}Z`;
  } else {
    assertTimeMsArgument(ms, 'toRfc3339', 'ms');
    lastText = new Date(ms).toISOString();
    rememberSecond(ms, lastText);
  }
  lastMs = ms;
  return lastText;
}

/** The largest time a `Date` holds (ECMAScript: 8.64e15 ms from the epoch). */
const MAX_TIME_MS = 8.64e15;
let lastMs = Number.NaN;
let lastText = '';
let secondStart = Number.NaN;
let secondPrefix = '';

/**
 * Remembers the second of `ms` (formatted as `text`) for {@link toRfc3339}: only the usual
 * shape (`…:ss.sssZ`, a time after 1970 as an integer), and only a second whose every
 * millisecond is a valid time (the last one a Date holds is not).
 */
function rememberSecond(ms: number, text: string): void {
  const start = ms - (ms % 1000);
  if (Number.isInteger(ms) && ms >= 0 && start + 999 <= MAX_TIME_MS && text.endsWith('Z') && text.charCodeAt(text.length - 5) === 0x2e) {
    secondStart = start;
    secondPrefix = text.slice(0, -4);
  }
}

/** Milliseconds since the epoch of an RFC 3339 timestamp, or NaN. */
export function parseRfc3339(value: string): number {
  return Date.parse(value);
}

/** Resolves after `ms` on `clock`. */
export function sleep(clock: Clock, ms: number): Promise<void> {
  if (typeof clock !== 'object' || clock === null || typeof clock.setTimeout !== 'function')
    return Promise.reject(
      new CheckpointError('checkpoint_config_invalid', 'sleep: clock must be a Clock', { details: { function: 'sleep' } }),
    );
  if (typeof ms !== 'number' || Number.isNaN(ms))
    return Promise.reject(
      new CheckpointError('checkpoint_config_invalid', 'sleep: ms must be a number', { details: { function: 'sleep' } }),
    );
  return new Promise((resolve) => clock.setTimeout(resolve, Math.max(0, ms)));
}
