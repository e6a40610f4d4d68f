import type { Clock, TimerHandle } from '../contract/clock.js';
import type { CheckpointResult, HeartbeatPayload } from './types.js';

/** The heartbeat timer of one writer. */
export interface Heartbeat {
  /** (Re)arms the timer for a full interval from now when `active`; disarms it otherwise. */
  reset(active: boolean): void;
  /** Disarms for good (close). */
  stop(): void;
  /** True while a beat is scheduled. */
  readonly armed: boolean;
}

/** The heartbeat's timer and when the next beat is due. */
interface BeatTimer {
  handle: TimerHandle | undefined;
  /** When the beat is due (clock ms): a reset moves it, the timer firing before it re-arms for the rest. */
  dueAt: number;
  stopped: boolean;
}

/**
 * snapshot-lifecycle.md: "periodic heartbeat every 120 seconds while a plan is
 * in_progress". Whenever a new snapshot is planned with the active status the writer moves the
 * beat's due time to `intervalMs` from then, so a beat fires after `intervalMs` without any snapshot; a non-active
 * (terminal, paused) status disarms it, and `stop()` ends it on close. The timer goes
 * through the injectable {@link Clock}, so tests drive it with fake time.
 *
 * A reset while the timer runs only moves the due time: the timer, firing early, waits out the
 * rest. So a checkpoint makes no timer call (clearing and setting one cost more than the rest of
 * its bookkeeping, on the event loop every writer shares), one timer serves a whole interval.
 */
export function createHeartbeat(clock: Clock, intervalMs: number | false, beat: () => void): Heartbeat {
  const timer: BeatTimer = { handle: undefined, dueAt: 0, stopped: false };
  const disarm = (): void => {
    if (timer.handle !== undefined) clock.clearTimeout(timer.handle);
    timer.handle = undefined;
  };
  const arm = (ms: number): void => {
    timer.handle = clock.setTimeout(
      () => {
        timer.handle = undefined;
        if (timer.stopped) return;
        const left = timer.dueAt - clock.now();
        if (left > 0) arm(left);
        else beat();
      },
      ms,
      // A heartbeat alone must not keep a process alive that forgot close().
      { background: true },
    );
  };
  return {
    reset(active) {
      if (!active || timer.stopped || intervalMs === false) return disarm();
      timer.dueAt = clock.now() + intervalMs;
      if (timer.handle === undefined) arm(intervalMs);
    },
    stop() {
      timer.stopped = true;
      disarm();
    },
    get armed() {
      return timer.handle !== undefined;
    },
  };
}

/**
 * Hands a beat's result to its `heartbeatPayload`'s `settled` hook, if it has one (e.g.
 * `heartbeatWithOutcomes` puts back outcomes a failed or coalesced beat did not store). A
 * hook that throws is reported through `report`, never into the timer.
 */
export function settleBeat<P>(
  make: HeartbeatPayload<P> | undefined,
  result: CheckpointResult<P>,
  payload: P,
  report: (error: unknown) => void,
): void {
  if (typeof make?.settled !== 'function') return;
  try {
    make.settled(result, payload);
  } catch (error) {
    report(error);
  }
}
