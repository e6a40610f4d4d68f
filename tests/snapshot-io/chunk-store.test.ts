/**
 * The chunk store keeps whole documents it reassembled by their envelope
 * (src/snapshot-io/chunk-store.ts), so a checkpoint read again needs neither its chunks nor their
 * reassembly. An envelope stands for exactly one document; a document is kept only once read
 * (every chunk verified when first read, also those this process wrote); a sweep of this
 * process forgets them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { chunkDocument, forgetChunks, resolveChunked } from '../../src/snapshot-io/chunk-store.js';

/** `inner` with its gets counted. */
function countingGets(inner: StorageAdapter): { storage: StorageAdapter; gets: () => number } {
  let gets = 0;
  return { storage: { ...inner, get: (k, o) => (gets++, inner.get(k, o)) }, gets: () => gets };
}

async function store(storage: StorageAdapter, bytes: Uint8Array): Promise<Uint8Array> {
  const doc = await chunkDocument(storage, bytes);
  for (const w of doc.writes) await storage.put(w.key, w.bytes);
  return doc.envelope;
}

const docArb = fc.uint8Array({ minLength: 16 * 1024, maxLength: 40 * 1024 });

describe('chunk store: documents kept by their envelope', () => {
  it('each envelope reads back as its own document; read again, no chunk is read; all chunks read again once forgotten (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(docArb, { minLength: 1, maxLength: 4 }), async (docs) => {
        const { storage, gets } = countingGets(memoryStorage());
        const envelopes: Uint8Array[] = [];
        for (const d of docs) envelopes.push(await store(storage, d));
        for (const [i, envelope] of envelopes.entries()) {
          const first = gets();
          expect(Buffer.from((await resolveChunked(storage, 'doc', envelope))!).equals(Buffer.from(docs[i]!))).toBe(true);
          // Read and verified once, chunk by chunk (the chunk cache may hold some from another document).
          if (i === 0) expect(gets()).toBeGreaterThan(first);
          const again = gets();
          expect(Buffer.from((await resolveChunked(storage, 'doc', envelope))!).equals(Buffer.from(docs[i]!))).toBe(true);
          expect(gets()).toBe(again);
        }
        forgetChunks(storage);
        const before = gets();
        for (const [i, envelope] of envelopes.entries()) {
          const back = await resolveChunked(storage, 'doc', envelope);
          expect(Buffer.from(back!).equals(Buffer.from(docs[i]!))).toBe(true);
        }
        expect(gets()).toBeGreaterThan(before);
      }),
      { numRuns: 30 },
    );
  });

  it('a chunk damaged after its document was written is caught on the first read in the same process (nothing is kept at write time)', async () => {
    const storage = memoryStorage();
    const bytes = new Uint8Array(20_000).map((_, i) => (i * 11) % 251);
    const doc = await chunkDocument(storage, bytes);
    for (const w of doc.writes) await storage.put(w.key, w.bytes);
    const damaged = doc.writes[0]!.bytes.slice();
    damaged[0] = damaged[0]! ^ 1;
    await storage.put(doc.writes[0]!.key, damaged);
    await expect(resolveChunked(storage, 'doc', doc.envelope)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });

  it('a document handed out is a copy: changing it changes no later read', async () => {
    const storage = memoryStorage();
    const bytes = new Uint8Array(20_000).map((_, i) => (i * 7) % 251);
    const envelope = await store(storage, bytes);
    (await resolveChunked(storage, 'doc', envelope))!.fill(0);
    const kept = (await resolveChunked(storage, 'doc', envelope))!;
    kept.fill(0);
    expect(Buffer.from((await resolveChunked(storage, 'doc', envelope))!).equals(Buffer.from(bytes))).toBe(true);
  });

  it('a damaged chunk is caught once the process forgot what it wrote (a sweep of its own, or another process)', async () => {
    const storage = memoryStorage();
    const bytes = new Uint8Array(20_000).map((_, i) => (i * 13) % 251);
    const doc = await chunkDocument(storage, bytes);
    for (const w of doc.writes) await storage.put(w.key, w.bytes);
    const damaged = doc.writes[0]!.bytes.slice();
    damaged[0] = damaged[0]! ^ 1;
    await storage.put(doc.writes[0]!.key, damaged);
    forgetChunks(storage);
    await expect(resolveChunked(storage, 'doc', doc.envelope)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });
});
