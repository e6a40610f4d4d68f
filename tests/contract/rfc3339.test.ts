/**
 * toRfc3339 remembers the last second it formatted, so the times within one second (the
 * LangGraph saver's puts, the writer's checkpoints) join two strings instead of formatting a
 * Date: it must give what a plain `new Date(ms).toISOString()` gives, for any sequence of
 * times, and refuse what the argument check refuses.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertTimeMsArgument } from '../../src/contract/arguments.js';
import { toRfc3339 } from '../../src/contract/clock.js';

/** The formatting without any remembered text: checked, then a Date's ISO text. */
function plainRfc3339(ms: number): string {
  assertTimeMsArgument(ms, 'toRfc3339', 'ms');
  return new Date(ms).toISOString();
}

/** The text, or the reason code of the error thrown. */
function outcome(format: () => string): { text: string } | { error: unknown } {
  try {
    return { text: format() };
  } catch (err) {
    return { error: (err as { reasonCode?: unknown }).reasonCode };
  }
}

describe('toRfc3339 (the remembered second)', () => {
  it('property: any sequence of times (close together, across seconds, before 1970, fractional, far off) formats as a plain Date does', () => {
    const base = fc.integer({ min: -2e12, max: 2.5e14 });
    const time = fc.oneof(
      base,
      fc.tuple(base, fc.array(fc.integer({ min: -1500, max: 1500 }), { maxLength: 6 })).map(([b]) => b),
      fc.double({ min: -1e12, max: 1e13, noNaN: true }),
      fc.constantFrom(0, 999, 1000, -1, -1000, 8.64e15, -8.64e15),
    );
    fc.assert(
      fc.property(
        base,
        fc.array(
          fc.oneof(
            time,
            fc.integer({ min: -1500, max: 1500 }).map((d) => ({ d })),
          ),
          { maxLength: 30 },
        ),
        (start, steps) => {
          let last = start;
          for (const step of steps) {
            const ms = typeof step === 'number' ? step : last + step.d;
            last = ms;
            expect(outcome(() => toRfc3339(ms))).toEqual(outcome(() => plainRfc3339(ms)));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('refuses a time the argument check refuses, even right after a time in the same second', () => {
    for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, 8.64e15 + 1]) {
      toRfc3339(1_700_000_000_000);
      toRfc3339(8.64e15);
      expect(() => toRfc3339(bad)).toThrow();
      expect(() => plainRfc3339(bad)).toThrow();
    }
  });
});
