/**
 * Issue 15: the run index is rewritten from cached bytes of frozen entries and merged by
 * appending; both must give exactly what the plain definitions give.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from 'savepoint';
import { encodeRunIndex, mergeRunIndex, type RunIndex, type RunIndexEntry } from 'savepoint/toolkit';

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
        const index: RunIndex = { run_id: runId, checkpoint_count: checkpoints.length, checkpoints, last_updated: '2026-01-02T00:00:00.000Z' };
        const text = new TextDecoder().decode(encodeRunIndex(index));
        expect(text).toBe(canonicalJson(index));
        // Encoding again (bytes from the cache) gives the same text.
        expect(new TextDecoder().decode(encodeRunIndex({ ...index, last_updated: '2026-01-03T00:00:00.000Z' }))).toBe(canonicalJson({ ...index, last_updated: '2026-01-03T00:00:00.000Z' }));
      }),
      { numRuns: 200 },
    );
  });

  it('property: mergeRunIndex (append fast path or not) equals a merge by sequence, later entries winning', () => {
    fc.assert(
      fc.property(entries, entries, (a, b) => {
        const base = [...new Map(a.map(([s, n]) => [s, entry(s, n)])).values()].sort((x, y) => x.sequence - y.sequence);
        const added = b.map(([s, n]) => entry(s, n));
        const merged = mergeRunIndex({ run_id: 'r', checkpoint_count: base.length, checkpoints: base, last_updated: 'x' }, added, '2026-01-01T00:00:00.000Z');
        const expected = new Map<number, RunIndexEntry>();
        for (const e of [...base, ...added]) expected.set(e.sequence, e);
        const want = [...expected.values()].sort((x, y) => x.sequence - y.sequence);
        expect(merged.checkpoints).toEqual(want);
        expect(merged.checkpoint_count).toBe(want.length);
      }),
      { numRuns: 300 },
    );
  });
});
