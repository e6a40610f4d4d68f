/**
 * Bounded memory for payloads of many small values: the engine's JSON.stringify returns a
 * rope that the first whole read copies while it still lives (a second copy of a large text at
 * the peak). A large value's canonical text is made instead in flat pieces, the engine
 * serializing what fits in a budget of values at once. The walk (`canonicalJsonByWalk`) is the
 * oracle: the same text, the same refusals; the budget is made tiny here so that every level
 * of small values is cut.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { canonicalJson, canonicalJsonByWalk, canonicalTextOrPieces } from '../../src/codec/canonical-json.js';
import { materialText, validateTrigger } from '../../src/writer/triggers.js';
import { defaultProfile } from 'savepoint';

const outcome = (fn: () => string): string => {
  try {
    return `ok:${fn()}`;
  } catch (err) {
    return `error:${(err as { reasonCode?: string }).reasonCode}:${(err as Error).message}`;
  }
};

/** Values JSON carries, and some it does not (the walk names where). */
const hostile = fc.constantFrom<unknown>(Number.NaN, undefined, () => 1, Symbol('s'), new Map(), 10n);
const keyArb = fc.oneof(fc.string({ maxLength: 4 }), fc.constantFrom('0', '1', '10', '9', '__proto__', 'toJSON', 'é'));
const valueArb: fc.Arbitrary<unknown> = fc.letrec<{ v: unknown; node: unknown }>((tie) => ({
  v: fc.oneof(
    { weight: 5, arbitrary: fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null)) },
    { weight: 1, arbitrary: fc.oneof(fc.date({ noInvalidDate: true }), fc.constant(undefined)) },
    { weight: 1, arbitrary: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, hostile) },
    { weight: 4, arbitrary: tie('node') },
  ),
  node: fc.oneof({ maxDepth: 4 }, fc.array(tie('v'), { maxLength: 8 }), fc.dictionary(keyArb, tie('v'), { maxKeys: 6 })),
})).node;

describe('a large value in flat pieces', () => {
  it("is the walk's text, cut at every budget, and refused as the walk refuses it (property)", () => {
    fc.assert(
      fc.property(valueArb, fc.integer({ min: 1, max: 40 }), (value, budget) => {
        const expected = outcome(() => canonicalJsonByWalk(value));
        const got = outcome(() => {
          const { text, pieces } = canonicalTextOrPieces(value, budget);
          if (pieces) expect(pieces.join('')).toBe(text);
          return text;
        });
        expect(got).toBe(expected);
      }),
      { numRuns: 300 },
    );
  });

  it('a payload of many small values comes in flat pieces, never one rope of its whole text (regression: one JSON.stringify of it all)', () => {
    const payload = Array.from({ length: 40_000 }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      tags: ['a', 'b'],
      note: 'abcdefghijklmnopqrstuvwxyz',
    }));
    const stringify = vi.spyOn(JSON, 'stringify');
    const t = validateTrigger(defaultProfile, { source: 'manual', status: 'in_progress', payload }, 0);
    const longest = Math.max(0, ...stringify.mock.results.map((r) => (typeof r.value === 'string' ? r.value.length : 0)));
    stringify.mockRestore();
    expect(t.payloadText.length).toBeGreaterThan(3_000_000);
    expect(longest).toBeLessThan(t.payloadText.length / 4);
    expect(t.payloadPieces!.join('')).toBe(canonicalJson(payload));
  });
});

describe('the material key of a payload at the size where its text comes in pieces', () => {
  it('is the same whether made from the checkpoint request or from the payload read back (regression: the key around a wrapper object came in pieces, as a digest, one value earlier)', () => {
    // 131,070 numbers: 131,071 values, within the engine's budget; the wrapper { material, status } is over it.
    for (const items of [131_069, 131_070, 131_071]) {
      const payload = Array.from({ length: items }, (_, i) => i % 10);
      const fromRequest = validateTrigger(defaultProfile, { source: 'manual', status: 'in_progress', payload }, 0);
      expect(materialText(defaultProfile, 'in_progress', payload)).toBe(fromRequest.material);
    }
  });
});
