/**
 * Clocks for tests: savepoint/testing's manual clock from one reference moment, a clock whose
 * short timers fire at once, and a turn of the event loop.
 */
import type { Clock } from 'savepoint';
import type { TimerHandle } from 'savepoint/toolkit';
import { manualClock as publicManualClock, type ManualClock } from 'savepoint/testing';

export type { ManualClock };

/** The tests' reference moment: where their clocks start unless a test names its own. */
export const T0 = Date.parse('2026-01-15T14:00:00.000Z');

/** savepoint/testing's manualClock, starting at {@link T0}. */
export const manualClock = (start = T0): ManualClock => publicManualClock(start);

/** Yields to the event loop (crypto digests and storage calls settle outside the microtask queue). */
export const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * A clock whose time is set by hand and whose short timers (retry backoff, up to a minute)
 * fire at once; longer ones (heartbeat) never fire.
 */
export function instantTimerClock(start = T0): Clock & { set(ms: number): void; advanceBy(ms: number): void } {
  let t = start;
  return {
    now: () => t,
    setTimeout: (cb: () => void, ms: number) => globalThis.setTimeout(ms <= 60_000 ? cb : () => undefined, 0),
    clearTimeout: (h: TimerHandle) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
    set(ms: number) {
      t = ms;
    },
    advanceBy(ms: number) {
      t += ms;
    },
  };
}
