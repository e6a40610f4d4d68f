/**
 * A document too small for chunks stored whole in an envelope (src/snapshot-io/chunk-store.ts
 * `packWhole`): deflated with the edges' dictionary, in Z85, as the envelope's only edges, no
 * chunk tree. Any document reads back exactly, near every threshold; it is stored so only when
 * that is smaller and within an envelope's size; never on a store with keyed addressing; a
 * damaged one is refused; the sweep and `verify` find no chunk in it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { CHUNKED_MIN_BYTES, decodeEnvelope, ENVELOPE_MAX_BYTES, looksChunked } from '../../src/codec/chunking.js';
import { canonicalJson } from '../../src/codec/canonical-json.js';
import { sha256HexSync } from '../../src/codec/sha256.js';
import { forgetChunks, isPackable, packWhole, resolveChunked } from '../../src/snapshot-io/chunk-store.js';
import { auditChunks, markChunks } from '../../src/snapshot-io/chunk-refs.js';
import { prose } from '../support/prose.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

/** A checkpoint-like header (ids, a time, a seal) around `value`, padded with `pad` short fields to reach a size. */
const documentOf = (value: unknown, pad: number): Uint8Array =>
  encode(
    canonicalJson({
      checkpoint_id: '1f1ec926-82ce-68b0-ffff-8d75f7227e8c',
      integrity: { algorithm: 'sha256', checksum: sha256HexSync(encode(String(pad)))!, format_version: '1.0' },
      pad: Array.from({ length: pad }, (_, i) => ({ channel: `c${i}`, idx: i, text: 'null', type: 'json' })),
      value: value as never,
    }),
  );

/** Stores `bytes` whole if it pays, and checks it reads back from a fresh process state. */
async function roundTrip(bytes: Uint8Array): Promise<Uint8Array> {
  const storage = memoryStorage();
  const packed = packWhole(storage, bytes);
  expect(packed.writes).toEqual([]);
  expect(packed.ids).toEqual([]);
  if (packed.envelope === bytes) return bytes;
  expect(packed.envelope.length).toBeLessThan(bytes.length);
  expect(packed.envelope.length).toBeLessThanOrEqual(ENVELOPE_MAX_BYTES);
  expect(looksChunked(packed.envelope)).toBe(true);
  const envelope = decodeEnvelope(packed.envelope, 'doc')!;
  expect([envelope.ids, envelope.bytes, envelope.edges?.tail.length]).toEqual([[], bytes.length, 0]);
  forgetChunks(storage);
  expect(same((await resolveChunked(storage, 'doc', packed.envelope))!, bytes)).toBe(true);
  return packed.envelope;
}

describe('documents stored whole in an envelope', () => {
  it('any JSON document, of any size below chunks, reads back exactly; stored so only when smaller (property)', async () => {
    // A member named __proto__ is refused before any document is made (canonical-json's own tests).
    const json = fc.jsonValue({ maxDepth: 3 }).filter((v) => !JSON.stringify(v).includes('__proto__'));
    await fc.assert(
      fc.asyncProperty(json, fc.nat(300), async (value, pad) => {
        const bytes = documentOf(value, pad);
        fc.pre(bytes.length < CHUNKED_MIN_BYTES);
        await roundTrip(bytes);
      }),
      { numRuns: 300 },
    );
  });

  it('documents near the thresholds: around 2 KiB, just under chunks, and whose envelope would pass an envelope size (property)', async () => {
    const near = [2047, 2048, 2049, 4095, 4096, 4097, CHUNKED_MIN_BYTES - 2, CHUNKED_MIN_BYTES - 1];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...near), fc.integer(), fc.boolean(), async (size, seed, random) => {
        // Prose deflates well; random letters (between quotes every 100 bytes: no long string) do not.
        let x = seed >>> 0 || 1;
        const filler = random
          ? Array.from({ length: size }, (_, i) =>
              i % 100 === 99 ? '","' : String.fromCharCode(97 + ((x = (x * 1103515245 + 12345) >>> 0) >>> 27)),
            ).join('')
          : prose(seed, size);
        const text = `{"a":"${filler}"}`.slice(0, size - 2);
        const bytes = encode(`${text.replace(/[,"]+$/, '')}"}`);
        const stored = await roundTrip(bytes);
        if (stored === bytes) expect(packWhole(memoryStorage(), bytes).envelope).toBe(bytes);
      }),
      { numRuns: 200 },
    );
  });

  it('is not done for a document holding a long string, nor from the size chunks start at, nor on a store with keyed addressing', () => {
    const header = documentOf(null, 20);
    expect(isPackable(header)).toBe(true);
    expect(isPackable(encode(`{"a":"${prose(1, 200)}"}`))).toBe(false);
    expect(isPackable(encode(`{"a":[${'1,'.repeat(CHUNKED_MIN_BYTES / 2)}1]}`))).toBe(false);
    const keyed = { scheme: 'test-keyed', id: async (b: Uint8Array) => sha256HexSync(b), idSync: (b: Uint8Array) => sha256HexSync(b) };
    const storage = Object.assign(memoryStorage(), { contentAddressing: keyed });
    expect(packWhole(storage, header).envelope).toBe(header);
    expect(packWhole(memoryStorage(), header).envelope.length).toBeLessThan(header.length / 2);
  });

  it('a damaged envelope fails the read with checkpoint_integrity_mismatch', async () => {
    const bytes = documentOf({ note: 'x' }, 12);
    const storage = memoryStorage();
    const text = new TextDecoder().decode(packWhole(storage, bytes).envelope);
    const at = text.indexOf('"', text.indexOf('"edges_z85":[') + 13) + 1;
    const damaged = [
      text.slice(0, at + 12) + (text[at + 12] === 'a' ? 'b' : 'a') + text.slice(at + 13),
      text.replace(/"bytes":(\d+)/, (_, n: string) => `"bytes":${Number(n) + 1}`),
      text.replace(/"edges_z85":\[(\d+)/, (_, n: string) => `"edges_z85":[${Number(n) - 1}`),
      text.replace(/"edges_z85":\[(\d+),0/, (_, n: string) => `"edges_z85":[${Number(n) - 1},1`),
      // A tree half named: neither a whole document nor a chunked one.
      text.replace(/"bytes":(\d+),/, '"bytes":$1,"depth":0,'),
      text.replace(/"edges_z85":\[\d+,\d+,"[^"]*"\]/, '"x":1'),
    ];
    for (const bad of damaged)
      await expect(resolveChunked(storage, 'doc', encode(bad))).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('names no chunk: marking finds none in it and reads it without trouble; verify reports nothing', async () => {
    const storage = memoryStorage();
    const bytes = documentOf({ note: 'x' }, 12);
    const envelope = packWhole(storage, bytes).envelope;
    expect(looksChunked(envelope)).toBe(true);
    await storage.put('runs/r/parts/1/w.json', envelope);
    const marks = await markChunks(storage);
    expect([marks.referenced.size, marks.unreadable]).toEqual([0, []]);
    const audit = await auditChunks(storage);
    expect([audit.missing, audit.damaged, audit.unreferenced]).toEqual([[], [], []]);
    // An earlier version knows envelopes by their ids, which this one has none of: it refuses it as damaged and marks nothing in it.
    expect(
      (JSON.parse(new TextDecoder().decode(envelope)) as { $savepoint_chunked: Record<string, unknown> }).$savepoint_chunked.ids,
    ).toBeUndefined();
  });
});
