/**
 * A checkpoint over the size limit is split within 3× its payload in
 * memory. The writer no longer encodes the whole document to learn its size and parses it
 * back to split it: the format seals it from the payload's text in pieces (checksum and size
 * hashed chunk by chunk, big strings shared), and each part is encoded straight to its bytes.
 * What must not change: the stored bytes, byte for byte (the old path is the oracle here),
 * and what a reader gets back. Peak memory itself is measured by `npm run bench -- large`.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { documentChecksum, readSnapshot, resolveParts } from 'savepoint/toolkit';
import { canonicalJson, canonicalJsonOf, parseJson } from '../../src/codec/canonical-json.js';
import { type JsonObject } from '../../src/contract/json.js';
import { canonicalJsonBytes, canonicalJsonLength, jsonStringBytes, parseJsonPieces } from '../../src/codec/json-pieces.js';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';
import type { Profile } from '../../src/contract/profile.js';
import { encodeForStorage, type SizePolicy, type SnapshotHeader } from '../../src/writer/size-limit.js';
import { validateTrigger } from '../../src/writer/triggers.js';
import { handOver } from '../../src/storage/handed-over.js';
import { jsonDouble } from '../profiles/arbitraries.js';

const BIG = 64 * 1024; // canonical-json's BIG_STRING: strings this long go by reference

/** A big string that needs no escape: ASCII, or with two- and three-byte characters. */
const bigString = fc
  .record({
    seed: fc.constantFrom('abc', 'xyz 123', 'é-ü', '漢字かな', 'a\u00ff'),
    extra: fc.nat({ max: 40_000 }),
    tag: fc.nat({ max: 999 }),
  })
  .map(({ seed, extra, tag }) => `${tag}:${seed.repeat(Math.ceil((BIG + extra) / seed.length))}`);
/** Small values, escapes and surrogate pairs among them. */
const small = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ maxLength: 300 }),
  fc.integer(),
  jsonDouble(),
  fc.boolean(),
  fc.constant(null),
);
const payloadArb: fc.Arbitrary<JsonValue> = fc.letrec<{ value: JsonValue; node: JsonValue }>((tie) => ({
  value: fc.oneof({ weight: 3, arbitrary: small }, { weight: 2, arbitrary: bigString }, { weight: 2, arbitrary: tie('node') }),
  node: fc.oneof(
    { maxDepth: 3 },
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 6 }), tie('value'), { maxKeys: 5 }),
  ),
})).node;

/** Over the limit with no big string at all: the payload's text is one flat string, not pieces. */
const manyMedium: fc.Arbitrary<JsonValue> = fc.array(
  fc
    .tuple(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.nat({ max: 4000 }))
    .map(([s, n]) => (s || 'x').repeat(Math.ceil(n / Math.max(1, s.length)))),
  { minLength: 5, maxLength: 40 },
);

const header = (sequence: number): SnapshotHeader<JsonValue> => ({
  id: `cp_20260101T000000000Z_${String(sequence).padStart(6, '0')}`,
  runId: 'r1',
  sequence,
  createdAt: '2026-01-01T00:00:00.000Z',
  source: 'manual',
  sourceDetails: [],
  status: 'in_progress',
});
const policy = (maxBytes: number): SizePolicy => ({ maxBytes, onOversize: 'split', partKey: (n) => `checkpoints/r1/parts/1/${n}.json` });

type Format = Profile<JsonValue>['document'];
/** Three strings, 360,000 characters: over a 200,000-byte limit, each of them under it. */
const OVER_LIMIT = { a: 'a'.repeat(150_000), b: ['é'.repeat(90_000), { c: 'c'.repeat(120_000) }], n: 1 };

/**
 * defaultProfile with one method of its format counted through a transparent proxy (the
 * function stays the format's own, companions included): the calls whose first or second
 * argument is over 100,000 long, i.e. that carry a whole large document.
 */
function countingWhole(method: 'encodePayloadText' | 'decode'): { profile: Profile<JsonValue>; calls: () => number } {
  let calls = 0;
  const format = defaultProfile.document;
  const fn = format[method] as (...args: unknown[]) => unknown;
  const counted = new Proxy(fn, {
    apply(target, self, args: unknown[]) {
      if (args.some((a) => (typeof a === 'string' || a instanceof Uint8Array) && a.length > 100_000)) calls++;
      return Reflect.apply(target, self, args) as unknown;
    },
  });
  const document = { ...format, [method]: counted } as Format;
  return { profile: Object.freeze({ ...defaultProfile, document }) as Profile<JsonValue>, calls: () => calls };
}

/** The split as it was made before: the whole document encoded, parsed back, and split. */
async function splitTheOldWay(
  profile: Profile<JsonValue>,
  h: SnapshotHeader<JsonValue>,
  text: string,
  pieces: readonly string[] | undefined,
  maxBytes: number,
) {
  const { bytes, integrity } = await profile.document.encodePayloadText!(h, text, pieces);
  const document = parseJson(utf8Decode(bytes)) as JsonObject;
  const { main, parts } = await profile.splitDocument(document, maxBytes, policy(maxBytes).partKey!, { owned: true });
  return { bytes: utf8Encode(canonicalJson(main)), parts, integrity, splitFrom: bytes.length };
}

describe('splitting a large checkpoint from its text', () => {
  it('stores the same bytes, main document and parts, as encoding it whole and splitting its parse did (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(payloadArb, manyMedium), fc.integer({ min: 20_000, max: 200_000 }), async (payload, maxBytes) => {
        const t = validateTrigger(defaultProfile, { source: 'manual', status: 'in_progress', payload }, 0);
        const h = header(1);
        let expected: Awaited<ReturnType<typeof splitTheOldWay>> | Error;
        try {
          expected = await splitTheOldWay(defaultProfile, h, t.payloadText, t.payloadPieces, maxBytes);
        } catch (err) {
          expected = err as Error;
        }
        const whole = (await defaultProfile.document.encodePayloadText!(h, t.payloadText, t.payloadPieces)).bytes.length;
        if (whole <= maxBytes) return; // not split: the one-document path, unchanged
        let got: Awaited<ReturnType<typeof encodeForStorage<JsonValue>>> | Error;
        try {
          got = await encodeForStorage(defaultProfile, h, t.payloadText, policy(maxBytes), t.payloadPieces);
        } catch (err) {
          got = err as Error;
        }
        if (expected instanceof Error || got instanceof Error) {
          expect(got instanceof Error && (got as { reasonCode?: string }).reasonCode).toBe(
            expected instanceof Error && (expected as { reasonCode?: string }).reasonCode,
          );
          return;
        }
        expect(got.splitFrom).toBe(expected.splitFrom);
        expect(got.snapshot.integrity).toEqual(expected.integrity);
        expect(Buffer.from(got.bytes).equals(Buffer.from(expected.bytes))).toBe(true);
        expect(got.parts.map(({ key, sha256, bytes }) => ({ key, sha256, bytes }))).toEqual(
          expected.parts.map(({ key, sha256, bytes }) => ({ key, sha256, bytes })),
        );
        got.parts.forEach((p, i) => expect(Buffer.from(p.data).equals(Buffer.from(expected.parts[i]!.data))).toBe(true));
      }),
      { numRuns: 30 },
    );
  });

  it('never asks the format for the whole document when the payload alone is over the limit (regression: it was encoded whole, then parsed back)', async () => {
    const { profile: counting, calls } = countingWhole('encodePayloadText');
    const format = defaultProfile.document;
    const payload = OVER_LIMIT;
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: counting, runId: 'r1', maxSnapshotBytes: 200_000, heartbeatIntervalMs: false });
    const splits: number[] = [];
    writer.on('split', (e) => splits.push(e.bytes));
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    await writer.close();
    if (!r.ok) throw r.error;
    expect(calls()).toBe(0);
    // The split event still reports the whole document's size, over the limit.
    const { id, runId, sequence, createdAt, source, sourceDetails, status } = r.snapshot;
    const whole = (
      await format.encodePayloadText!({ id, runId, sequence, createdAt, source, sourceDetails, status }, canonicalJson(payload))
    ).bytes.length;
    expect(splits).toEqual([whole]);
    expect((await readSnapshot(storage, defaultProfile, r.key))?.payload).toEqual(payload);
  });

  it('a format whose encodePayloadText is its own function is split from its bytes, as before', async () => {
    const format = defaultProfile.document;
    const own: Profile<JsonValue> = Object.freeze({
      ...defaultProfile,
      document: {
        ...format,
        encodePayloadText: (...args: Parameters<NonNullable<typeof format.encodePayloadText>>) => format.encodePayloadText!(...args),
      },
    }) as Profile<JsonValue>;
    const t = validateTrigger(defaultProfile, { source: 'manual', status: 'in_progress', payload: OVER_LIMIT }, 0);
    const viaBytes = await encodeForStorage(own, header(1), t.payloadText, policy(200_000), t.payloadPieces);
    const viaText = await encodeForStorage(defaultProfile, header(1), t.payloadText, policy(200_000), t.payloadPieces);
    expect(viaBytes.parts.length).toBeGreaterThan(0);
    expect(Buffer.from(viaBytes.bytes).equals(Buffer.from(viaText.bytes))).toBe(true);
    expect(viaBytes.parts.map((p) => p.sha256)).toEqual(viaText.parts.map((p) => p.sha256));
  });

  it('a split snapshot is read back without its reassembled document being encoded and decoded again (regression), and a changed main document is still caught', async () => {
    const { profile: counting, calls } = countingWhole('decode');
    const payload = OVER_LIMIT;
    const storage = memoryStorage();
    // Without content chunks (on by default): this reads the split main document's own bytes.
    const writer = createWriter({
      storage,
      profile: defaultProfile,
      runId: 'r1',
      maxSnapshotBytes: 200_000,
      heartbeatIntervalMs: false,
      dedup: false,
    });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    await writer.close();
    if (!r.ok) throw r.error;
    const back = await readSnapshot(storage, counting, r.key);
    expect(back?.payload).toEqual(payload);
    expect(back?.integrity).toEqual(r.snapshot.integrity);
    expect(calls()).toBe(0);
    // The main document's status changed, its checksum not: the reassembled document no longer matches it.
    const main = new TextDecoder().decode((await storage.get(r.key))!.bytes);
    expect(main).toContain('"status":"in_progress"');
    await storage.put(r.key, new TextEncoder().encode(main.replace('"status":"in_progress"', '"status":"completed"')));
    await expect(readSnapshot(storage, counting, r.key)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('documentChecksum of a large document with no big string (hashed chunk by chunk) is the SHA-256 of its canonical text', async () => {
    const items = Array.from({ length: 20_000 }, (_, i) => ({ i, s: `é-${i}-😀-`.padEnd(60, 'x') }));
    const doc: JsonObject = { items, integrity: { algorithm: 'sha256', format_version: '1', checksum: '0'.repeat(64) } };
    const covered = canonicalJson({ items, integrity: { algorithm: 'sha256', format_version: '1' } });
    expect(covered.length).toBeGreaterThan(1 << 20);
    expect(await documentChecksum(doc)).toBe(createHash('sha256').update(utf8Encode(covered)).digest('hex'));
  });

  it('parseJsonPieces reads canonical text in pieces as parseJson reads it joined, sharing the big strings (property)', () => {
    fc.assert(
      fc.property(payloadArb, (value) => {
        const { text, pieces } = canonicalJsonOf(value);
        const parsed = parseJsonPieces(pieces ?? [text]);
        expect(parsed).toEqual(JSON.parse(text));
        expect(canonicalJsonLength(value)).toBe(utf8Encode(text).length);
        expect(Buffer.from(canonicalJsonBytes(value)).equals(Buffer.from(utf8Encode(text)))).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('a payload string that looks like the placeholder of a big string is read back as itself', () => {
    const big = 'b'.repeat(BIG);
    const value = { a: '$savepoint_piece_0', b: big, c: ['$savepoint_piece__1', '$savepoint_piece_'] };
    const { pieces } = canonicalJsonOf(value);
    const parsed = parseJsonPieces(pieces!) as { b: string };
    expect(parsed).toEqual(value);
    expect(parsed.b).toBe(big);
  });

  it('jsonStringBytes is the UTF-8 length of JSON.stringify, short or long, escaped or not (property)', () => {
    fc.assert(
      // Units JSON escapes or encodes in 2, 3 or 4 bytes, lone surrogates among them.
      fc.property(
        fc.string({ unit: fc.constantFrom('a', '"', '\\', '\n', '\u0001', 'é', '漢', '😀', '\ud800', '\udc00'), maxLength: 80 }),
        fc.nat({ max: 3000 }),
        (s, n) => {
          const long = s.repeat(Math.ceil(n / Math.max(1, s.length)));
          for (const text of [s, long, `${long}${'x'.repeat(1100)}`])
            expect(jsonStringBytes(text)).toBe(utf8Encode(JSON.stringify(text)).length);
        },
      ),
      { numRuns: 25 },
    );
  });
});

describe('buffers the writer hands over', () => {
  it("memoryStorage keeps a large buffer handed over as it is, and still copies every other buffer (a split checkpoint's parts were held twice)", async () => {
    const storage = memoryStorage();
    const mine = new Uint8Array(70_000).fill(1);
    const handed = handOver(new Uint8Array(70_000).fill(2));
    const small = handOver(new Uint8Array(10_000).fill(4)); // small: copied (cheaper than remembering it)
    const view = handOver(new Uint8Array(new ArrayBuffer(140_000), 0, 70_000).fill(3)); // part of a larger buffer: never kept, it would keep the rest alive
    await storage.put('k/mine', mine);
    await storage.batch!([
      { type: 'put', key: 'k/handed', bytes: handed },
      { type: 'put', key: 'k/view', bytes: view },
      { type: 'put', key: 'k/small', bytes: small },
    ]);
    mine[0] = 9;
    handed[0] = 9;
    view[0] = 9;
    small[0] = 9;
    expect((await storage.get('k/mine'))!.bytes[0]).toBe(1);
    expect((await storage.get('k/handed'))!.bytes[0]).toBe(9); // the same buffer: no copy was made
    expect((await storage.get('k/view'))!.bytes[0]).toBe(3);
    expect((await storage.get('k/small'))!.bytes[0]).toBe(4);
  });
});

describe('reading parts back', () => {
  it("loads a level's parts in batches of at most 8 and 16 MiB of stored bytes (regression: all at once held every part's bytes beside the values parsed so far)", async () => {
    const content = (i: number): JsonValue => ({ i, text: `part ${i}` });
    const refsOf = async (count: number, declared: number): Promise<JsonObject> => {
      const out: JsonObject = {};
      for (let i = 0; i < count; i++) {
        const sha256 = createHash('sha256')
          .update(canonicalJson(content(i)))
          .digest('hex');
        out[`k${i}`] = { $savepoint_part: { key: `p/${i}`, sha256, bytes: declared } };
      }
      return out;
    };
    const maxInFlight = async (doc: JsonObject): Promise<number> => {
      let inFlight = 0;
      let max = 0;
      const back = await resolveParts(doc, async (key) => {
        inFlight++;
        max = Math.max(max, inFlight);
        await new Promise((resolve) => setImmediate(resolve));
        inFlight--;
        return content(Number(key.slice(2)));
      });
      expect((back as JsonObject).k2).toEqual(content(2));
      return max;
    };
    expect(await maxInFlight(await refsOf(20, 1000))).toBe(8);
    expect(await maxInFlight(await refsOf(20, 5 * 1024 * 1024))).toBe(3); // 16 MiB hold three 5 MiB parts
    expect(await maxInFlight(await refsOf(3, 40 * 1024 * 1024))).toBe(1); // one part over the budget still loads, alone
  });
});
