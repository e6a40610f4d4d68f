/**
 * The run index is rewritten from cached bytes of frozen entries and merged by
 * appending; both must give exactly what the plain definitions give.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from 'savepoint';
import { encodeRunIndex, mergeRunIndex, type RunIndex, type RunIndexEntry } from 'savepoint/toolkit';
import { createRunIndexEncoder } from '../../src/codec/run-index.js';

const entry = (sequence: number, note: string): RunIndexEntry => ({
  sequence,
  checkpoint_id: `cp_${sequence}_${note}`,
  trigger: 'step_boundary',
  timestamp: '2026-01-01T00:00:00.000Z',
  file_path: `checkpoints/r/history/${note}-${sequence}.json`,
  status: 'in_progress',
});

const entries = fc.array(fc.tuple(fc.integer({ min: 1, max: 500 }), fc.string({ maxLength: 6 }), fc.boolean()), { maxLength: 40 });

describe('run index encoding and merging', () => {
  it('property: encodeRunIndex is the canonical JSON of the index, frozen entries or not, and stays right when reused', async () => {
    fc.assert(
      fc.property(entries, fc.string({ minLength: 1, maxLength: 8 }), (list, runId) => {
        const checkpoints = list.map(([s, n, freeze]) => (freeze ? Object.freeze(entry(s, n)) : entry(s, n)));
        const index: RunIndex = {
          run_id: runId,
          checkpoint_count: checkpoints.length,
          checkpoints,
          last_updated: '2026-01-02T00:00:00.000Z',
        };
        const text = new TextDecoder().decode(encodeRunIndex(index));
        expect(text).toBe(canonicalJson(index));
        // Encoding again (bytes from the cache) gives the same text.
        expect(new TextDecoder().decode(encodeRunIndex({ ...index, last_updated: '2026-01-03T00:00:00.000Z' }))).toBe(
          canonicalJson({ ...index, last_updated: '2026-01-03T00:00:00.000Z' }),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('property: mergeRunIndex (append fast path or not) equals a merge by sequence, later entries winning', () => {
    fc.assert(
      fc.property(entries, entries, (a, b) => {
        const base = [...new Map(a.map(([s, n]) => [s, entry(s, n)])).values()].sort((x, y) => x.sequence - y.sequence);
        const added = b.map(([s, n]) => entry(s, n));
        const merged = mergeRunIndex(
          { run_id: 'r', checkpoint_count: base.length, checkpoints: base, last_updated: 'x' },
          added,
          '2026-01-01T00:00:00.000Z',
        );
        const expected = new Map<number, RunIndexEntry>();
        for (const e of [...base, ...added]) expected.set(e.sequence, e);
        const want = [...expected.values()].sort((x, y) => x.sequence - y.sequence);
        expect(merged.checkpoints).toEqual(want);
        expect(merged.checkpoint_count).toBe(want.length);
      }),
      { numRuns: 300 },
    );
  });

  it('property: the incremental encoder gives the bytes of encodeRunIndex over any sequence of indexes (drops, appends, reorders, mutable entries)', () => {
    // Each step derives the next list from the previous one, as a run's index changes:
    // drop a prefix or any entries, append new ones, replace the list, or mutate an entry that is not frozen.
    const step = fc.oneof(
      fc.record({ kind: fc.constant('drop' as const), count: fc.nat({ max: 6 }) }),
      fc.record({ kind: fc.constant('dropAt' as const), at: fc.nat({ max: 40 }) }),
      fc.record({ kind: fc.constant('append' as const), add: entries }),
      fc.record({ kind: fc.constant('replace' as const), add: entries }),
      fc.record({ kind: fc.constant('mutate' as const), at: fc.nat({ max: 40 }), note: fc.string({ maxLength: 4 }) }),
    );
    fc.assert(
      fc.property(entries, fc.array(step, { maxLength: 12 }), fc.string({ minLength: 1, maxLength: 4 }), (first, steps, runId) => {
        const make = (list: typeof first): RunIndexEntry[] =>
          list.map(([s, n, freeze]) => (freeze ? Object.freeze(entry(s, n)) : entry(s, n)));
        const encoder = createRunIndexEncoder();
        let list = make(first);
        const check = (i: number): void => {
          const index: RunIndex = {
            run_id: runId,
            checkpoint_count: list.length,
            checkpoints: list,
            last_updated: `2026-01-0${(i % 9) + 1}T00:00:00.000Z`,
          };
          expect(new TextDecoder().decode(encoder.encode(index))).toBe(new TextDecoder().decode(encodeRunIndex(index)));
        };
        check(0);
        steps.forEach((s, i) => {
          if (s.kind === 'drop') list = list.slice(s.count);
          else if (s.kind === 'dropAt') list = list.filter((_, j) => j !== s.at);
          else if (s.kind === 'append') list = [...list, ...make(s.add)];
          else if (s.kind === 'replace') list = make(s.add);
          else {
            const e = list[s.at];
            if (e && !Object.isFrozen(e)) (e as { file_path: string }).file_path = `moved/${s.note}`;
          }
          check(i + 1);
        });
      }),
      { numRuns: 300 },
    );
  });
});
