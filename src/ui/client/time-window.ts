/**
 * The range of a run's time axis the detailed timeline shows: pure steps (zoom about a
 * point, pan, brush from pixels, clamp to the run) so the page's handlers only draw.
 */

/** A closed time range in epoch milliseconds, `from <= to`. */
export interface TimeWindow {
  readonly from: number;
  readonly to: number;
}

/** The narrowest window a zoom reaches: one second, so marks a second apart still separate. */
export const MIN_SPAN_MS = 1000;

/** `w` moved and shrunk to lie inside `full`, at least MIN_SPAN_MS wide (unless `full` is narrower). */
export function clampWindow(full: TimeWindow, w: TimeWindow): TimeWindow {
  const fullSpan = full.to - full.from;
  const span = Math.min(fullSpan, Math.max(MIN_SPAN_MS, w.to - w.from));
  const from = Math.min(Math.max(full.from, w.from), full.to - span);
  return { from, to: from + span };
}

/** `w` scaled by `factor` (< 1 zooms in) about time `at`, which keeps its place on screen. */
export function zoomWindow(full: TimeWindow, w: TimeWindow, factor: number, at: number = (w.from + w.to) / 2): TimeWindow {
  return clampWindow(full, { from: at - (at - w.from) * factor, to: at + (w.to - at) * factor });
}

/** `w` moved by `fraction` of its own width (negative: earlier). */
export function panWindow(full: TimeWindow, w: TimeWindow, fraction: number): TimeWindow {
  const shift = (w.to - w.from) * fraction;
  return clampWindow(full, { from: w.from + shift, to: w.to + shift });
}

/** The window a brush from pixel `x0` to `x1` selects on a strip of `width` pixels (with `pad` on each side) showing `full`. */
export function brushWindow(full: TimeWindow, width: number, pad: number, x0: number, x1: number): TimeWindow {
  const t = (x: number): number => full.from + ((x - pad) / Math.max(1, width - 2 * pad)) * (full.to - full.from);
  return clampWindow(full, { from: t(Math.min(x0, x1)), to: t(Math.max(x0, x1)) });
}

/** The pixel of time `t` on a strip of `width` pixels with `pad` on each side showing `w`. */
export function timeToX(w: TimeWindow, width: number, pad: number, t: number): number {
  return pad + ((t - w.from) / Math.max(1, w.to - w.from)) * (width - 2 * pad);
}

/** Whether `w` is the whole of `full` (nothing to reset). */
export function isWhole(full: TimeWindow, w: TimeWindow): boolean {
  return w.from <= full.from && w.to >= full.to;
}
