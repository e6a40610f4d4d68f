/**
 * Bounded memory for payloads of many small values: the core splitter works on the
 * document's canonical text (src/codec/split-text.ts) instead of its parse, whose objects
 * weigh 5–10× the text. The object splitter (`splitDocument` on the parsed document) is the
 * oracle: the same main document's bytes, the same parts, the same refusals.
 */
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { readSnapshot, resolveParts, splitDocument, type PartFile } from 'savepoint/toolkit';
import { resolvePartsOfText } from '../../src/codec/resolve-text.js';
import { listAll } from '../../src/contract/storage.js';
import { encodeForStorage, type SnapshotHeader } from '../../src/writer/size-limit.js';
import { validateTrigger } from '../../src/writer/triggers.js';
import { goldenPayload } from '../fixtures/split/payload.js';
import { canonicalJson, canonicalJsonOf, parseJson } from '../../src/codec/canonical-json.js';
import { type JsonObject } from '../../src/contract/json.js';
import { splitCanonicalText } from '../../src/codec/split-text.js';
import { canonicalJsonBytes } from '../../src/codec/json-pieces.js';
import { jsonDouble } from '../profiles/arbitraries.js';

const partKey = (n: number): string => `checkpoints/r1/parts/1/${n}.json`;

/** Keys that stress the order the object splitter meets values in: array indexes (V8 lists them first, by number), a marker, the root's `integrity`. */
const key = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 5 }) },
  { weight: 2, arbitrary: fc.constantFrom('0', '1', '2', '9', '10', '11', '007', '4294967294', '4294967295', '-1') },
  { weight: 1, arbitrary: fc.constantFrom('$savepoint_part', '$savepoint_parts', 'integrity', '!', 'é', '\\"') },
);
/** Strings around the 256-byte candidate size, escapes, 2-, 3- and 4-byte characters, and a few big ones (by reference in the text). */
const text = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.tuple(fc.constantFrom('a', 'é', '漢', '😀', '"', '\n', 'x\\'), fc.nat({ max: 200 })).map(([s, n]) => s.repeat(n)),
);
const bigText = fc.nat({ max: 5000 }).map((n) => `big:${'b'.repeat(64 * 1024 + n)}`);
const value: fc.Arbitrary<JsonValue> = fc.letrec<{ v: JsonValue; node: JsonValue }>((tie) => ({
  v: fc.oneof(
    {
      weight: 4,
      arbitrary: fc.oneof(text, fc.integer(), jsonDouble(), fc.boolean(), fc.constant(null)),
    },
    { weight: 1, arbitrary: fc.oneof({ weight: 5, arbitrary: fc.constant('') }, bigText) },
    { weight: 4, arbitrary: tie('node') },
  ),
  node: fc.oneof(
    { maxDepth: 4 },
    fc.array(tie('v'), { maxLength: 12 }),
    fc.dictionary(key, tie('v'), { maxKeys: 6 }),
    // Many equal records: ties among equal sizes, and arrays that are cut into chunks.
    fc
      .tuple(fc.nat({ max: 60 }), fc.nat({ max: 80 }))
      .map(([n, w]) => Array.from({ length: n }, (_, i) => ({ i: i % 3, s: 'r'.repeat(w) }))),
  ),
})).node;
const documentArb = fc.dictionary(key, value, { maxKeys: 6 }).map((d) => {
  if (Object.hasOwn(d, 'integrity'))
    d.integrity = { algorithm: 'sha256', checksum: 'c'.repeat(64), format_version: '1', note: 'n'.repeat(300) };
  return d;
});

type Split = { main: Uint8Array; parts: readonly PartFile[] };
type Outcome = Split | { reason: string | undefined };
const settle = async (fn: () => Promise<Split>): Promise<Outcome> => {
  try {
    return await fn();
  } catch (err) {
    return { reason: (err as { reasonCode?: string }).reasonCode ?? String(err) };
  }
};

describe('splitting from the canonical text', () => {
  it('stores the same main document and parts as splitDocument on the parsed document, or refuses alike (property)', async () => {
    await fc.assert(
      fc.asyncProperty(documentArb, fc.double({ min: 0.02, max: 0.95, noNaN: true }), async (doc, share) => {
        const { text, pieces } = canonicalJsonOf(doc);
        // A limit below the document's size, so that most documents split (a few cannot: refused alike).
        const maxBytes = Math.max(300, Math.floor(Buffer.byteLength(text) * share));
        const expected = await settle(async () => {
          const { main, parts } = await splitDocument(parseJson(text) as JsonObject, maxBytes, partKey, { owned: true });
          return { main: canonicalJsonBytes(main), parts };
        });
        const got = await settle(() => splitCanonicalText(pieces ?? [text], maxBytes, partKey));
        if ('reason' in expected || 'reason' in got) {
          expect(got).toEqual(expected);
          return;
        }
        expect(Buffer.from(got.main).toString()).toBe(Buffer.from(expected.main).toString());
        expect(got.parts.map((p) => [p.key, p.sha256, p.bytes])).toEqual(expected.parts.map((p) => [p.key, p.sha256, p.bytes]));
        got.parts.forEach((p, i) => expect(Buffer.from(p.data).equals(Buffer.from(expected.parts[i]!.data))).toBe(true));
      }),
      { numRuns: 80 },
    );
  });

  it('meets values in the order of the parsed document: array-index keys first, by number (equal sizes: the first met moves)', async () => {
    const record = 'v'.repeat(300);
    const doc = { b: { '10': record, '9': record, a: record }, z: 1 };
    const { text } = canonicalJsonOf(doc);
    const maxBytes = text.length - 300; // one value must move: the first of equal size the walk meets
    const viaText = await splitCanonicalText([text], maxBytes, partKey);
    const viaObject = await splitDocument(parseJson(text) as JsonObject, maxBytes, partKey, { owned: true });
    expect(Buffer.from(viaText.main).toString()).toBe(canonicalJson(viaObject.main));
    expect(Buffer.from(viaText.main).toString()).toContain('"9":{"$savepoint_part"');
  });
});

describe('a split checkpoint of many small values', () => {
  afterEach(() => vi.restoreAllMocks());

  it('is written without parsing its payload back into objects (regression: the sealer parsed the whole payload text to split it)', async () => {
    const payload = Array.from({ length: 4000 }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      tags: ['a', 'b'],
      note: 'abcdefghijklmnopqrstuvwxyz',
    }));
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'r1', maxSnapshotBytes: 64 * 1024, heartbeatIntervalMs: false });
    const parse = vi.spyOn(JSON, 'parse');
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    const longest = Math.max(0, ...parse.mock.calls.map(([t]) => (typeof t === 'string' ? t.length : 0)));
    parse.mockRestore();
    await writer.close();
    if (!r.ok) throw r.error;
    expect(r.outcome).toBe('written');
    expect(longest).toBeLessThan(64 * 1024); // nothing longer than a part was parsed
    expect((await readSnapshot(storage, defaultProfile, r.key))?.payload).toEqual(payload);
  });
});

describe('reading a split checkpoint back from its texts', () => {
  afterEach(() => vi.restoreAllMocks());

  /** A payload written split (limit `maxBytes`) to a fresh memoryStorage; the key of its document. */
  async function written(payload: JsonValue, maxBytes: number) {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'r1', maxSnapshotBytes: maxBytes, heartbeatIntervalMs: false });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
    await writer.close();
    return { storage, r };
  }

  it('resolves as resolveParts does, verified over the reassembled text, and any changed byte of a part or of the main document is caught (property)', async () => {
    const payloadArb = fc.oneof(
      value,
      fc.array(
        fc.record({ id: fc.nat(), name: fc.string({ maxLength: 12 }), tags: fc.array(fc.constantFrom('a', 'é', '😀'), { maxLength: 3 }) }),
        { minLength: 50, maxLength: 400 },
      ),
    );
    await fc.assert(
      fc.asyncProperty(payloadArb, fc.integer({ min: 2000, max: 20_000 }), fc.nat(), async (payload, maxBytes, pick) => {
        const { storage, r } = await written(payload, maxBytes);
        if (!r.ok) return; // refused (a value over the limit): nothing to read
        const mainBytes = (await storage.get(r.key))!.bytes;
        const text = new TextDecoder().decode(mainBytes);
        const load = async (key: string) => (await storage.get(key))?.bytes;
        const main = parseJson(text) as JsonObject;
        const fast = await resolvePartsOfText(text, main, r.snapshot.integrity.checksum, load);
        const oracle = await resolveParts(parseJson(text), async (key) => parseJson(new TextDecoder().decode((await load(key))!)));
        expect(fast).toEqual(oracle);
        expect((await readSnapshot(storage, defaultProfile, r.key))?.payload).toEqual(payload);
        // One byte changed, in a part or in the main document: refused.
        const keys = (await listAll(storage, 'checkpoints/r1/')).map((e) => e.key).filter((k) => k.includes('/parts/'));
        if (keys.length === 0) return;
        const target = pick % 3 === 0 ? r.key : keys[pick % keys.length]!;
        const bytes = new Uint8Array((await storage.get(target))!.bytes);
        const at = bytes.findIndex((b, i) => i > pick % bytes.length && b >= 0x61 && b <= 0x7a);
        if (at < 0) return;
        bytes[at] = bytes[at] === 0x61 ? 0x62 : 0x61;
        await storage.put(target, bytes);
        await expect(readSnapshot(storage, defaultProfile, r.key)).rejects.toMatchObject({
          reasonCode: expect.stringMatching(/checkpoint_integrity_mismatch|checkpoint_schema_invalid|checkpoint_not_found/),
        });
      }),
      { numRuns: 40 },
    );
  });

  it('a payload holding an empty list under the chunked-array marker reads back as written (regression: taken for a reference to no parts, the checkpoint failed its checksum)', async () => {
    const payloads: JsonValue[] = [
      { '': { '0': { $savepoint_parts: [] } } },
      { $savepoint_parts: [] },
      [{ $savepoint_parts: [] }, { $savepoint_part: [] }],
    ];
    for (const payload of payloads) {
      const { storage, r } = await written(payload, 2000);
      if (!r.ok) throw r.error;
      expect((await readSnapshot(storage, defaultProfile, r.key))?.payload).toEqual(payload);
    }
  });

  it('a part reference edited in the main document is refused, not read past: its members are outside the checksum (regression: "bytes" renamed was read as a reference)', async () => {
    const payload = Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a'] }));
    for (const edit of [
      (t: string) => t.replace('{"bytes":', '{"aytes":'),
      (t: string) => t.replace(/\{"bytes":(\d+)/, (_, n: string) => `{"bytes":${Number(n) + 1}`),
      (t: string) => t.replace('{"bytes":', '{"extra":1,"bytes":'),
    ]) {
      const { storage, r } = await written(payload, 2000);
      if (!r.ok) throw r.error;
      const text = new TextDecoder().decode((await storage.get(r.key))!.bytes);
      const edited = edit(text);
      expect(edited).not.toBe(text);
      await storage.put(r.key, new TextEncoder().encode(edited));
      await expect(readSnapshot(storage, defaultProfile, r.key)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
    }
  });

  it('a split checkpoint of many small values is read without serializing the reassembled document again (regression: its whole text was rebuilt to check the checksum)', async () => {
    const payload = Array.from({ length: 4000 }, (_, i) => ({
      id: i,
      name: `item ${i}`,
      tags: ['a', 'b'],
      note: 'abcdefghijklmnopqrstuvwxyz',
    }));
    const { storage, r } = await written(payload, 64 * 1024);
    if (!r.ok) throw r.error;
    const stringify = vi.spyOn(JSON, 'stringify');
    const back = await readSnapshot(storage, defaultProfile, r.key);
    const longest = Math.max(0, ...stringify.mock.results.map((x) => (typeof x.value === 'string' ? x.value.length : 0)));
    stringify.mockRestore();
    expect(back?.payload).toEqual(payload);
    expect(longest).toBeLessThan(64 * 1024);
  });
});

describe('a split checkpoint written by the previous release (tests/fixtures/split)', () => {
  const dir = new URL('../fixtures/split/', import.meta.url);
  const header = {
    id: 'cp_20260101T000000000Z_000001',
    runId: 'r1',
    sequence: 1,
    createdAt: '2026-01-01T00:00:00.000Z',
    source: 'manual',
    sourceDetails: [],
    status: 'in_progress',
  } as const;
  const partKey = (n: number): string => `checkpoints/r1/parts/1/${n}.json`;
  const partFiles = (): string[] =>
    readdirSync(dir)
      .filter((f) => /^\d+\.json$/.test(f))
      .sort((a, b) => parseInt(a) - parseInt(b));

  it('is written again byte for byte: main document and every part (the fixture was made by the object splitter before the text split)', async () => {
    const t = validateTrigger(defaultProfile, { source: 'manual', status: 'in_progress', payload: goldenPayload() as JsonValue }, 0);
    const s = await encodeForStorage(
      defaultProfile,
      header as unknown as SnapshotHeader<JsonValue>,
      t.payloadText,
      { maxBytes: 3000, onOversize: 'split', partKey },
      t.payloadPieces,
    );
    expect(Buffer.from(s.bytes).equals(readFileSync(new URL('main.json', dir)))).toBe(true);
    expect(s.parts.map((p) => p.key.split('/').pop())).toEqual(partFiles());
    for (const p of s.parts) expect(Buffer.from(p.data).equals(readFileSync(new URL(p.key.split('/').pop()!, dir)))).toBe(true);
  });

  it('is read back from its texts (chunked arrays and parts holding references among them)', async () => {
    const storage = memoryStorage();
    for (const f of partFiles()) await storage.put(partKey(parseInt(f)), new Uint8Array(readFileSync(new URL(f, dir))));
    const mainKey = 'checkpoints/r1/history/cp_20260101T000000000Z_000001.json';
    const main = new Uint8Array(readFileSync(new URL('main.json', dir)));
    await storage.put(mainKey, main);
    const text = new TextDecoder().decode(main);
    const doc = parseJson(text) as { integrity: { checksum: string } };
    const fast = await resolvePartsOfText(text, doc, doc.integrity.checksum, async (k) => (await storage.get(k))?.bytes);
    expect((fast as { state: unknown }).state).toEqual(goldenPayload());
    expect((await readSnapshot(storage, defaultProfile, mainKey))?.payload).toEqual(goldenPayload());
  });
});

describe('a payload holding a part marker that refers to no part', () => {
  it('is read back as the data it is, split or not (regression: a raw TypeError from resolveParts)', async () => {
    const odd = {
      a: { $savepoint_part: '' },
      b: { $savepoint_parts: 3 },
      c: { $savepoint_part: { key: 1, sha256: 'x' } },
      d: [{ $savepoint_parts: [null] }],
    };
    for (const payload of [odd, { ...odd, rows: Array.from({ length: 300 }, (_, i) => ({ i, s: `row ${i}`.padEnd(40, '.') })) }]) {
      const storage = memoryStorage();
      const writer = createWriter({ storage, profile: defaultProfile, runId: 'r1', maxSnapshotBytes: 4096, heartbeatIntervalMs: false });
      const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
      await writer.close();
      if (!r.ok) throw r.error;
      expect((await readSnapshot(storage, defaultProfile, r.key))?.payload).toEqual(payload);
    }
  });
});
