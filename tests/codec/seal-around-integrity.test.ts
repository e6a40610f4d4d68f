/**
 * Sealing a document given as its text around the integrity member (src/codec/json-document.ts,
 * the LangGraph saver's path): into the caller's reused buffer when it fits, else into a buffer
 * of its own, the same bytes either way; a document in pieces too large for the buffer is never
 * joined into one string first (a large channel's text would be copied for nothing).
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sealAroundIntegrity, sealTextAroundIntegrity, type SealedText } from '../../src/codec/json-document.js';

const sync = (sealed: SealedText | Promise<SealedText>): SealedText => {
  if (sealed instanceof Promise) throw new Error('expected a synchronous seal on Node');
  return sealed;
};
const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('sealing around the integrity member', () => {
  it('in pieces, with or without a buffer of any size: the bytes sealAroundIntegrity makes of the joined text (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', 'é', '漢', '"', ' '), maxLength: 3000 }), { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 0, max: 12_000 }),
        (values, room) => {
          const pieces = ['{"a":', ...values.map((v) => JSON.stringify(v)), ','];
          pieces[pieces.length - 2] += ',"b":1';
          const after = ',"z":2}';
          const expected = sealAroundIntegrity(pieces.join(''), after);
          if (expected instanceof Promise) throw new Error('expected a synchronous seal on Node');
          const sealed = sync(sealTextAroundIntegrity(pieces, after, new Uint8Array(room)));
          expect(text(sealed.bytes)).toBe(text(expected));
          expect(text(sync(sealTextAroundIntegrity(pieces, after)).bytes)).toBe(text(expected));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('a document in pieces larger than the buffer is not joined into one string', () => {
    const large = JSON.stringify('x'.repeat(100_000));
    const pieces = ['{"a":', large, ','];
    const join = vi.spyOn(Array.prototype, 'join');
    const sealed = sync(sealTextAroundIntegrity(pieces, '"z":1}', new Uint8Array(32 * 1024)));
    const joinedPieces = join.mock.contexts.filter((self) => Array.isArray(self) && (self as unknown[]).includes(large));
    join.mockRestore();
    expect(joinedPieces).toHaveLength(0);
    expect(sealed.bytes.length).toBeGreaterThan(100_000);
  });
});
