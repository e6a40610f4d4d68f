/**
 * A document is sealed by encoding its text without the checksum member into one
 * buffer, hashing it, and moving the tail up to write the member in place. Text that is not
 * ASCII takes more bytes than characters (the buffer is sized again); a member over 4 KB is
 * encoded as a piece of its own. Both must still give the canonical bytes and checksum.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, type JsonObject } from 'savepoint';
import { documentChecksum, sealDocumentBytes } from 'savepoint/toolkit';

const text = (maxLength: number): fc.Arbitrary<string> => fc.string({ unit: 'grapheme', maxLength });
// Keys on both sides of "integrity" in code-unit order, and non-ASCII keys.
const key = fc
  .oneof(fc.constantFrom('a', 'hash', 'id', 'integrit', 'integrityx', 'state', 'z'), text(6))
  .filter((k) => k !== 'integrity' && k !== '__proto__');

describe('sealing documents that are not ASCII', () => {
  it('property: the sealed bytes are the canonical JSON of the sealed document and the checksum is documentChecksum, whatever the characters and member sizes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(key, fc.oneof(text(40), fc.integer(), fc.array(text(8), { maxLength: 3 })), { minKeys: 0, maxKeys: 6 }),
        fc.option(fc.tuple(key, text(40), fc.integer({ min: 4097, max: 6000 })), { nil: undefined }),
        async (members, large) => {
          const document: JsonObject = { ...members };
          // A member over 4 KB, ASCII or not: encoded on its own.
          if (large) document[large[0]] = large[1].repeat(Math.ceil(large[2] / Math.max(1, large[1].length))) || 'x'.repeat(large[2]);
          const { document: sealed, integrity, bytes } = await sealDocumentBytes(document);
          expect(new TextDecoder().decode(bytes)).toBe(canonicalJson(sealed));
          expect(integrity.checksum).toBe(await documentChecksum(sealed));
        },
      ),
      { numRuns: 150 },
    );
  });
});
