import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from 'savepoint/toolkit';
import { toHex } from '../../src/codec/sha256.js';

const webCrypto = async (bytes: Uint8Array): Promise<string> =>
  toHex(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>)));

describe('sha256Hex on Node (node:crypto fast path)', () => {
  it('property: equals WebCrypto SHA-256 for any bytes and any string', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 5000 }), async (bytes) => {
        expect(await sha256Hex(bytes)).toBe(await webCrypto(bytes));
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 500 }), async (text) => {
        expect(await sha256Hex(text)).toBe(await webCrypto(new TextEncoder().encode(text)));
      }),
    );
  });
});
