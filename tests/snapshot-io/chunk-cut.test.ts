/**
 * The write side of content chunks (src/snapshot-io/chunk-cut.ts): a document cut reusing the
 * leaves of recent versions is cut exactly as `chunkDocument` cuts it from scratch, names the
 * same chunks, and never leaves out a chunk that was not written; chunks this process only read
 * are not written again.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { chunkKey, decodeEnvelope, decodeNode, encodeNode, leafBoundaries } from '../../src/codec/chunking.js';
import { sha256HexSync } from '../../src/codec/sha256.js';
import { inflateChunk, looksDeflated } from '../../src/codec/chunk-packing.js';
import { cutDocument, forgetWritten, rememberWritten } from '../../src/snapshot-io/chunk-cut.js';
import { chunkDocument, resolveChunked, type ChunkedDocument } from '../../src/snapshot-io/chunk-store.js';
import { handOver } from '../../src/storage/handed-over.js';

type Edit =
  | { kind: 'insert'; at: number; text: string }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'replace'; at: number; text: string }
  | { kind: 'append'; text: string }
  | { kind: 'other' };

/** Text in which content boundaries are frequent (varied letters), and runs where they are rare (one letter). */
const piece = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz"{},:'.split('')), minLength: 1, maxLength: 3000 }),
  fc.integer({ min: 1, max: 5000 }).map((n) => 'z'.repeat(n)),
);
const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: piece }),
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), length: fc.integer({ min: 1, max: 4000 }) }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), text: piece }),
  fc.record({ kind: fc.constant('append' as const), text: piece }),
  fc.constant({ kind: 'other' as const }),
);

function apply(text: string, e: Edit): string {
  switch (e.kind) {
    case 'insert': {
      const at = e.at % (text.length + 1);
      return text.slice(0, at) + e.text + text.slice(at);
    }
    case 'delete': {
      const at = e.at % (text.length + 1);
      return text.slice(0, at) + text.slice(at + e.length);
    }
    case 'replace': {
      const at = e.at % (text.length + 1);
      return text.slice(0, at) + e.text + text.slice(at + e.text.length);
    }
    case 'append':
      return text + e.text;
    case 'other':
      return text;
  }
}

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const sync = <T>(value: T | Promise<T>): T => {
  if (value instanceof Promise) throw new Error('expected a synchronous answer on memoryStorage');
  return value;
};

/** A written chunk's content: its bytes, inflated when stored deflated. */
function contentOf(stored: Uint8Array): Uint8Array {
  if (!looksDeflated(stored)) return stored;
  const inflated = inflateChunk(stored);
  if (!('content' in inflated)) throw new Error(`a written chunk does not inflate: ${inflated.failed}`);
  return inflated.content;
}

/** Every chunk id a chunked document references, with the bytes each stands for, from the written chunks. */
function referenced(doc: ChunkedDocument, stored: Map<string, Uint8Array>): string[] {
  const envelope = decodeEnvelope(doc.envelope, 'doc')!;
  const out: string[] = [];
  let level = [...envelope.ids];
  for (let depth = envelope.depth; depth >= 0; depth--) {
    out.push(...level);
    if (depth === 0) break;
    level = level.flatMap((id) => decodeNode(stored.get(id)!, id));
  }
  return out;
}

/** A memory store whose content addressing counts the bytes it hashes synchronously (`counter.hashed`). */
function countingStore(): {
  storage: StorageAdapter;
  addressing: { scheme: string; id: (b: Uint8Array) => Promise<string>; idSync: (b: Uint8Array) => string };
  counter: { hashed: number };
} {
  const counter = { hashed: 0 };
  const addressing = {
    scheme: 'test-counting',
    id: (bytes: Uint8Array) => Promise.resolve(sha256HexSync(bytes)!),
    idSync: (bytes: Uint8Array): string => {
      counter.hashed += bytes.length;
      return sha256HexSync(bytes)!;
    },
  };
  return { storage: Object.assign(memoryStorage(), { contentAddressing: addressing }), addressing, counter };
}

describe('cutting a document for writing', () => {
  it('reusing recent versions cuts every version as chunkDocument does, and every chunk referenced was written', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz'.split('')), minLength: 16_384, maxLength: 40_000 }),
        fc.array(fc.tuple(fc.nat(2), edit), { minLength: 1, maxLength: 12 }),
        (start, edits) => {
          const storage: StorageAdapter = memoryStorage();
          // Three lineages (three threads of one store), edited in turn.
          const texts = [start, `{"other":${JSON.stringify(start.slice(0, 9000))}}${start}`, start.slice(100)];
          const stored = new Map<string, Uint8Array>();
          for (const [lineage, e] of edits) {
            texts[lineage] = apply(texts[lineage]!, e);
            const bytes = encode(texts[lineage]!);
            if (bytes.length < 16_384) continue;
            const cut = sync(cutDocument(storage, bytes));
            const scratch = sync(chunkDocument(memoryStorage(), bytes));
            expect(Buffer.from(cut.envelope).toString()).toBe(Buffer.from(scratch.envelope).toString());
            expect([...cut.ids].sort()).toEqual([...scratch.ids].sort());
            for (const w of cut.writes) {
              expect(w.key).toBe(chunkKey(w.id));
              expect(sha256HexSync(contentOf(w.bytes))).toBe(w.id);
              stored.set(w.id, contentOf(w.bytes).slice());
            }
            for (const id of referenced(cut, stored)) expect(stored.has(id), `chunk ${id} referenced but never written`).toBe(true);
            rememberWritten(
              storage,
              cut.writes.map((w) => w.id),
            );
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('an append to a long document cuts and hashes only the new end: its leaves before are reused as they were', () => {
    const storage = memoryStorage();
    let text = `{"messages":[${Array.from({ length: 60 }, (_, i) => JSON.stringify(`message ${i} ${'lorem ipsum dolor '.repeat(60 + (i % 7))}`)).join(',')}]`;
    const first = sync(cutDocument(storage, encode(`${text},"n":0}`)));
    rememberWritten(
      storage,
      first.writes.map((w) => w.id),
    );
    text += `,"more":${JSON.stringify('sit amet '.repeat(200))}`;
    const next = sync(cutDocument(storage, encode(`${text},"n":1}`)));
    const leaves = leafBoundaries(encode(`${text},"n":1}`)).length;
    // Only the leaves from the edit point on and the path of nodes above them are new.
    expect(next.writes.length).toBeGreaterThan(0);
    expect(next.writes.length).toBeLessThan(leaves / 4);
  });

  it('a small edit among many long strings followed by the same member name hashes only the leaves it changed', () => {
    // Leaves end at long strings' ends, so most start with the same bytes (`","rev":`): finding
    // the recent version's leaf must not stop at the first leaf with those bytes.
    fc.assert(
      fc.property(
        fc.integer({ min: 24, max: 160 }),
        fc.array(fc.tuple(fc.nat(), fc.nat(100_000)), { minLength: 1, maxLength: 4 }),
        (count, edits) => {
          const { storage, addressing, counter } = countingStore();
          const fresh = (): StorageAdapter =>
            Object.assign(memoryStorage(), { contentAddressing: { ...addressing, idSync: sha256HexSync } });
          const revs = Array.from({ length: count }, () => 0);
          const doc = (): Uint8Array =>
            encode(
              JSON.stringify({
                items: revs.map((rev, k) => ({ id: k, text: `item ${k} `.padEnd(990, String.fromCharCode(97 + ((k * 7) % 26))), rev })),
              }),
            );
          rememberWritten(storage, sync(cutDocument(storage, doc())).ids);
          for (const [at, rev] of edits) {
            revs[at % count] = rev;
            const bytes = doc();
            counter.hashed = 0;
            const cut = sync(cutDocument(storage, bytes));
            rememberWritten(storage, cut.ids);
            // The changed item's leaf and the one after (its end moved), and one path of nodes: far from the whole document.
            expect(counter.hashed).toBeLessThan(8 * 1024);
            expect(Buffer.from(cut.envelope).toString()).toBe(Buffer.from(sync(chunkDocument(fresh(), bytes)).envelope).toString());
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it('items inserted among many long strings followed by the same member name: only the new items and the leaf before them are hashed (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 30, max: 120 }), fc.nat(), fc.integer({ min: 1, max: 16 }), (count, where, added) => {
        const { storage, counter } = countingStore();
        const item = (k: number) => ({ id: k, text: `item ${k} `.padEnd(990, String.fromCharCode(97 + ((k * 7) % 26))), rev: 0 });
        const items = Array.from({ length: count }, (_, k) => item(k));
        rememberWritten(storage, sync(cutDocument(storage, encode(JSON.stringify({ items })))).ids);
        const at = where % (count + 1);
        items.splice(at, 0, ...Array.from({ length: added }, (_, k) => item(1000 + k)));
        counter.hashed = 0;
        sync(cutDocument(storage, encode(JSON.stringify({ items }))));
        // The new items' leaves, the leaf the insertion ends, and the paths of nodes above them.
        expect(counter.hashed).toBeLessThan((added + 2) * 1100 + 4096);
      }),
      { numRuns: 40 },
    );
  });

  it('chunks this process read (another process wrote them) are not written again, before and after a version it cut itself', async () => {
    const storage = memoryStorage();
    const base = `{"log":${JSON.stringify(Array.from({ length: 400 }, (_, i) => `entry ${i} ${'abcdefghij'.repeat(i % 13)}`))}`;
    // Another process's document: its chunks stored, this process knows them by reading them only.
    const other = sync(chunkDocument(memoryStorage(), encode(`${base}}`)));
    for (const w of other.writes) await storage.put(w.key, w.bytes);
    await storage.put('doc', other.envelope);
    expect(await resolveChunked(storage, 'doc', other.envelope)).toEqual(encode(`${base}}`));

    const written = new Set<string>();
    for (let v = 1; v <= 3; v++) {
      const doc = sync(cutDocument(storage, encode(`${base},"v":${v}}`)));
      for (const w of doc.writes) written.add(w.id);
      rememberWritten(
        storage,
        doc.writes.map((w) => w.id),
      );
    }
    const theirs = new Set(other.writes.map((w) => w.id));
    const rewritten = [...written].filter((id) => theirs.has(id));
    // The last leaf of theirs ends where their document ends: ours continues past it, so it is a new leaf, not a rewrite.
    expect(rewritten).toEqual([]);
    expect(written.size).toBeLessThan(12);
  });

  it('a chunk a sweep of this process hid is written again by the next version that references it', () => {
    const storage = memoryStorage();
    const text = `{"a":${JSON.stringify('0123456789abcdef'.repeat(3000))}`;
    const first = sync(cutDocument(storage, encode(`${text},"v":1}`)));
    rememberWritten(
      storage,
      first.writes.map((w) => w.id),
    );
    const again = sync(cutDocument(storage, encode(`${text},"v":2}`)));
    const shared = first.ids.filter((id) => again.ids.includes(id));
    expect(shared.length).toBeGreaterThan(0);
    expect(again.writes.some((w) => shared.includes(w.id))).toBe(false);
    forgetWritten(storage, shared);
    const third = sync(cutDocument(storage, encode(`${text},"v":3}`)));
    for (const id of shared.filter((id) => third.ids.includes(id))) expect(third.writes.map((w) => w.id)).toContain(id);
  });

  it('a leaf a sweep of this process hid is written again by a later version, though the version before found every leaf written', () => {
    const storage = memoryStorage();
    const doc = (v: number): Uint8Array =>
      encode(
        JSON.stringify({
          items: Array.from({ length: 40 }, (_, k) => ({ id: k, text: `item ${k} `.padEnd(990, 'q'), rev: k === v ? v : 0 })),
        }),
      );
    const cut = (v: number): ChunkedDocument => {
      const c = sync(cutDocument(storage, doc(v)));
      rememberWritten(
        storage,
        c.writes.map((w) => w.id),
      );
      return c;
    };
    const first = cut(1);
    const second = cut(2);
    const third = cut(3);
    // One leaf of each: the first's found written when the second was cut, the second's when the third was.
    for (const [i, hidden] of [first.ids[10]!, third.ids[20]!].entries()) {
      expect(second.ids).toContain(hidden);
      forgetWritten(storage, [hidden]);
      const next = cut(4 + i);
      expect(next.ids).toContain(hidden);
      expect(next.writes.map((w) => w.id)).toContain(hidden);
    }
  });

  it('a store whose addressing hashes only asynchronously (keyed ids): the same cuts, ids of its own scheme', async () => {
    const keyed = (bytes: Uint8Array): string => sha256HexSync(new Uint8Array([...encode('key:'), ...bytes]))!;
    const addressing = { scheme: 'test-keyed', id: (bytes: Uint8Array) => Promise.resolve(keyed(bytes)) };
    const storage: StorageAdapter = Object.assign(memoryStorage(), { contentAddressing: addressing });
    const other: StorageAdapter = Object.assign(memoryStorage(), { contentAddressing: addressing });
    let text = `{"log":${JSON.stringify('lorem ipsum '.repeat(3000))}`;
    const written = new Set<string>();
    for (let v = 0; v < 4; v++) {
      text += `,"v${v}":${JSON.stringify(`version ${v} `.repeat(150 * (v + 1)))}`;
      const bytes = encode(`${text}}`);
      const cut = cutDocument(storage, bytes);
      expect(cut).toBeInstanceOf(Promise);
      const doc = await cut;
      const scratch = await chunkDocument(other, bytes);
      expect(Buffer.from(doc.envelope).toString()).toBe(Buffer.from(scratch.envelope).toString());
      expect(decodeEnvelope(doc.envelope, 'doc')!.scheme).toBe('test-keyed');
      for (const w of doc.writes) {
        expect(keyed(w.bytes)).toBe(w.id);
        written.add(w.id);
      }
      for (const id of doc.ids) expect(written.has(id)).toBe(true);
      rememberWritten(
        storage,
        doc.writes.map((w) => w.id),
      );
    }
  });

  it('a document handed over is remembered as it is, not copied; the versions after it are cut as chunkDocument cuts them', () => {
    const storage = memoryStorage();
    const messages = Array.from({ length: 40 }, (_, i) => `message ${i} ${'lorem ipsum dolor sit amet '.repeat(70 + (i % 5))}`);
    for (let turn = 0; turn < 4; turn++) {
      messages.push(`message of turn ${turn} ${'consectetur adipiscing elit '.repeat(80)}`);
      const encoded = encode(`{"messages":${JSON.stringify(messages)},"turn":${turn}}`);
      // A buffer of its own (handOver takes only those), as the writer and the saver seal.
      const bytes = new Uint8Array(encoded.length);
      bytes.set(encoded);
      handOver(bytes);
      const slice = vi.spyOn(Uint8Array.prototype, 'slice');
      const cut = sync(cutDocument(storage, bytes));
      const copiedLarge = slice.mock.contexts.filter((self) => (self as Uint8Array).length > 60_000);
      slice.mockRestore();
      expect(copiedLarge).toHaveLength(0);
      const scratch = sync(chunkDocument(memoryStorage(), bytes));
      expect(Buffer.from(cut.envelope).toString()).toBe(Buffer.from(scratch.envelope).toString());
      rememberWritten(
        storage,
        cut.writes.map((w) => w.id),
      );
    }
  });

  it('a node lists ids as it was given them', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), { minLength: 1, maxLength: 64 }), (raw) => {
        const ids = raw.map((b) => Buffer.from(b).toString('hex'));
        expect(decodeNode(encodeNode(ids), 'n')).toEqual(ids);
      }),
    );
  });
});
