import type { Clock, TimerHandle } from '../contract/clock.js';
import { CheckpointError } from '../contract/errors.js';

/**
 * A {@link Clock} that a test moves by hand: time stands still until {@link advance} moves
 * it, so coalescing windows (3 s), heartbeats (120 s), stale-run ages and rate-limit waits
 * run in milliseconds and never flake.
 */
export interface ManualClock extends Clock {
  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way, earliest
   * first (ties in the order they were set). Before each timer and after the last, the
   * promise work already queued is let run, so what a timer starts (a heartbeat's write,
   * a retry) has finished before the next one fires and before `advance` resolves.
   * Time ends at exactly `now() + ms`, whatever the timers did.
   */
  advance(ms: number): Promise<void>;
  /** Timers set and neither fired nor cleared (a closed writer leaves none). */
  readonly pending: number;
}

/** Where a {@link manualClock} starts when no time is given: 2025-01-01T00:00:00.000Z. */
export const MANUAL_CLOCK_START = Date.UTC(2025, 0, 1);

/**
 * Lets queued promise work run: enough microtask turns for a chain of awaits on in-memory
 * storage, then one macrotask turn for anything that went through the event loop.
 */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise<void>((resolve) => globalThis.setTimeout(resolve, 0));
}

/**
 * A clock for tests, passed wherever savepoint takes a `clock` (`createWriter`,
 * `planResume`, `githubStorage`, …). Time starts at `start` (epoch milliseconds, a `Date`
 * or an RFC 3339 string) and moves only through `advance`. A timer set for 0 ms or less
 * needs no time to pass, so it fires on its own on the next event-loop turn, as on a real
 * clock (a retry with no backoff does not hang a test); every other timer waits for
 * `advance`.
 *
 * Works wherever the core works (no `node:` import). `advance` lets promise work settle
 * with microtask turns and a zero-delay platform timer; work waiting on real I/O (the
 * file system, a socket) may need more than that, so tests with `fsStorage` should await
 * the operation they started rather than rely on `advance` alone.
 *
 * @throws CheckpointError `checkpoint_config_invalid` when `start` is not a valid time,
 *   or when `advance` is given a negative or non-finite amount.
 *
 * @example
 * ```ts
 * import { createWriter, defaultProfile, memoryStorage } from 'savepoint';
 * import { manualClock } from 'savepoint/testing';
 *
 * const clock = manualClock('2026-01-01T00:00:00Z');
 * const writer = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'run-1', clock });
 * await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
 * await clock.advance(120_000); // the heartbeat fires and writes a `timer` snapshot
 * ```
 */
export function manualClock(start: number | Date | string = MANUAL_CLOCK_START): ManualClock {
  let now =
    typeof start === 'number'
      ? start
      : typeof start === 'string'
        ? Date.parse(start)
        : start instanceof Date
          ? start.getTime()
          : Number.NaN;
  if (!Number.isFinite(now)) {
    throw new CheckpointError('checkpoint_config_invalid', `manualClock: start must be a valid time, got ${String(start)}`);
  }
  let nextId = 0;
  // Kept sorted by due time, then by creation: the next timer to fire is always first.
  const timers: { readonly at: number; readonly id: number; readonly callback: () => void }[] = [];

  const fireNextDue = (until: number): boolean => {
    const next = timers[0];
    if (!next || next.at > until) return false;
    timers.shift();
    now = Math.max(now, next.at);
    next.callback();
    return true;
  };

  return {
    now: () => now,
    setTimeout(callback, ms): TimerHandle {
      const timer = { at: now + Math.max(0, Number.isFinite(ms) ? ms : 0), id: nextId++, callback };
      let i = timers.length;
      while (i > 0 && timers[i - 1]!.at > timer.at) i--;
      timers.splice(i, 0, timer);
      if (timer.at <= now) {
        globalThis.setTimeout(() => {
          const at = timers.indexOf(timer);
          if (at < 0) return; // cleared, or fired by an advance meanwhile
          timers.splice(at, 1);
          timer.callback();
        }, 0);
      }
      return timer;
    },
    clearTimeout(handle) {
      const i = timers.indexOf(handle as (typeof timers)[number]);
      if (i >= 0) timers.splice(i, 1);
    },
    async advance(ms) {
      if (!(Number.isFinite(ms) && ms >= 0)) {
        throw new CheckpointError('checkpoint_config_invalid', `manualClock.advance: ms must be a finite number ≥ 0, got ${String(ms)}`);
      }
      const end = now + ms;
      do await settle();
      while (fireNextDue(end));
      now = end;
    },
    get pending() {
      return timers.length;
    },
  };
}
