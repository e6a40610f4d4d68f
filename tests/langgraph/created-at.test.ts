/**
 * createdAtText (src/langgraph/created-at.ts) remembers the last second it formatted, so the
 * saver's puts within one second join two strings instead of formatting a Date: it must give
 * what toRfc3339 gives, for any sequence of times, and refuse what toRfc3339 refuses.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createdAtText } from '../../src/langgraph/created-at.js';
import { toRfc3339 } from '../../src/model/clock.js';

/** The text, or the reason code of the error thrown. */
function outcome(format: () => string): { text: string } | { error: unknown } {
  try {
    return { text: format() };
  } catch (err) {
    return { error: (err as { reasonCode?: unknown }).reasonCode };
  }
}

describe('createdAtText', () => {
  it('property: any sequence of times (close together, across seconds, before 1970, fractional, far off) formats as toRfc3339 does', () => {
    const base = fc.integer({ min: -2e12, max: 2.5e14 });
    const time = fc.oneof(base, fc.tuple(base, fc.array(fc.integer({ min: -1500, max: 1500 }), { maxLength: 6 })).map(([b]) => b), fc.double({ min: -1e12, max: 1e13, noNaN: true }), fc.constantFrom(0, 999, 1000, -1, -1000, 8.64e15, -8.64e15));
    fc.assert(
      fc.property(base, fc.array(fc.oneof(time, fc.integer({ min: -1500, max: 1500 }).map((d) => ({ d }))), { maxLength: 30 }), (start, steps) => {
        let last = start;
        for (const step of steps) {
          const ms = typeof step === 'number' ? step : last + step.d;
          last = ms;
          expect(outcome(() => createdAtText(ms))).toEqual(outcome(() => toRfc3339(ms)));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('refuses a time toRfc3339 refuses, even right after a time in the same second', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1]) {
      createdAtText(1_700_000_000_000);
      createdAtText(8.64e15);
      expect(() => createdAtText(bad)).toThrow();
      expect(() => toRfc3339(bad)).toThrow();
    }
  });
});
