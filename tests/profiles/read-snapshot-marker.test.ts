import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { includesBytes } from '../../src/snapshot-io/read-snapshot.js';

/** The plain search it must agree with: every start position, byte by byte. */
function naive(haystack: Uint8Array, needle: Uint8Array): boolean {
  for (let start = 0; start + needle.length <= haystack.length; start++) {
    let i = 0;
    while (i < needle.length && haystack[start + i] === needle[i]) i++;
    if (i === needle.length) return true;
  }
  return false;
}

const marker = new TextEncoder().encode('"$savepoint_part');
/** Bytes drawn mostly from the marker's own, so near misses and overlaps are common. */
const bytesLike = (maxLength: number) =>
  fc.array(fc.oneof(fc.constantFrom(...marker), fc.integer({ min: 0, max: 255 })), { maxLength }).map((a) => Uint8Array.from(a));

describe('includesBytes (the part-marker scan of every JSON read)', () => {
  it('finds the marker at the start, in the middle and at the very end, and not when a byte differs', () => {
    const doc = (text: string) => new TextEncoder().encode(text);
    expect(includesBytes(doc('"$savepoint_part":1}'), marker, 1)).toBe(true);
    expect(includesBytes(doc('{"a":"$x","b":"$savepoint_parts":[]}'), marker, 1)).toBe(true);
    expect(includesBytes(doc('{"a":"$savepoint_part'), marker, 1)).toBe(true);
    expect(includesBytes(doc('{"a":"$savepoint_par"}'), marker, 1)).toBe(false);
    expect(includesBytes(doc('{"a":$savepoint_part}'), marker, 1)).toBe(false);
    // The anchor byte at index 0 of the haystack cannot start a match that needs a byte before it.
    expect(includesBytes(doc('$savepoint_part"$savepoint_par'), marker, 1)).toBe(false);
  });

  it('agrees with a plain search for every anchor, haystack and needle', () => {
    fc.assert(
      fc.property(bytesLike(64), fc.integer({ min: 1, max: 6 }), fc.nat(), (haystack, length, anchorSeed) => {
        const needle = marker.subarray(0, length);
        const anchor = anchorSeed % length;
        expect(includesBytes(haystack, needle, anchor)).toBe(naive(haystack, needle));
      }),
      { numRuns: 500 },
    );
  });

  it('agrees when the needle is planted at a random place', () => {
    fc.assert(
      fc.property(bytesLike(40), bytesLike(40), (before, after) => {
        const haystack = Uint8Array.from([...before, ...marker, ...after]);
        expect(includesBytes(haystack, marker, 1)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
