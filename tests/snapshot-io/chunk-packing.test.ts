/**
 * Chunks stored deflated (src/codec/chunk-packing.ts, docs/storage.md "Content chunks"): a
 * chunk's id is the hash of its content whatever its stored form; every read inflates (bounded)
 * and checks the content against the id; a store written before chunks were compressed reads
 * as it did.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { deflateSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, memoryStorage, type JsonValue, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { CHUNK_CONTENT_MAX_BYTES, inflateChunk, looksDeflated, packChunk } from '../../src/codec/chunk-packing.js';
import { CHUNK_PREFIX, chunkKey, edgesOf } from '../../src/codec/chunking.js';
import { crc32 } from '../../src/codec/gzip.js';
import { sha256HexSync } from '../../src/codec/sha256.js';
import { auditChunks } from '../../src/snapshot-io/chunk-refs.js';
import { sweepChunks } from '../../src/retention/chunk-sweep.js';
import { chunkDocument, forgetChunks, resolveChunked, type ChunkedDocument } from '../../src/snapshot-io/chunk-store.js';
import { prose } from '../support/prose.js';

const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

async function store(storage: StorageAdapter, bytes: Uint8Array): Promise<ChunkedDocument> {
  const doc = await chunkDocument(storage, bytes);
  for (const w of doc.writes) await storage.put(w.key, w.bytes);
  return doc;
}

/** JSON-like text (compressible, as checkpoints are) or arbitrary bytes (not), of 16–40 KB. */
const documentArb = fc.oneof(
  fc
    .array(fc.string({ unit: fc.constantFrom(...'abcdefgh {}[]":,0123456789é漢'.split('')), minLength: 20, maxLength: 400 }), {
      minLength: 80,
      maxLength: 200,
    })
    .map((parts) => {
      // At least 16 KiB (a smaller document is stored whole): the parts again, in reverse, until it is.
      let text = JSON.stringify(parts);
      while (text.length < 16 * 1024) text = `[${text},${JSON.stringify([...parts].reverse())}]`;
      return new TextEncoder().encode(text);
    }),
  fc.uint8Array({ minLength: 16 * 1024, maxLength: 40 * 1024 }),
);

/** A mark, the deflated bytes and their CRC-32: the stored form of a deflated chunk, made by hand. */
function deflatedForm(deflated: Uint8Array): Uint8Array {
  const out = new Uint8Array(2 + deflated.length + 4);
  out.set([0xff, 0x01]);
  out.set(deflated, 2);
  new DataView(out.buffer).setUint32(out.length - 4, crc32(deflated), true);
  return out;
}

describe('chunks stored deflated', () => {
  it('any document reads back exactly, from a new process state; a deflated chunk is smaller than its content (property)', async () => {
    await fc.assert(
      fc.asyncProperty(documentArb, async (bytes) => {
        const storage = memoryStorage();
        const doc = await store(storage, bytes);
        for (const w of doc.writes) {
          // Stored deflated (smaller than its content), or as it is (bytes that start with the mark by chance, too).
          const inflated = looksDeflated(w.bytes) ? inflateChunk(w.bytes) : undefined;
          if (inflated && 'content' in inflated && sha256HexSync(inflated.content) === w.id)
            expect(w.bytes.length).toBeLessThan(inflated.content.length);
          else expect(sha256HexSync(w.bytes)).toBe(w.id);
        }
        forgetChunks(storage);
        expect(same((await resolveChunked(storage, 'doc', doc.envelope))!, bytes)).toBe(true);
      }),
      { numRuns: 40 },
    );
  });

  it('compresses the leaves of text: a JSON document stores fewer chunk bytes than it holds', async () => {
    const storage = memoryStorage();
    const text = JSON.stringify(Array.from({ length: 400 }, (_, i) => ({ turn: i, role: 'assistant', text: `reply number ${i}` })));
    const doc = await store(storage, new TextEncoder().encode(text));
    const leaves = doc.writes.filter((w) => looksDeflated(w.bytes));
    expect(leaves.length).toBeGreaterThan(0);
    const stored = doc.writes.reduce((n, w) => n + w.bytes.length, 0);
    expect(stored).toBeLessThan(text.length / 2);
  });

  it('any single changed byte of any stored chunk fails the read with checkpoint_integrity_mismatch naming the chunk (property)', async () => {
    await fc.assert(
      fc.asyncProperty(documentArb, fc.nat(), fc.nat(), fc.integer({ min: 1, max: 255 }), async (bytes, pick, at, mask) => {
        const storage = memoryStorage();
        const doc = await store(storage, bytes);
        const victim = doc.writes[pick % doc.writes.length]!;
        const damaged = victim.bytes.slice();
        damaged[at % damaged.length]! ^= mask;
        await storage.put(victim.key, damaged);
        forgetChunks(storage);
        await expect(resolveChunked(storage, 'doc', doc.envelope)).rejects.toMatchObject({
          reasonCode: 'checkpoint_integrity_mismatch',
          message: expect.stringContaining(victim.key) as unknown,
        });
      }),
      { numRuns: 80 },
    );
  });

  it('a change in the padding bits of a deflated chunk’s last byte is caught (the CRC; the content alone would not show it)', async () => {
    const storage = memoryStorage();
    const text = new TextEncoder().encode('{"a":"' + 'the agent called a tool '.repeat(900) + '"}');
    const doc = await store(storage, text);
    const victim = doc.writes.find((w) => looksDeflated(w.bytes))!;
    const body = victim.bytes.subarray(2, victim.bytes.length - 4);
    // Every high bit of the deflate stream's last byte that leaves the content as it was: such a flip changes only the CRC check.
    let silent = 0;
    for (let bit = 0; bit < 8; bit++) {
      const flipped = body.slice();
      flipped[flipped.length - 1]! ^= 1 << bit;
      const again = inflateChunk(deflatedForm(flipped));
      if ('content' in again && sha256HexSync(again.content) === victim.id) silent++;
      const damaged = victim.bytes.slice();
      damaged[damaged.length - 5]! ^= 1 << bit;
      expect(inflateChunk(damaged)).toEqual({ failed: 'crc' });
    }
    expect(silent).toBeGreaterThan(0);
  });

  it('a stored chunk that inflates past the largest chunk (a zip bomb) is checkpoint_integrity_mismatch, and inflating stops at the bound', async () => {
    const storage = memoryStorage();
    const bytes = new TextEncoder().encode(JSON.stringify({ text: 'x'.repeat(20_000) }));
    const doc = await store(storage, bytes);
    const bomb = deflatedForm(deflateSync(new Uint8Array(4 * 1024 * 1024), { level: 1 }));
    expect(bomb.length).toBeLessThan(64 * 1024);
    expect(inflateChunk(bomb)).toEqual({ failed: 'too-large' });
    await storage.put(doc.writes[0]!.key, bomb);
    forgetChunks(storage);
    await expect(resolveChunked(storage, 'doc', doc.envelope)).rejects.toMatchObject({
      reasonCode: 'checkpoint_integrity_mismatch',
      message: expect.stringContaining('inflates past') as unknown,
    });
    // Just past the bound is refused; at the bound is content like any other.
    expect(inflateChunk(deflatedForm(deflateSync(new Uint8Array(CHUNK_CONTENT_MAX_BYTES + 1))))).toEqual({ failed: 'too-large' });
    expect(inflateChunk(deflatedForm(deflateSync(new Uint8Array(CHUNK_CONTENT_MAX_BYTES))))).toMatchObject({
      content: expect.any(Uint8Array),
    });
  });

  it('a chunk stored as it is whose content starts with the deflated mark reads as its content', async () => {
    const storage = memoryStorage();
    let x = 0x9e3779b9;
    const bytes = new Uint8Array(20_000).map(() => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return x >>> 24;
    });
    // Where the first leaf starts: after the head the envelope holds (the mark is not in the 32 bytes that place it).
    bytes.set([0xff, 0x01], edgesOf(bytes).head);
    const doc = await store(storage, bytes);
    const first = doc.writes.find((w) => w.bytes[0] === 0xff)!;
    expect(looksDeflated(first.bytes)).toBe(true);
    expect(sha256HexSync(first.bytes)).toBe(first.id); // stored as it is: random bytes do not compress
    forgetChunks(storage);
    expect(same((await resolveChunked(storage, 'doc', doc.envelope))!, bytes)).toBe(true);
    expect(packChunk(first.bytes)).toBe(first.bytes);
  });

  it('verify checks deflated chunks by their content: an intact store has no problem, a damaged deflated chunk is reported', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'r', heartbeatIntervalMs: false, lock: false });
    const messages = Array.from({ length: 40 }, (_, i) => `message ${i}: ${'the agent called a tool and got back a result '.repeat(12)}`);
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { messages } });
    if (!r.ok) throw r.error;
    await writer.close();
    const clean = await auditChunks(storage);
    expect(clean.referenced).toBeGreaterThan(0);
    expect([clean.missing, clean.damaged, clean.unreferenced]).toEqual([[], [], []]);
    const chunks = await listAll(storage, CHUNK_PREFIX);
    const deflated: string[] = [];
    for (const c of chunks) if (looksDeflated((await storage.get(c.key))!.bytes)) deflated.push(c.key);
    expect(deflated.length).toBeGreaterThan(0);
    const victim = (await storage.get(deflated[0]!))!.bytes.slice();
    victim[10]! ^= 0x20;
    await storage.put(deflated[0]!, victim);
    const audit = await auditChunks(storage);
    expect(audit.damaged.map((d) => chunkKey(d.id))).toEqual([deflated[0]]);
  });
});

describe('the sweep with deflated chunks', () => {
  it('puts a hidden deflated chunk back when a document references it again (regression: its copy was checked by its stored bytes, never matching)', async () => {
    const storage = memoryStorage();
    const text = JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ turn: i, text: `reply ${i} of the agent` })));
    const doc = await store(storage, new TextEncoder().encode(text));
    const deflated = doc.writes.filter((w) => looksDeflated(w.bytes)).map((w) => w.id);
    expect(deflated.length).toBeGreaterThan(0);
    // No document references the chunks yet: the sweep hides them all.
    expect([...(await sweepChunks(storage)).hidden].sort()).toEqual([...doc.ids].sort());
    await storage.put('runs/late.json', doc.envelope);
    const report = await sweepChunks(storage);
    expect([...report.restored].sort()).toEqual([...doc.ids].sort());
    forgetChunks(storage);
    for (const w of doc.writes) expect(same((await storage.get(w.key))!.bytes, w.bytes)).toBe(true);
    expect(same((await resolveChunked(storage, 'runs/late.json', doc.envelope))!, new TextEncoder().encode(text))).toBe(true);
  });
});

describe('a store written before chunks were compressed', () => {
  /** The payloads the fixture's writer stored (tests/fixtures/chunks/store-written-uncompressed.json, made by the code before this change). */
  const NUMBERED_WORDS = Array.from({ length: 97 }, (_, i) => `word${i}`);
  const payloads = (): JsonValue[] => {
    const messages: string[] = [];
    return [0, 1, 2].map((step) => {
      for (let k = 0; k < 6; k++) messages.push(prose(step * 100 + k + 1, 1500, NUMBERED_WORDS));
      return { step, messages: [...messages] };
    });
  };

  async function load(): Promise<StorageAdapter> {
    const storage = memoryStorage();
    const url = new URL('../fixtures/chunks/store-written-uncompressed.json', import.meta.url);
    const entries = JSON.parse(readFileSync(url, 'utf8')) as Record<string, string>;
    for (const [key, base64] of Object.entries(entries)) await storage.put(key, new Uint8Array(Buffer.from(base64, 'base64')));
    return storage;
  }

  it('reads every checkpoint as written, passes verify, and a new checkpoint on it reads back too', async () => {
    const storage = await load();
    const history = (await listAll(storage, 'checkpoints/old-store/history/')).map((e) => e.key).sort();
    expect(history).toHaveLength(3);
    const expected = payloads();
    for (const [i, key] of history.entries()) expect((await readSnapshot(storage, defaultProfile, key))?.payload).toEqual(expected[i]);
    let plain = 0;
    for (const c of await listAll(storage, CHUNK_PREFIX)) if (!looksDeflated((await storage.get(c.key))!.bytes)) plain++;
    expect(plain).toBeGreaterThan(0);
    const audit = await auditChunks(storage);
    expect([audit.missing, audit.damaged, audit.unreferenced]).toEqual([[], [], []]);

    const writer = createWriter({ storage, profile: defaultProfile, runId: 'old-store', heartbeatIntervalMs: false, lock: false });
    const next = { step: 3, messages: [...(expected[2] as { messages: string[] }).messages, prose(999, 1500, NUMBERED_WORDS)] };
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: next });
    if (!r.ok) throw r.error;
    await writer.close();
    forgetChunks(storage);
    expect((await readSnapshot(storage, defaultProfile, r.key!))?.payload).toEqual(next);
  });
});
