/**
 * What cutting a version costs (src/snapshot-io/chunk-cut.ts), counted in bytes hashed: a node
 * the version before already had is not hashed again, even where a chunk repeated all through
 * the document starts many nodes; and a document's first version is hashed once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { sha256HexSync } from '../../src/codec/sha256.js';
import { cutDocument, rememberWritten } from '../../src/snapshot-io/chunk-cut.js';
import { chunkDocument } from '../../src/snapshot-io/chunk-store.js';
import { letters } from '../support/letters.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const sync = <T>(value: T | Promise<T>): T => {
  if (value instanceof Promise) throw new Error('expected a synchronous answer on memoryStorage');
  return value;
};

/** A memory store whose content addressing counts the bytes it hashes (`counter.hashed`) and the chunks (`counter.chunks`). */
function countingStore(): { storage: StorageAdapter; counter: { hashed: number; chunks: number } } {
  const counter = { hashed: 0, chunks: 0 };
  const addressing = {
    scheme: 'test-counting',
    id: (bytes: Uint8Array) => Promise.resolve(sha256HexSync(bytes)!),
    idSync: (bytes: Uint8Array): string => {
      counter.hashed += bytes.length;
      counter.chunks++;
      return sha256HexSync(bytes)!;
    },
  };
  return { storage: Object.assign(memoryStorage(), { contentAddressing: addressing }), counter };
}

describe('what cutting a version costs', () => {
  it('a list of long strings, the same `,"` chunk between every two: a changed item hashes its leaves and one path of nodes, not the nodes the version before had', () => {
    const { storage, counter } = countingStore();
    const items = Array.from({ length: 300 }, (_, k) => letters(k + 1, 1000));
    const doc = (): Uint8Array => encode(JSON.stringify({ items }));
    rememberWritten(storage, sync(cutDocument(storage, doc())).ids);
    for (let v = 0; v < 6; v++) {
      items[(v * 37) % items.length] = letters(1000 + v, 1000);
      counter.hashed = 0;
      counter.chunks = 0;
      const cut = sync(cutDocument(storage, doc()));
      rememberWritten(storage, cut.ids);
      // The changed item's leaf, the leaf before it and the `,"` after it (their lookahead changed), and one
      // node per level above them (three levels of fanout 8 over ~600 leaves); a node the version before had
      // is found again, not hashed.
      expect(counter.chunks).toBeLessThanOrEqual(10);
      expect(counter.hashed).toBeLessThan(8 * 1024);
    }
  });

  it("a document's first version is hashed once: its leaves and nodes, not again to find what to write", () => {
    const { storage, counter } = countingStore();
    const bytes = encode(JSON.stringify({ items: Array.from({ length: 100 }, (_, k) => letters(k + 1, 1000)) }));
    const cut = sync(cutDocument(storage, bytes));
    // Every leaf once (the edges are not hashed), and a few nodes.
    expect(counter.hashed).toBeLessThan(bytes.length * 1.1);
    expect(counter.hashed).toBeGreaterThan(bytes.length * 0.9);
    // And it is what chunkDocument makes of it.
    const scratch = sync(chunkDocument(countingStore().storage, bytes));
    expect(Buffer.from(cut.envelope).toString()).toBe(Buffer.from(scratch.envelope).toString());
    expect(cut.writes.map((w) => w.id)).toEqual(scratch.writes.map((w) => w.id));
  });
  it('items of a list replaced, removed or added: each version as chunkDocument cuts it, hashing what changed and at most 8 leaves or 8 KiB more before the lookup by first bytes (property)', () => {
    const op = fc.record({ kind: fc.constantFrom('replace', 'remove', 'add'), at: fc.nat(), seed: fc.integer({ min: 1, max: 1_000_000 }) });
    fc.assert(
      fc.property(fc.integer({ min: 20, max: 120 }), fc.array(op, { minLength: 1, maxLength: 6 }), (count, ops) => {
        const { storage, counter } = countingStore();
        const items = Array.from({ length: count }, (_, k) => letters(k + 1, 1000));
        const doc = (): Uint8Array => encode(JSON.stringify({ items }));
        rememberWritten(storage, sync(cutDocument(storage, doc())).ids);
        for (const { kind, at, seed } of ops) {
          const k = at % items.length;
          if (kind === 'replace') items[k] = letters(seed, 1000);
          else if (kind === 'remove' && items.length > 20) items.splice(k, 1);
          else items.splice(k, 0, letters(seed, 1000));
          const bytes = doc();
          counter.hashed = 0;
          const cut = sync(cutDocument(storage, bytes));
          rememberWritten(storage, cut.ids);
          expect(Buffer.from(cut.envelope).toString()).toBe(
            Buffer.from(sync(chunkDocument(countingStore().storage, bytes)).envelope).toString(),
          );
          // The changed item, the leaves around it, up to 8 leaves or 8 KiB cut before a lookup, a path of nodes.
          expect(counter.hashed).toBeLessThan(3 * 1024 + 9 * 1024 + 4 * 1024);
        }
      }),
      { numRuns: 25 },
    );
  });
});
