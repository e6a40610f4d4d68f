import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeHead, encodeHead, type Head, type InOrder } from '../../src/langgraph/head.js';
import { claimedInOrder, idHash, inOrderFirst, withoutLeaving, type HeadBefore } from '../../src/langgraph/in-order.js';

const id = (n: number): string => `cp-${String(n).padStart(6, '0')}`;
const rangeOf = (ids: readonly string[], fromSequence: number): InOrder => ({
  fromId: ids[0]!,
  fromSequence,
  idsHash: ids.reduce((h, x) => (h ^ idHash(x)) >>> 0, 0),
});

describe("a head's in-order range", () => {
  it('a new run starts one at its first claim; a claim above the top id at the next sequence extends it', () => {
    const first = claimedInOrder(undefined, undefined, id(10), 1)!;
    expect(first).toEqual(rangeOf([id(10)], 1));
    const before: HeadBefore = { sequence: 1, topId: id(10), inOrder: first };
    expect(claimedInOrder(before, undefined, id(20), 2)).toEqual(rangeOf([id(10), id(20)], 1));
  });

  it('a claim at or below the top id ends it (an old id put again, a replica whose clock is behind)', () => {
    const before: HeadBefore = { sequence: 2, topId: id(20), inOrder: rangeOf([id(10), id(20)], 1) };
    expect(claimedInOrder(before, undefined, id(15), 3)).toBeUndefined();
    expect(claimedInOrder(before, undefined, id(20), 3)).toBeUndefined();
    // A head without a top id (or a run stored before heads holding a greater id) starts none.
    expect(claimedInOrder({ ...before, topId: undefined }, undefined, id(30), 3)).toBeUndefined();
    expect(claimedInOrder(undefined, id(40), id(30), 1)).toBeUndefined();
  });

  it('a claim that skips a sequence, or follows a head without a range, starts a new one at itself', () => {
    const before: HeadBefore = { sequence: 2, topId: id(20), inOrder: rangeOf([id(10), id(20)], 1) };
    expect(claimedInOrder(before, undefined, id(30), 4)).toEqual(rangeOf([id(30)], 4));
    expect(claimedInOrder({ ...before, inOrder: undefined }, undefined, id(30), 3)).toEqual(rangeOf([id(30)], 3));
  });

  it('checkpoints leaving from its start move it to the oldest that stays, with its sequence; older ones leaving leave it as it is', () => {
    const range = rangeOf([id(10), id(20), id(30)], 5);
    expect(withoutLeaving(range, [id(10), id(20)], { id: id(30), sequence: 7 })).toEqual(rangeOf([id(30)], 7));
    expect(withoutLeaving(range, [id(1), id(2)], { id: id(10), sequence: 5 })).toBe(range);
    // The sequence of the one that stays is not known: no range.
    expect(withoutLeaving(range, [id(10)], { id: id(20), sequence: undefined })).toBeUndefined();
  });

  it('tells the listed ids’ sequences only when they are exactly the checkpoints claimed since its start', () => {
    const ids = [id(1), id(10), id(20), id(30)];
    const head: Head = { checkpointId: id(30), sequence: 9, topId: id(30), inOrder: rangeOf([id(10), id(20), id(30)], 7) };
    expect(inOrderFirst(ids, head)).toBe(1);
    // One deleted by other means (a retention rule): fewer than the sequences claimed.
    expect(inOrderFirst([id(1), id(10), id(30)], head)).toBeUndefined();
    // One deleted and another added: as many, but not the same ids.
    expect(inOrderFirst([id(10), id(25), id(30)].slice(0), { ...head, inOrder: rangeOf([id(5), id(20), id(30)], 7) })).toBeUndefined();
    expect(inOrderFirst([id(1), id(10), id(25), id(30)], head)).toBeUndefined();
    // The newest listed is not the head's checkpoint.
    expect(inOrderFirst([...ids, id(40)], head)).toBeUndefined();
    expect(inOrderFirst(ids, { ...head, inOrder: undefined })).toBeUndefined();
  });

  it('property: encoded and decoded again, a head keeps its range; one that cannot belong to it is dropped', () => {
    const anId = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,40}$/);
    fc.assert(
      fc.property(anId, anId, fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 1, max: 2 ** 40 }), fc.nat(), (a, b, s, t, hash) => {
        const [low, high] = a <= b ? [a, b] : [b, a];
        const [from, sequence] = s <= t ? [s, t] : [t, s];
        const head: Head = { checkpointId: high, sequence, topId: high, inOrder: { fromId: low, fromSequence: from, idsHash: hash >>> 0 } };
        expect(decodeHead(encodeHead(head), 'head')).toEqual(head);
        // A range starting above the head's checkpoint, or after its sequence, is no range of this head.
        if (low < high)
          expect(
            decodeHead(encodeHead({ ...head, checkpointId: low, topId: high, inOrder: { ...head.inOrder!, fromId: high } }), 'h')?.inOrder,
          ).toBeUndefined();
        if (from < sequence)
          expect(
            decodeHead(encodeHead({ ...head, sequence: from, inOrder: { ...head.inOrder!, fromSequence: sequence } }), 'h')?.inOrder,
          ).toBeUndefined();
      }),
    );
  });
});

/** What can happen to a run between a saver's claims. */
type Step =
  | { readonly kind: 'claim'; readonly meets: boolean; readonly behind: boolean; readonly skip: boolean; readonly keep: number | undefined }
  | { readonly kind: 'retention'; readonly at: number }
  | { readonly kind: 'added'; readonly at: number }
  | { readonly kind: 'prune'; readonly keep: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('claim' as const),
      meets: fc.boolean(),
      behind: fc.boolean(),
      skip: fc.boolean(),
      keep: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('retention' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('added' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('prune' as const), keep: fc.integer({ min: 1, max: 6 }) }) },
);

/** What a meeting saver finds after one claim of {@link simulate}: the listed ids, where the range fits, each id's true sequence. */
interface AfterClaim {
  readonly ids: readonly string[];
  readonly first: number | undefined;
  readonly range: InOrder | undefined;
  readonly stored: ReadonlyMap<string, number>;
  /** Whether a checkpoint was deleted without a claim since the run began. */
  readonly pruned: boolean;
}

/** Runs `steps` on a model store and head, as savers keep them, calling `seen` after each claim. */
function simulate(steps: readonly Step[], seen: (after: AfterClaim) => void): void {
  // The store: each checkpoint's true sequence; the head as the last claim wrote it.
  const stored = new Map<string, number>();
  let head: Head | undefined;
  let top = 0;
  let sequence = 0;
  let pruned = false;
  // What the claiming saver knows of the head's range (the one it wrote, less what it pruned since).
  let known: InOrder | undefined;
  const listed = (): string[] => [...stored.keys()].sort();
  for (const s of steps) {
    if (s.kind === 'retention' || s.kind === 'prune') {
      const ids = listed();
      if (ids.length < 2) continue;
      const gone = s.kind === 'prune' ? ids[0]! : ids[s.at % (ids.length - 1)]!;
      // A saver's prune after its put: the range it writes at its next claim leaves the deleted one out.
      if (s.kind === 'prune') known = withoutLeaving(known, [gone], { id: ids[1]!, sequence: stored.get(ids[1]!) });
      stored.delete(gone);
      pruned = true;
      continue;
    }
    if (s.kind === 'added') {
      // A checkpoint file put in place by hand, with a sequence of its own: no claim.
      stored.set(`${id(s.at % (top + 2))}-x`, 1 + (s.at % (sequence + 1)));
      continue;
    }
    // A saver that meets the run extends the head's range where the listing fits it.
    const ids = listed();
    if (head && s.meets) known = inOrderFirst(ids, head) === undefined ? undefined : head.inOrder;
    // Behind: an id below the top one (above the one before it), as a replica whose clock is behind makes.
    const newId = s.behind && top > 0 ? `${id(top - 1)}-b${sequence}` : id((top += 10));
    sequence += s.skip ? 2 : 1;
    let range = claimedInOrder(head && { sequence: head.sequence, topId: head.topId, inOrder: known }, ids.at(-1), newId, sequence);
    // keepLast in the claim's commit: the oldest leave (when the new id is above them).
    const excess = s.keep === undefined ? 0 : ids.length + 1 - s.keep;
    const leaving = excess > 0 && newId > ids[excess - 1]! ? ids.slice(0, excess) : [];
    if (leaving.length > 0) {
      const next = ids[leaving.length];
      range = withoutLeaving(range, leaving, next === undefined ? { id: newId, sequence } : { id: next, sequence: stored.get(next) });
      for (const x of leaving) stored.delete(x);
    }
    stored.set(newId, sequence);
    const topId = head?.topId !== undefined && head.topId > newId ? head.topId : newId;
    head = { checkpointId: newId, sequence, topId, inOrder: range };
    known = range;
    const after = listed();
    seen({ ids: after, first: inOrderFirst(after, head), range, stored, pruned });
  }
}

describe('the in-order range kept as savers claim, let go and meet a run', () => {
  it('property: whatever claims (in order, behind the top id, skipping sequences), deletes and additions by other means a run sees, a range that fits the listing names every listed checkpoint’s true sequence', () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        simulate(steps, ({ ids, first, range, stored }) => {
          if (first !== undefined)
            for (let i = first; i < ids.length; i++) expect(stored.get(ids[i]!)).toBe(range!.fromSequence + i - first);
        });
      }),
      { numRuns: 500 },
    );
  });

  it('property: savers claiming in order, letting the oldest go in their claims or after them, keep a range that fits; from the run’s first checkpoint while none went without a claim', () => {
    const inOrder = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant('claim' as const),
          meets: fc.boolean(),
          behind: fc.constant(false),
          skip: fc.constant(false),
          keep: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('prune' as const), keep: fc.integer({ min: 1, max: 6 }) }) },
    );
    fc.assert(
      fc.property(fc.array(inOrder, { maxLength: 40 }), (steps) => {
        simulate(steps, ({ first, pruned }) => {
          expect(first).toBeDefined();
          if (!pruned) expect(first).toBe(0);
        });
      }),
      { numRuns: 300 },
    );
  });
});
