import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage } from 'savepoint';
import type { TimerHandle } from 'savepoint/toolkit';
import { manualClock } from '../support/clock.js';

const INTERVAL = 120_000;

/** The manual clock, counting the timer calls made through it. */
function countingClock(): ReturnType<typeof manualClock> & { sets: number; clears: number } {
  const inner = manualClock();
  const clock = Object.assign(Object.create(inner) as ReturnType<typeof manualClock>, { sets: 0, clears: 0 });
  clock.setTimeout = (cb: () => void, ms: number, options?: { background?: boolean }): TimerHandle => {
    clock.sets++;
    return inner.setTimeout(cb, ms, options);
  };
  clock.clearTimeout = (handle: TimerHandle): void => {
    clock.clears++;
    inner.clearTimeout(handle);
  };
  return clock;
}

describe('the heartbeat timer', () => {
  it('a checkpoint makes no timer call: 200 checkpoints set one timer and clear none', async () => {
    const clock = countingClock();
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'run-t', clock, lock: false });
    for (let i = 0; i < 200; i++) {
      const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } });
      expect(r.ok).toBe(true);
      await clock.advance(10);
    }
    expect({ sets: clock.sets, clears: clock.clears }).toEqual({ sets: 1, clears: 0 });
    await w.close();
  });

  it('property: the beat comes one interval after the last checkpoint, whatever came before it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: INTERVAL - 1 }), { minLength: 1, maxLength: 12 }), async (gaps) => {
        const clock = manualClock();
        const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'run-p', clock, lock: false });
        const beats: number[] = [];
        w.on('heartbeat', () => beats.push(clock.now()));
        let last = 0;
        for (const [i, gap] of gaps.entries()) {
          await clock.advance(gap);
          const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } });
          expect(r.ok).toBe(true);
          last = clock.now();
        }
        expect(beats).toEqual([]);
        await clock.advance(INTERVAL - 1);
        expect(beats).toEqual([]);
        await clock.advance(1);
        expect(beats).toEqual([last + INTERVAL]);
        await w.close();
      }),
      { numRuns: 30 },
    );
  });

  it('a terminal status disarms it, and the next in-progress checkpoint arms it again', async () => {
    const clock = manualClock();
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'run-d', clock, lock: false });
    let beats = 0;
    w.on('heartbeat', () => beats++);
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(1000);
    await w.checkpoint({ source: 'step_boundary', status: 'paused', payload: { step: 2 } });
    expect(clock.pending).toBe(0);
    await clock.advance(INTERVAL * 3);
    expect(beats).toBe(0);
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 3 } });
    await clock.advance(INTERVAL);
    expect(beats).toBe(1);
    await w.close();
  });
});
