import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NoncePool } from '../../../src/storage/encrypted/nonce-pool.js';
import { NONCE_BYTES } from '../../../src/storage/encrypted/primitives.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

describe('NoncePool', () => {
  it('property: every nonce handed out is 96 bits, distinct, and keeps its bytes after later draws and refills', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1200 }), (count) => {
        const pool = new NoncePool();
        const handed: Uint8Array[] = [];
        const copies: string[] = [];
        for (let i = 0; i < count; i++) {
          const n = pool.next();
          expect(n.length).toBe(NONCE_BYTES);
          handed.push(n);
          copies.push(hex(n));
        }
        // A refill overwriting the old block would change nonces a pending WebCrypto call or header still reads.
        expect(handed.map(hex)).toEqual(copies);
        expect(new Set(copies).size).toBe(count);
      }),
      { numRuns: 30 },
    );
  });

  it('property: writeNext writes 96 fresh bits where it is told, interleaved with next(), and never changes a nonce handed out', () => {
    fc.assert(
      fc.property(fc.array(fc.boolean(), { minLength: 1, maxLength: 700 }), fc.nat({ max: 20 }), (writes, at) => {
        const pool = new NoncePool();
        const handed: Uint8Array[] = [];
        const seen: string[] = [];
        for (const write of writes) {
          if (!write) {
            const n = pool.next();
            handed.push(n);
            seen.push(hex(n));
            continue;
          }
          const out = new Uint8Array(at + NONCE_BYTES + 3).fill(0xa5);
          pool.writeNext(out, at);
          // Only the nonce's 12 bytes change.
          expect(out.subarray(0, at).every((b) => b === 0xa5)).toBe(true);
          expect(out.subarray(at + NONCE_BYTES).every((b) => b === 0xa5)).toBe(true);
          seen.push(hex(out.subarray(at, at + NONCE_BYTES)));
        }
        expect(new Set(seen).size).toBe(writes.length);
        expect(handed.map(hex)).toEqual(seen.filter((_, i) => !writes[i]));
      }),
      { numRuns: 30 },
    );
  });

  it('two pools never hand out the same nonce (each draws its own random blocks)', () => {
    const a = new NoncePool();
    const b = new NoncePool();
    const seen = new Set<string>();
    for (let i = 0; i < 600; i++) {
      seen.add(hex(a.next()));
      seen.add(hex(b.next()));
    }
    expect(seen.size).toBe(1200);
  });
});
