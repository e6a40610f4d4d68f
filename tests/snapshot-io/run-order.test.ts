/**
 * `numberByRunOrder`: numbers for snapshots whose documents carry none (snapshot-lifecycle.md
 * has no sequence), from the run's order of time, beside the numbers savepoint's own
 * snapshots carry. Properties over random runs, then the spec-level examples.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { numberByRunOrder, type RunOrderEntry } from '../../src/snapshot-io/run-order.js';

const BASE = Date.UTC(2026, 0, 15, 14, 0, 0);
const at = (seconds: number): string => new Date(BASE + seconds * 1000).toISOString();

/** A run: numbered snapshots (distinct numbers, any times) and derived ones (no number), same-second times likely. */
const runArb = fc
  .record({
    numbered: fc.uniqueArray(fc.record({ sequence: fc.integer({ min: 1, max: 40 }), second: fc.integer({ min: 0, max: 30 }) }), {
      selector: (n) => n.sequence,
      maxLength: 15,
    }),
    derived: fc.uniqueArray(
      fc.record({ id: fc.stringMatching(/^cp_[a-z0-9]{1,4}_[a-z0-9]{1,3}$/), second: fc.integer({ min: 0, max: 30 }) }),
      {
        selector: (d) => d.id,
        maxLength: 15,
      },
    ),
  })
  .map(({ numbered, derived }) => ({
    numbered: numbered.map((n) => ({ id: `own-${n.sequence}`, createdAt: at(n.second), sequence: n.sequence })),
    derived: derived.map((d) => ({ id: d.id, createdAt: at(d.second) })),
  }));

const byTimeThenId = (a: RunOrderEntry, b: RunOrderEntry): number =>
  Date.parse(a.createdAt) - Date.parse(b.createdAt) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

describe('numberByRunOrder (properties)', () => {
  it('every number in the run is distinct; derived ones follow time (then id) order; the result does not depend on the input order', () => {
    fc.assert(
      fc.property(runArb, fc.context(), ({ numbered, derived }, ctx) => {
        const numbers = numberByRunOrder([...numbered, ...derived]);
        ctx.log(JSON.stringify([...numbers]));
        expect([...numbers.keys()].sort()).toEqual(derived.map((d) => d.id).sort());
        const all = [...numbered.map((n) => n.sequence), ...[...numbers.values()].map((n) => n.sequence)];
        expect(new Set(all).size).toBe(all.length);
        const ordered = [...derived].sort(byTimeThenId).map((d) => numbers.get(d.id)!.sequence);
        for (let i = 1; i < ordered.length; i++) expect(ordered[i]).toBeGreaterThan(ordered[i - 1]!);
        expect(numberByRunOrder([...derived, ...numbered].reverse())).toEqual(numbers);
      }),
    );
  });

  it('a derived number sits after every snapshot not newer than it; in order, before every newer numbered one; out of order exactly when one newer carries a lower number', () => {
    fc.assert(
      fc.property(runArb, ({ numbered, derived }) => {
        const numbers = numberByRunOrder([...numbered, ...derived]);
        for (const d of derived) {
          const { sequence, outOfOrder } = numbers.get(d.id)!;
          const t = Date.parse(d.createdAt);
          for (const n of numbered) if (Date.parse(n.createdAt) <= t) expect(n.sequence).toBeLessThan(sequence);
          const newerLower = numbered.some((n) => Date.parse(n.createdAt) > t && n.sequence < sequence);
          expect(outOfOrder).toBe(newerLower);
        }
      }),
    );
  });

  it('dense: a run of derived snapshots alone is numbered 1..n, and ones newer than all numbered come right after the highest', () => {
    fc.assert(
      fc.property(runArb, ({ numbered, derived }) => {
        const alone = numberByRunOrder(derived);
        expect([...derived].sort(byTimeThenId).map((d) => alone.get(d.id)!.sequence)).toEqual(derived.map((_, i) => i + 1));
        const later = derived.map((d) => ({ ...d, createdAt: new Date(Date.parse(d.createdAt) + 3_600_000).toISOString() }));
        const high = Math.max(0, ...numbered.map((n) => n.sequence));
        const mixed = numberByRunOrder([...numbered, ...later]);
        expect([...later].sort(byTimeThenId).map((d) => mixed.get(d.id)!.sequence)).toEqual(later.map((_, i) => high + i + 1));
        for (const n of mixed.values()) expect(n.outOfOrder).toBe(false);
      }),
    );
  });
});

describe('numberByRunOrder (examples)', () => {
  it('an id that carries a number anywhere keeps it (a latest and its history copy are one snapshot)', () => {
    const numbers = numberByRunOrder([
      { id: 'cp_a', createdAt: at(0), sequence: 7 },
      { id: 'cp_a', createdAt: at(0) },
      { id: 'cp_b', createdAt: at(1) },
      { id: 'cp_b', createdAt: at(1) },
    ]);
    expect([...numbers]).toEqual([['cp_b', { sequence: 8, outOfOrder: false }]]);
  });

  it('a foreign snapshot between two consecutive numbers of savepoint takes the first free one after them, out of order', () => {
    const numbers = numberByRunOrder([
      { id: 'own-1', createdAt: at(0), sequence: 1 },
      { id: 'own-2', createdAt: at(20), sequence: 2 },
      { id: 'cp_x', createdAt: at(10) },
      { id: 'cp_y', createdAt: at(30) },
    ]);
    expect(numbers.get('cp_x')).toEqual({ sequence: 3, outOfOrder: true });
    expect(numbers.get('cp_y')).toEqual({ sequence: 4, outOfOrder: false });
  });

  it("10,000 foreign snapshots older than 10,000 of savepoint's are numbered after them, in id order, all out of order", () => {
    const entries: RunOrderEntry[] = [];
    for (let i = 1; i <= 10_000; i++) entries.push({ id: `own-${i}`, createdAt: at(i), sequence: i });
    for (let i = 0; i < 10_000; i++) entries.push({ id: `cp_${i}`, createdAt: at(0.5) });
    const numbers = numberByRunOrder(entries);
    expect(numbers.get('cp_0')).toEqual({ sequence: 10_001, outOfOrder: true });
    expect(numbers.get('cp_9999')?.sequence).toBe(20_000);
    expect([...numbers.values()].every((n) => n.outOfOrder)).toBe(true);
  });
});
