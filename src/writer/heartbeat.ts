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

/**
 * snapshot-lifecycle.md: "periodic heartbeat every 120 seconds while a plan is
 * in_progress". The writer re-arms it whenever a new snapshot is planned with the active
 * status, so a beat fires after `intervalMs` without any snapshot; a non-active
 * (terminal, paused) status disarms it, and `stop()` ends it on close. The timer goes
 * through the injectable {@link Clock}, so tests drive it with fake time.
 */
export function createHeartbeat(clock: Clock, intervalMs: number | false, beat: () => void): Heartbeat {
  let handle: TimerHandle | undefined;
  let stopped = false;
  const disarm = (): void => {
    if (handle !== undefined) clock.clearTimeout(handle);
    handle = undefined;
  };
  return {
    reset(active) {
      disarm();
      if (!active || stopped || intervalMs === false) return;
      handle = clock.setTimeout(
        () => {
          handle = undefined;
          if (!stopped) beat();
        },
        intervalMs,
        // A heartbeat alone must not keep a process alive that forgot close().
        { background: true },
      );
    },
    stop() {
      stopped = true;
      disarm();
    },
    get armed() {
      return handle !== undefined;
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
