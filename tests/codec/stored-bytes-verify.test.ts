/**
 * A lean hot path: a document is sealed with one UTF-8 encoding and verified over
 * its stored bytes; the checksum stays what `documentChecksum` defines.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, defaultProfile, type JsonObject, type JsonValue } from 'savepoint';
import { documentChecksum, sealDocumentBytes } from 'savepoint/toolkit';
import { verifyStoredBytes } from '../../src/codec/json-document.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
/** JSON values savepoint stores: canonical JSON refuses `__proto__` keys anywhere, by design. */
const storableJson = (): fc.Arbitrary<JsonValue> =>
  (fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: 'binary' })) as fc.Arbitrary<JsonValue>).filter(
    (v) => !JSON.stringify(v).includes('"__proto__"'),
  );
const dec = (b: Uint8Array): string => new TextDecoder().decode(b);

describe('sealing and verifying over the stored bytes', () => {
  it('property: the stored bytes are the canonical JSON of the sealed document, and the checksum is documentChecksum', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(
          fc
            .string({ minLength: 1, maxLength: 12, unit: fc.constantFrom('a', 'é', 'i', 'z', '\u{1F600}', '"') })
            .filter((k) => k !== '__proto__' && k !== 'integrity'),
          storableJson(),
        ),
        async (doc) => {
          const sealed = await sealDocumentBytes(doc as JsonObject);
          expect(dec(sealed.bytes)).toBe(canonicalJson(sealed.document));
          expect(sealed.integrity.checksum).toBe(await documentChecksum(sealed.document));
          expect(await verifyStoredBytes(sealed.bytes, dec(sealed.bytes), sealed.integrity.checksum)).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('property: any single changed byte outside the checksum fails the fast check', async () => {
    await fc.assert(
      fc.asyncProperty(storableJson(), fc.nat(), fc.integer({ min: 1, max: 255 }), async (state, at, xor) => {
        const sealed = await sealDocumentBytes({ a: 'x', state, z: 1 });
        const bytes = sealed.bytes.slice();
        const i = at % bytes.length;
        bytes[i]! ^= xor;
        const text = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
        expect(await verifyStoredBytes(bytes, text, sealed.integrity.checksum)).toBe(false);
      }),
      { numRuns: 200 },
    );
  });

  it('is not fooled by a nested object that carries the same checksum member', async () => {
    const sealed = await sealDocumentBytes({ a: 1 });
    const fake = { a: 1, state: { integrity: { algorithm: 'sha256', checksum: sealed.integrity.checksum, format_version: '1' } } };
    const again = await sealDocumentBytes(fake);
    const text = dec(again.bytes);
    expect(await verifyStoredBytes(again.bytes, text, again.integrity.checksum)).toBe(true);
    // Claiming the nested checksum for the outer document does not verify.
    const forged = text.replace(again.integrity.checksum, sealed.integrity.checksum);
    expect(await verifyStoredBytes(enc(forged), forged, sealed.integrity.checksum)).toBe(false);
  });

  it('non-ASCII documents verify (byte offsets differ from string offsets)', async () => {
    const sealed = await sealDocumentBytes({ a: 'ünïcødé ✓ 😀', state: { note: '日本語' } });
    expect(await verifyStoredBytes(sealed.bytes, dec(sealed.bytes), sealed.integrity.checksum)).toBe(true);
  });

  it('a document stored in another formatting still decodes (the canonical check is the fallback)', async () => {
    const doc = {
      snapshot_id: 'cp_20260101T000000000Z_abcdef',
      run_id: 'r',
      sequence: 1,
      created_at: '2026-01-01T00:00:00.000Z',
      source: 'manual',
      source_details: [],
      status: 'in_progress',
      state: { b: 1, a: [1, 2] },
    };
    const sealed = await sealDocumentBytes(doc);
    const pretty = enc(JSON.stringify(sealed.document, null, 2));
    const s = await defaultProfile.document.decode(pretty, 'pretty.json');
    expect(s.payload).toEqual({ a: [1, 2], b: 1 });
    const tampered = enc(JSON.stringify({ ...sealed.document, state: { b: 2, a: [1, 2] } }, null, 2));
    await expect(defaultProfile.document.decode(tampered, 'bad.json')).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
    });
  });

  it("the default profile's text path stores the same bytes as encoding the document object", async () => {
    const header = {
      id: 'cp_20260101T000000000Z_abcdef',
      runId: 'r',
      sequence: 3,
      createdAt: '2026-01-01T00:00:00.000Z',
      source: 'manual',
      sourceDetails: [],
      status: 'in_progress',
    };
    const payload = { z: [1, { y: 'ü' }], a: null };
    const viaObject = await defaultProfile.document.encode({ ...header, payload });
    const viaText = await defaultProfile.document.encodePayloadText!(header, canonicalJson(payload));
    expect(dec(viaText.bytes)).toBe(dec(viaObject.bytes));
    expect(viaText.integrity).toEqual(viaObject.snapshot.integrity);
  });
});
