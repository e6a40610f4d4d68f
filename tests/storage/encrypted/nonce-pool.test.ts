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
