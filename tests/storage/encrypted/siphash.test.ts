import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sipHash24 } from '../../../src/storage/encrypted/siphash.js';

// The reference vectors (Aumasson and Bernstein, SipHash paper and reference code): key
// 00 01 .. 0f, message the first n bytes of 00 01 02 ..; the 64-bit result as a number.
const key = Uint8Array.from({ length: 16 }, (_, i) => i);
const message = Uint8Array.from({ length: 64 }, (_, i) => i);
const asNumber = (out: Uint8Array): bigint => new DataView(out.buffer, out.byteOffset, 8).getBigUint64(0, true);

describe('SipHash-2-4', () => {
  it.each([
    [0, 0x726fdb47dd0e0e31n],
    [1, 0x74f839c593dc67fdn],
    [2, 0x0d6c8009d9a94f5an],
    [15, 0xa129ca6149be45e5n],
    [32, 0x7127512f72f27ccen],
  ])('known answer: %i bytes', (n, want) => {
    expect(asNumber(sipHash24(key, message.subarray(0, n)))).toBe(want);
  });

  it('property: another key or another message (of any length) gives another tag', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 16 }), fc.uint8Array({ maxLength: 100 }), fc.nat(), (k, m, at) => {
        const tag = sipHash24(k, m);
        const k2 = k.slice();
        k2[at % 16]! ^= 1;
        expect(sipHash24(k2, m)).not.toEqual(tag);
        const m2 = new Uint8Array(m.length + 1);
        m2.set(m);
        expect(sipHash24(k, m2)).not.toEqual(tag);
      }),
    );
  });

  it('refuses a key that is not 16 bytes', () => {
    expect(() => sipHash24(new Uint8Array(15), message)).toThrow(RangeError);
  });
});
