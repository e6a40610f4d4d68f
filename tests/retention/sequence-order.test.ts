import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, keepLast, listAll, memoryStorage, planRetention, runRetention } from 'savepoint';
import { type InventoryRun, type InventorySnapshot, type RetentionInventory } from 'savepoint/toolkit';
import { manualClock } from 'savepoint/testing';

// Snapshots that share a millisecond were once ordered by their random id, so
// keepLast(2) could delete a newer snapshot and keep an older one.

const NOW = Date.UTC(2025, 5, 15, 12);
const idArb = fc.stringMatching(/^[0-9a-z]{10}$/);

/** A run of `ids.length` snapshots (sequence i + 1) whose creation times come from `times` (few distinct values: many ties). */
function runOf(ids: readonly string[], times: readonly number[]): InventoryRun {
  const dir = 'checkpoints/run-a';
  const snapshots: InventorySnapshot[] = ids.map((suffix, i) => {
    const at = NOW - 60_000 - times[i]!;
    const id = `cp_20250615T115900000Z_${suffix}`;
    return {
      runId: 'run-a',
      id,
      sequence: i + 1,
      createdAt: new Date(at).toISOString(),
      createdAtMs: at,
      status: 'in_progress',
      files: [{ key: `${dir}/history/${id}.json`, version: '1', size: 100, compressed: false }],
      batches: [],
      parts: [],
      latest: i === ids.length - 1,
      origin: 'index' as const,
    };
  });
  return {
    runId: 'run-a',
    snapshots,
    latest: { key: `${dir}/latest.json`, version: '1', size: 100, readable: true, snapshotId: snapshots.at(-1)!.id },
    batches: [],
    orphanParts: [],
    unreadable: [],
  };
}

const inventoryOf = (run: InventoryRun): RetentionInventory => ({
  profile: { name: 'snapshotLifecycle', compressHistory: false },
  runs: [run],
  preservedRuns: [],
  preservedRunsReadable: true,
  problems: [],
});

describe('retention orders a run by sequence', () => {
  it('property: with arbitrary equal createdAt, keepLast(n) keeps exactly the n highest sequences', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(idArb, { minLength: 1, maxLength: 30 }).chain((ids) =>
          fc.record({
            ids: fc.constant(ids),
            // Times from at most three distinct milliseconds, in any order against the sequence.
            times: fc.array(fc.constantFrom(0, 1, 2), { minLength: ids.length, maxLength: ids.length }),
            n: fc.integer({ min: 1, max: ids.length }),
            shuffle: fc.boolean(),
          }),
        ),
        ({ ids, times, n, shuffle }) => {
          const run = runOf(ids, times);
          // The planner must not rely on the inventory's order either.
          const given = shuffle ? { ...run, snapshots: [...run.snapshots].reverse() } : run;
          const plan = planRetention(inventoryOf(given), { rules: [keepLast(n)] }, NOW);
          const kept = plan.snapshots
            .filter((p) => p.action === 'keep')
            .map((p) => p.snapshot.sequence)
            .sort((a, b) => a - b);
          const expected = Array.from({ length: n }, (_, k) => ids.length - n + 1 + k);
          expect(kept).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('example: snapshots sharing one millisecond, keepLast(2) keeps sequences 7 and 8 of 8', () => {
    // Ids whose random order is the reverse of the sequence: the old tie-break kept 1 and 2.
    const ids = ['zz', 'yy', 'xx', 'ww', 'vv', 'uu', 'tt', 'ss'].map((s) => s.repeat(5));
    const plan = planRetention(inventoryOf(runOf(ids, new Array(8).fill(0))), { rules: [keepLast(2)] }, NOW);
    expect(plan.snapshots.filter((p) => p.action === 'keep').map((p) => p.snapshot.sequence)).toEqual([7, 8]);
    expect(plan.snapshots.filter((p) => p.action === 'delete').map((p) => p.snapshot.sequence)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('example: an age limit only removes, so raising it never deletes more (a clock that stepped back)', () => {
    // Sequence 3 carries an older time than 1 and 2 (the clock stepped back by two days).
    const times = [0, 0, 2 * 86_400_000];
    const keptWith = (maxAge: '1d' | '7d'): number[] =>
      planRetention(
        inventoryOf(
          runOf(
            ['a', 'b', 'c'].map((c) => c.repeat(10)),
            times,
          ),
        ),
        { rules: [keepLast(2, { maxAge })] },
        NOW,
      )
        .snapshots.filter((p) => p.action === 'keep' && p.reasons.some((r) => r.startsWith('keep-last')))
        .map((p) => p.snapshot.sequence);
    // The two highest sequences are 2 and 3; 3 is older than a day, so only 2 is kept by the rule.
    expect(keptWith('1d')).toEqual([2]);
    // Raising the limit adds 3 and removes nothing (letting 1 take 3's place at 1d made 1 flip to delete at 7d).
    expect(keptWith('7d')).toEqual([2, 3]);
  });

  it('end to end: a writer whose clock does not move, then runRetention(keepLast(2)), leaves the two newest', async () => {
    // Real writer, random ids, one millisecond for every snapshot: 10 runs make the old
    // order (random ids) fail with certainty short of 1 in 28^10.
    for (let trial = 0; trial < 10; trial++) {
      const storage = memoryStorage();
      const clock = manualClock(NOW - 60_000);
      const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-a', clock });
      for (let i = 1; i <= 8; i++) {
        const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: i } });
        expect(r.ok).toBe(true);
      }
      await writer.close();
      await runRetention({ storage, profile: defaultProfile, policy: { rules: [keepLast(2)] }, clock: manualClock(NOW), log: false });
      const left = await listAll(storage, 'checkpoints/run-a/history/');
      const sequences: number[] = [];
      for (const { key } of left) {
        const doc = JSON.parse(new TextDecoder().decode((await storage.get(key))!.bytes)) as {
          sequence?: number;
          sequence_number?: number;
        };
        sequences.push(doc.sequence ?? doc.sequence_number ?? -1);
      }
      expect(sequences.sort((a, b) => a - b)).toEqual([7, 8]);
    }
  });
});
