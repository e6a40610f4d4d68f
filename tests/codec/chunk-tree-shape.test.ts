/**
 * The chunk tree's shape by its fanout (src/codec/chunking.ts `needsLevel`): a wide tree (fanout
 * `WIDE_FANOUT`, asked where each key is a file) lists up to 4 ids in its envelope, a narrower one
 * a single id; a document cut reusing its recent versions has the same tree as one cut from
 * scratch with the same fanout, and reads back.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { decodeEnvelope, WIDE_FANOUT } from '../../src/codec/chunking.js';
import { cutDocument, rememberWritten } from '../../src/snapshot-io/chunk-cut.js';
import { chunkDocument, forgetChunks, resolveChunked, type ChunkedDocument } from '../../src/snapshot-io/chunk-store.js';

const sync = (c: ChunkedDocument | Promise<ChunkedDocument>): ChunkedDocument => {
  if (c instanceof Promise) throw new Error('expected a synchronous cut');
  return c;
};

/** A JSON list of `count` strings of letters: each a leaf or two of its own, so a long list makes a deep tree. */
function list(count: number, seed: number): Uint8Array {
  const items: string[] = [];
  let x = seed || 1;
  for (let i = 0; i < count; i++) {
    let s = '';
    while (s.length < 150) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      s += String.fromCharCode(97 + ((x >>> 0) % 26));
    }
    items.push(s);
  }
  return new TextEncoder().encode(JSON.stringify({ step: seed, items }));
}

const rootMax = (fanout: number): number => (fanout >= WIDE_FANOUT ? 4 : 1);

describe('chunk tree shape by fanout', () => {
  it('appending versions: each cut as from scratch with the same fanout, at most 4 root ids when wide and 1 otherwise, reading back (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(4, 8, WIDE_FANOUT),
        fc.integer({ min: 60, max: 300 }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 3 }),
        fc.integer({ min: 1, max: 1 << 30 }),
        async (fanout, start, appends, seed) => {
          const storage: StorageAdapter = memoryStorage();
          let count = start;
          let last: { envelope: Uint8Array; bytes: Uint8Array } | undefined;
          for (const added of [0, ...appends]) {
            count += added;
            const bytes = list(count, seed);
            const cut = sync(cutDocument(storage, bytes, fanout));
            const scratch = sync(chunkDocument(memoryStorage(), bytes, fanout));
            expect(Buffer.from(cut.envelope).toString()).toBe(Buffer.from(scratch.envelope).toString());
            const envelope = decodeEnvelope(cut.envelope, 'doc')!;
            expect(envelope.ids.length).toBeLessThanOrEqual(rootMax(fanout));
            for (const w of cut.writes) await storage.put(w.key, w.bytes);
            rememberWritten(
              storage,
              cut.writes.map((w) => w.id),
            );
            last = { envelope: cut.envelope, bytes };
          }
          // Read back by a process that knows none of the chunks: every level of the tree followed.
          forgetChunks(storage);
          expect(Buffer.from((await resolveChunked(storage, 'doc', last!.envelope))!).equals(Buffer.from(last!.bytes))).toBe(true);
        },
      ),
      { numRuns: 20 },
    );
  });

  it('a list of 600 items: a wide tree keeps several ids in its envelope and a level less than one of fanout 8', () => {
    const bytes = list(600, 7);
    const wide = decodeEnvelope(sync(chunkDocument(memoryStorage(), bytes, WIDE_FANOUT)).envelope, 'doc')!;
    const narrow = decodeEnvelope(sync(chunkDocument(memoryStorage(), bytes, 8)).envelope, 'doc')!;
    expect(wide.ids.length).toBeGreaterThan(1);
    expect(narrow.ids).toHaveLength(1);
    expect(wide.depth).toBeLessThan(narrow.depth);
  });
});
