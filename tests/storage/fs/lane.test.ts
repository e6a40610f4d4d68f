/**
 * The journal's background lane (src/storage/fs/lane.ts): at most `width` calls in flight,
 * the others in order of arrival — except calls through `first` (temp files a commit will
 * wait for), which go ahead of every waiting call.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLane } from '../../../src/storage/fs/lane.js';

/** A call that records when it starts and finishes when the test says so. */
function gate(log: string[], name: string): { call: () => Promise<void>; open: () => void; started: () => boolean } {
  let open!: () => void;
  let started = false;
  const done = new Promise<void>((r) => (open = r));
  return {
    call: async () => {
      started = true;
      log.push(name);
      await done;
    },
    open: () => open(),
    started: () => started,
  };
}
const turns = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('fsStorage background lane', () => {
  it('a call through `first` runs before calls that were waiting already', async () => {
    const lane = createLane(1);
    const log: string[] = [];
    const busy = gate(log, 'busy');
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const urgent = gate(log, 'urgent');
    const all = [lane(busy.call), lane(a.call), lane(b.call), lane.first(urgent.call)];
    await turns();
    expect(log).toEqual(['busy']);
    for (const g of [busy, urgent, a, b]) {
      g.open();
      await turns();
    }
    await Promise.all(all);
    expect(log).toEqual(['busy', 'urgent', 'a', 'b']);
  });

  it('never has more than `width` calls in flight, and runs every call, whichever entry (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.tuple(fc.boolean(), fc.nat({ max: 3 })), { minLength: 1, maxLength: 30 }),
        async (width, calls) => {
          const lane = createLane(width);
          let inFlight = 0;
          let most = 0;
          let ran = 0;
          await Promise.all(
            calls.map(([urgent, ticks]) =>
              (urgent ? lane.first : lane)(async () => {
                inFlight++;
                most = Math.max(most, inFlight);
                for (let i = 0; i < ticks; i++) await Promise.resolve();
                inFlight--;
                ran++;
              }),
            ),
          );
          expect(most).toBeLessThanOrEqual(width);
          expect(ran).toBe(calls.length);
        },
      ),
      { numRuns: 100 },
    );
  });
});
