/**
 * `threadForks` and `childrenByParent` over random checkpoint trees: every checkpoint with two
 * or more children is listed once with all of them, oldest first, and nothing else is.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { childrenByParent, threadForks, type ForkCheckpoint } from '../../src/langgraph/forks.js';

/** A random tree: checkpoint i (sequence i + 1) has a parent among 0..i-1, or none; some parents pruned. */
const treeArb = fc
  .array(fc.nat(), { minLength: 1, maxLength: 40 })
  .chain((picks) => fc.tuple(fc.constant(picks), fc.array(fc.boolean(), { minLength: picks.length, maxLength: picks.length })))
  .map(([picks, kept]) => {
    const all: ForkCheckpoint[] = picks.map((p, i) => ({
      checkpointId: `c${i}`,
      parentCheckpointId: i === 0 ? null : `c${p % i}`,
      step: i,
      source: i % 3 === 0 ? 'update' : 'loop',
      ts: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString(),
      sequence: i + 1,
    }));
    return { all, stored: all.filter((_, i) => kept[i] || i === picks.length - 1) };
  });

describe('threadForks (properties)', () => {
  it('lists exactly the parents with two or more stored children, each once, children oldest first, in the order the forks happened', () => {
    fc.assert(
      fc.property(treeArb, ({ stored }) => {
        const forks = threadForks([...stored].reverse());
        const expected = new Map<string, string[]>();
        for (const c of stored)
          if (c.parentCheckpointId) expected.set(c.parentCheckpointId, [...(expected.get(c.parentCheckpointId) ?? []), c.checkpointId]);
        const multi = [...expected].filter(([, kids]) => kids.length >= 2);
        expect(forks.map((f) => f.parent.checkpointId).sort()).toEqual(multi.map(([p]) => p).sort());
        for (const f of forks) {
          expect(f.children.map((c) => c.checkpointId)).toEqual(expected.get(f.parent.checkpointId));
          expect('sequence' in f.parent).toBe(stored.some((c) => c.checkpointId === f.parent.checkpointId));
        }
        for (let i = 1; i < forks.length; i++) expect(forks[i]!.children[1]!.sequence).toBeGreaterThan(forks[i - 1]!.children[1]!.sequence);
        const children = childrenByParent(stored);
        for (const [p, kids] of expected) expect(children.get(p)?.map((c) => c.checkpointId)).toEqual(kids);
      }),
    );
  });
});
