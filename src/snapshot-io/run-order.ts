/**
 * Numbers for the snapshots of a run whose documents carry no sequence (a spec without one,
 * such as snapshot-lifecycle.md, written by another tool): the run's order decides them, so
 * they neither jump nor collide with the numbers savepoint's own snapshots carry. Pure; shared
 * by resume (`locate.ts`) and the writer's recovery, so both give a run the same numbers.
 */

/** A snapshot as the run's order sees it. */
export interface RunOrderEntry {
  readonly id: string;
  /** Its time (RFC 3339); the spec's order. */
  readonly createdAt: string;
  /** The number its document carries; `undefined` when it carries none (derived here). */
  readonly sequence?: number;
}

/** The number given to a snapshot whose document carries none. */
export interface DerivedNumber {
  readonly sequence: number;
  /**
   * True when a snapshot numbered by its own document is newer by time and carries a lower
   * number: no free number fitted between them (another tool wrote while savepoint's writer
   * held the run, or its clock is behind). Such a snapshot is older history, never the head.
   */
  readonly outOfOrder: boolean;
}

const timeOf = (createdAt: string): number => {
  const ms = Date.parse(createdAt);
  return Number.isNaN(ms) ? Number.NEGATIVE_INFINITY : ms;
};

interface Numbered {
  readonly at: number;
  readonly sequence: number;
}

/** Numbered snapshots by time, with the highest number up to each and the lowest number after each. */
function numberedTimeline(numbered: readonly Numbered[]): { at: number[]; maxUpTo: number[]; minAfter: number[] } {
  const sorted = [...numbered].sort((a, b) => a.at - b.at || a.sequence - b.sequence);
  const at = sorted.map((n) => n.at);
  const maxUpTo: number[] = [];
  const minAfter: number[] = new Array<number>(sorted.length);
  for (const [i, n] of sorted.entries()) maxUpTo.push(Math.max(maxUpTo[i - 1] ?? 0, n.sequence));
  for (let i = sorted.length - 1; i >= 0; i--) minAfter[i] = Math.min(minAfter[i + 1] ?? Number.POSITIVE_INFINITY, sorted[i]!.sequence);
  return { at, maxUpTo, minAfter };
}

/** Index of the first element of ascending `values` greater than `x`. */
function firstAbove(values: readonly number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Numbers the entries without a sequence by the run's order: by `createdAt`, then by id, each
 * takes the first number no other snapshot holds after the highest number of any snapshot not
 * newer than it. A run written by another tool alone is numbered 1, 2, 3…; a snapshot newer
 * than all of savepoint's comes after them; several of the same second stay distinct.
 * Entries with a number keep it; an id that has a number anywhere keeps that number (a
 * `latest` and its history copy are one snapshot). Returns the derived numbers by id.
 */
export function numberByRunOrder(entries: readonly RunOrderEntry[]): Map<string, DerivedNumber> {
  const carried = new Map<string, number>();
  for (const e of entries) if (e.sequence !== undefined && !carried.has(e.id)) carried.set(e.id, e.sequence);
  const numbered: Numbered[] = [];
  const seen = new Set<string>();
  for (const e of entries) {
    if (e.sequence === undefined || seen.has(e.id)) continue;
    seen.add(e.id);
    numbered.push({ at: timeOf(e.createdAt), sequence: e.sequence });
  }
  const held = new Set(numbered.map((n) => n.sequence));
  const derived = new Map<string, number>();
  for (const e of entries) if (!carried.has(e.id) && !derived.has(e.id)) derived.set(e.id, timeOf(e.createdAt));
  const order = [...derived.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));

  const timeline = numberedTimeline(numbered);
  const out = new Map<string, DerivedNumber>();
  let previous = 0;
  for (const [id, at] of order) {
    const after = firstAbove(timeline.at, at);
    let sequence = Math.max(previous, timeline.maxUpTo[after - 1] ?? 0) + 1;
    while (held.has(sequence)) sequence++;
    previous = sequence;
    out.set(id, { sequence, outOfOrder: (timeline.minAfter[after] ?? Number.POSITIVE_INFINITY) < sequence });
  }
  return out;
}
