/**
 * Z85 of any length (src/codec/base85.ts): the form of the bytes an envelope keeps inline. Any
 * bytes round-trip; the text goes into a JSON string as it is; text that is not Z85 is refused.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromBase85, toBase85 } from '../../src/codec/base85.js';

describe('base85 (Z85)', () => {
  it('any bytes round-trip, in ceil(5n/4) characters that JSON keeps as they are (property)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        const text = toBase85(bytes);
        expect(text.length).toBe(Math.ceil((bytes.length * 5) / 4));
        expect(JSON.stringify(text)).toBe(`"${text}"`);
        expect(Buffer.from(fromBase85(text)!).equals(Buffer.from(bytes))).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("is ZeroMQ's Z85 on whole groups", () => {
    expect(toBase85(new Uint8Array([0x86, 0x4f, 0xd2, 0x6f, 0xb5, 0x59, 0xf7, 0x5b]))).toBe('HelloWorld');
    expect(toBase85(new Uint8Array(4).fill(255))).toBe('%nSc0');
  });

  it('refuses text that is not Z85: a lone last character, a character outside the alphabet, a group past 32 bits', () => {
    for (const bad of ['1', 'Hello1', 'Hell"', 'Hell\\', 'Hellé', '#####', 'HelloWorl d']) expect(fromBase85(bad)).toBeUndefined();
    expect(fromBase85('')).toEqual(new Uint8Array(0));
  });
});
