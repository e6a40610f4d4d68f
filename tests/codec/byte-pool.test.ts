/** Small buffers for documents written once (src/codec/byte-pool.ts): views of a shared slab, each its own bytes. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { POOLED_MAX, pooledBytes } from '../../src/codec/byte-pool.js';

describe('pooled bytes', () => {
  it('property: each buffer is zeroed, of the length asked, and overlaps no other; a large one has an ArrayBuffer of its own', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: POOLED_MAX + 100 }), { minLength: 1, maxLength: 40 }), (lengths) => {
        const taken = lengths.map((n, i) => {
          const bytes = pooledBytes(n);
          expect(bytes.length).toBe(n);
          expect(bytes.every((b) => b === 0)).toBe(true);
          bytes.fill((i % 255) + 1);
          if (n > POOLED_MAX) expect(bytes.buffer.byteLength).toBe(n);
          return { bytes, fill: (i % 255) + 1 };
        });
        for (const { bytes, fill } of taken) expect(bytes.every((b) => b === fill)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });
});
