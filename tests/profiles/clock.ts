import { manualClock as publicManualClock, type ManualClock } from 'savepoint/testing';

export type { ManualClock };

/** savepoint/testing's manualClock, starting at these tests' reference moment. */
export const manualClock = (start = Date.UTC(2026, 0, 15, 14, 0, 0)): ManualClock => publicManualClock(start);
