/**
 * savepoint/testing's manualClock: the clock users hand to createWriter / planResume in
 * their own unit tests, so its ordering and settling rules are what those tests rely on.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createWriter, defaultProfile, isCheckpointError, listAll, memoryStorage } from 'savepoint';
import { manualClock, MANUAL_CLOCK_START } from 'savepoint/testing';

const realTurn = (): Promise<void> => new Promise((r) => setTimeout(r, 5));

describe('manualClock', () => {
  it('starts at the given time (number, Date or RFC 3339) and stands still', async () => {
    expect(manualClock().now()).toBe(MANUAL_CLOCK_START);
    expect(manualClock(1234).now()).toBe(1234);
    expect(manualClock(new Date('2026-03-01T00:00:00Z')).now()).toBe(Date.UTC(2026, 2, 1));
    const clock = manualClock('2026-03-01T10:00:00.500Z');
    await realTurn();
    expect(clock.now()).toBe(Date.UTC(2026, 2, 1, 10, 0, 0, 500));
  });

  it('refuses an invalid start or advance with checkpoint_config_invalid', async () => {
    for (const bad of [Number.NaN, 'not a date', new Date('nope'), Infinity]) {
      let caught: unknown;
      try {
        manualClock(bad);
      } catch (err) {
        caught = err;
      }
      expect(isCheckpointError(caught) && caught.reasonCode).toBe('checkpoint_config_invalid');
    }
    const clock = manualClock();
    for (const bad of [-1, Number.NaN, Infinity]) {
      await expect(clock.advance(bad)).rejects.toMatchObject({ reasonCode: 'checkpoint_config_invalid' });
    }
    expect(clock.now()).toBe(MANUAL_CLOCK_START);
  });

  it('fires due timers in due order (ties in the order set), each seeing its own due time', async () => {
    const clock = manualClock(0);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`c@${clock.now()}`), 300);
    clock.setTimeout(() => seen.push(`a@${clock.now()}`), 100);
    clock.setTimeout(() => seen.push(`b@${clock.now()}`), 100);
    clock.setTimeout(() => seen.push(`late@${clock.now()}`), 1000);
    await clock.advance(500);
    expect(seen).toEqual(['a@100', 'b@100', 'c@300']);
    expect(clock.now()).toBe(500);
    expect(clock.pending).toBe(1);
    await clock.advance(500);
    expect(seen.at(-1)).toBe('late@1000');
    expect(clock.pending).toBe(0);
  });

  it('a cleared timer never fires; clearing an unknown handle is harmless', async () => {
    const clock = manualClock(0);
    let fired = 0;
    const h = clock.setTimeout(() => fired++, 10);
    clock.clearTimeout(h);
    clock.clearTimeout(h);
    clock.clearTimeout({});
    await clock.advance(100);
    expect(fired).toBe(0);
    expect(clock.pending).toBe(0);
  });

  it('a timer set by a timer fires in the same advance when it falls due inside it', async () => {
    const clock = manualClock(0);
    const seen: number[] = [];
    clock.setTimeout(() => {
      seen.push(clock.now());
      clock.setTimeout(() => seen.push(clock.now()), 50);
    }, 100);
    await clock.advance(200);
    expect(seen).toEqual([100, 150]);
  });

  it('lets the promise work a timer starts finish before the next timer and before advance resolves', async () => {
    const clock = manualClock(0);
    const log: string[] = [];
    const chain = async (name: string): Promise<void> => {
      for (let i = 0; i < 5; i++) await Promise.resolve();
      await new Promise<void>((r) => setTimeout(r, 0));
      log.push(`${name} done`);
    };
    clock.setTimeout(() => {
      log.push('first');
      void chain('first');
    }, 10);
    clock.setTimeout(() => log.push('second'), 20);
    await clock.advance(30);
    expect(log).toEqual(['first', 'first done', 'second']);
  });

  it('a 0 ms timer fires on its own (no time has to pass); a longer one waits for advance', async () => {
    const clock = manualClock(0);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push('now'), 0);
    clock.setTimeout(() => seen.push('negative'), -5);
    const cleared = clock.setTimeout(() => seen.push('cleared'), 0);
    clock.clearTimeout(cleared);
    clock.setTimeout(() => seen.push('later'), 1);
    await realTurn();
    expect(seen).toEqual(['now', 'negative']);
    expect(clock.now()).toBe(0);
    await clock.advance(1);
    expect(seen).toEqual(['now', 'negative', 'later']);
  });

  it('property: every timer fires exactly once, never early, in (due, set) order, at its due time', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 1000 }), { maxLength: 30 }),
        fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 1, maxLength: 8 }),
        async (delays, steps) => {
          const clock = manualClock(0);
          const fired: { index: number; at: number }[] = [];
          delays.forEach((d, index) => clock.setTimeout(() => fired.push({ index, at: clock.now() }), d));
          let until = 0;
          for (const step of steps) {
            await clock.advance(step);
            until += step;
            expect(clock.now()).toBe(until);
            const due = delays.map((d, index) => ({ index, at: d })).filter((t) => t.at <= until);
            due.sort((a, b) => a.at - b.at || a.index - b.index);
            // 0 ms timers may fire on their own before the first advance; all others only through it.
            expect(fired).toEqual(due);
            expect(clock.pending).toBe(delays.length - due.length);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('drives a writer: the 120 s heartbeat writes a timer snapshot, close() leaves no timer behind', async () => {
    const storage = memoryStorage();
    const clock = manualClock('2026-01-01T00:00:00Z');
    // heartbeatPayload: a beat's own state, which the default profile stores on every beat.
    const writer = createWriter({
      storage,
      profile: defaultProfile,
      runId: 'run-1',
      clock,
      heartbeatPayload: (last) => ({ ...(last as object), beat: true }),
    });
    await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(119_000);
    expect((await listAll(storage, 'checkpoints/run-1/history/')).length).toBe(1);
    await clock.advance(1_000);
    await writer.flush();
    const history = await listAll(storage, 'checkpoints/run-1/history/');
    expect(history.length).toBe(2);
    await writer.close();
    expect(clock.pending).toBe(0);
  });
});
