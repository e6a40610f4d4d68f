/**
 * The per-run bound's prune plan (`planPrune`): what it lets go, against the rule written out
 * plainly (sets of every kept entry and file), over random histories with batch files and kept
 * statuses; and that its work is in the entries past the bound, not in the `keep` it leaves.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { RunIndexEntry } from '../../src/codec/run-index.js';
import { planPrune, pruneSlack, type PerRunPolicy } from '../../src/writer/auto-retention.js';

/** The rule itself: never the newest `keep`, never the newest entry of a kept status, never an entry sharing a file with a kept one. */
function plainRule(history: readonly RunIndexEntry[], policy: PerRunPolicy): RunIndexEntry[] {
  if (history.length <= policy.keep + pruneSlack(policy.keep)) return [];
  const kept = new Set<RunIndexEntry>(history.slice(-policy.keep));
  for (const status of policy.keepStatuses) {
    const newest = [...history].reverse().find((e) => e.status === status);
    if (newest) kept.add(newest);
  }
  const keptFiles = new Set([...kept].map((e) => e.file_path));
  return history.filter((e) => !kept.has(e) && !keptFiles.has(e.file_path));
}

const STATUSES = ['in_progress', 'failed', 'completed', 'paused'] as const;

/** A run's history: ascending sequences, each in its own file or in a batch file with its neighbours. */
const history = fc
  .array(fc.record({ status: fc.constantFrom(...STATUSES), batchWithPrevious: fc.boolean() }), { maxLength: 120 })
  .map((specs) => {
    let file = '';
    return specs.map((s, i): RunIndexEntry => {
      if (!s.batchWithPrevious || i === 0) file = `checkpoints/r/history/cp_${i + 1}.json`;
      return {
        sequence: i + 1,
        checkpoint_id: `cp_${i + 1}`,
        trigger: 'step_boundary',
        timestamp: '2026-01-01T00:00:00Z',
        file_path: file,
        status: s.status,
      };
    });
  });

const policy = fc.record({
  keep: fc.integer({ min: 1, max: 60 }),
  keepStatuses: fc.subarray([...STATUSES]),
  preserveRunIds: fc.constant(new Set<string>()),
});

describe('planPrune', () => {
  it('property: lets go exactly what the rule lets go, in history order', () => {
    fc.assert(
      fc.property(history, policy, (h, p) => {
        expect(planPrune(h, p)).toEqual(plainRule(h, p));
      }),
      { numRuns: 500 },
    );
  });

  describe('its work', () => {
    const RealSet = globalThis.Set;
    afterEach(() => {
      globalThis.Set = RealSet;
    });

    it('is in the entries past the bound: no set of the kept entries is built', () => {
      const keep = 1000;
      const entries: RunIndexEntry[] = Array.from({ length: keep + pruneSlack(keep) + 1 }, (_, i) => ({
        sequence: i + 1,
        checkpoint_id: `cp_${i + 1}`,
        trigger: 'step_boundary',
        timestamp: '2026-01-01T00:00:00Z',
        file_path: `checkpoints/r/history/cp_${i + 1}.json`,
        status: i === 3 ? 'failed' : 'in_progress',
      }));
      let added = 0;
      globalThis.Set = class CountingSet<T> extends RealSet<T> {
        override add(value: T): this {
          added++;
          return super.add(value);
        }
      } as SetConstructor;
      const leaving = planPrune(entries, { keep, keepStatuses: ['failed', 'completed'], preserveRunIds: new RealSet() });
      globalThis.Set = RealSet;
      expect(leaving).toHaveLength(entries.length - keep - 1);
      expect(added).toBeLessThanOrEqual(entries.length - keep);
    });
  });
});
