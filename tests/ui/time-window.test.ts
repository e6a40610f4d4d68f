import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MIN_SPAN_MS,
  brushWindow,
  clampWindow,
  isWhole,
  panWindow,
  timeToX,
  zoomWindow,
  type TimeWindow,
} from '../../src/ui/client/time-window.js';

const full: TimeWindow = { from: 1_000_000, to: 1_000_000 + 3_600_000 };
const arbFull = fc
  .tuple(fc.integer({ min: 0, max: 2e12 }), fc.integer({ min: 0, max: 1e9 }))
  .map(([from, span]): TimeWindow => ({ from, to: from + span }));
const arbWindow = (f: TimeWindow) =>
  fc.tuple(fc.double({ min: -2, max: 3, noNaN: true }), fc.double({ min: -2, max: 3, noNaN: true })).map(([a, b]): TimeWindow => {
    const span = f.to - f.from;
    return { from: f.from + Math.min(a, b) * span, to: f.from + Math.max(a, b) * span };
  });
const inside = (f: TimeWindow, w: TimeWindow): boolean =>
  w.from >= f.from && w.to <= f.to + 1e-6 * Math.max(1, f.to) && w.to - w.from >= Math.min(MIN_SPAN_MS, f.to - f.from) - 1e-6;

describe('the timeline window', () => {
  it('every step keeps the window inside the run and at least the minimum span wide', () => {
    fc.assert(
      fc.property(
        arbFull.chain((f) =>
          fc.tuple(
            fc.constant(f),
            arbWindow(f),
            fc.double({ min: 0.01, max: 100, noNaN: true }),
            fc.double({ min: -3, max: 3, noNaN: true }),
          ),
        ),
        ([f, w, factor, fraction]) => {
          expect(inside(f, clampWindow(f, w))).toBe(true);
          const c = clampWindow(f, w);
          expect(inside(f, zoomWindow(f, c, factor))).toBe(true);
          expect(inside(f, panWindow(f, c, fraction))).toBe(true);
        },
      ),
    );
  });

  it('zooming keeps the time under the pointer in its place, and zooming out far enough is the whole run', () => {
    const w = { from: full.from + 600_000, to: full.from + 1_800_000 };
    const at = full.from + 900_000;
    const z = zoomWindow(full, w, 0.5, at);
    expect(z).toEqual({ from: full.from + 750_000, to: full.from + 1_350_000 });
    expect(timeToX(z, 1000, 8, at)).toBeCloseTo(timeToX(w, 1000, 8, at), 6);
    expect(isWhole(full, zoomWindow(full, z, 1000))).toBe(true);
    expect(isWhole(full, z)).toBe(false);
  });

  it('zooming in stops at one second', () => {
    let w: TimeWindow = full;
    for (let i = 0; i < 40; i++) w = zoomWindow(full, w, 0.5);
    expect(w.to - w.from).toBe(MIN_SPAN_MS);
  });

  it('panning stops at the ends of the run without changing the span', () => {
    const w = { from: full.from + 600_000, to: full.from + 1_200_000 };
    expect(panWindow(full, w, -5)).toEqual({ from: full.from, to: full.from + 600_000 });
    expect(panWindow(full, w, 50)).toEqual({ from: full.to - 600_000, to: full.to });
    expect(panWindow(full, w, 0.5)).toEqual({ from: full.from + 900_000, to: full.from + 1_500_000 });
  });

  it('a brush maps its pixels back to the times drawn there, in either direction', () => {
    // 1016 pixels with 8 on each side: 1000 pixels for the hour, 3.6 s each.
    expect(brushWindow(full, 1016, 8, 108, 208)).toEqual({ from: full.from + 360_000, to: full.from + 720_000 });
    expect(brushWindow(full, 1016, 8, 208, 108)).toEqual(brushWindow(full, 1016, 8, 108, 208));
    expect(brushWindow(full, 1016, 8, -50, 5000)).toEqual(full);
    fc.assert(
      fc.property(fc.integer({ min: 8, max: 1008 }), fc.integer({ min: 8, max: 1008 }), (a, b) => {
        fc.pre(Math.abs(a - b) >= 1);
        const w = brushWindow(full, 1016, 8, a, b);
        expect(timeToX(full, 1016, 8, w.from)).toBeCloseTo(Math.min(a, b), 6);
        expect(timeToX(full, 1016, 8, w.to)).toBeCloseTo(Math.max(a, b), 6);
      }),
    );
  });

  it('a run of one instant has a window of one instant', () => {
    const point = { from: 5, to: 5 };
    expect(zoomWindow(point, point, 0.5)).toEqual(point);
    expect(panWindow(point, point, 1)).toEqual(point);
    expect(isWhole(point, point)).toBe(true);
  });
});
