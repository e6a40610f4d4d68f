/**
 * A chunked document's edges (src/codec/chunk-edges.ts): its first and last bytes are kept in
 * its envelope, so a new version that changes only its ends (a checkpoint's header, ids, small
 * channels) names the very same chunk tree and stores no chunk. Any document still reads back
 * exactly; damaged edges fail the read; a store with keyed addressing keeps them uncompressed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { createWriter, defaultProfile, listAll, memoryStorage, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { SavepointSaver } from 'savepoint/langgraph';
import { chunkKey, decodeEnvelope, edgesOf, encodeEnvelope, encodeNode, ENVELOPE_MAX_BYTES, GEAR } from '../../src/codec/chunking.js';
import { packChunk } from '../../src/codec/chunk-packing.js';
import { EDGE_DICTIONARY } from '../../src/codec/edge-dictionary.js';
import { EDGES_MAX_BYTES, EDGES_MEMBER_MAX, encodeEdges, HEAD_MIN, TAIL_MIN } from '../../src/codec/chunk-edges.js';
import { sha256HexSync } from '../../src/codec/sha256.js';
import { chunkDocument, forgetChunks, resolveChunked } from '../../src/snapshot-io/chunk-store.js';
import { cutDocument } from '../../src/snapshot-io/chunk-cut.js';
import { prose } from '../support/prose.js';

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);
const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

async function store(storage: StorageAdapter, bytes: Uint8Array): Promise<Uint8Array> {
  const doc = await chunkDocument(storage, bytes);
  for (const w of doc.writes) await storage.put(w.key, w.bytes);
  return doc.envelope;
}

/** Documents: prose (edge marks are frequent), random bytes, and low-entropy runs (marks rare: no edges). */
const documentArb = fc.oneof(
  fc.tuple(fc.integer(), fc.integer({ min: 1_000, max: 60_000 })).map(([seed, size]) => encode(prose(seed, size))),
  fc.uint8Array({ minLength: 1_000, maxLength: 40_000 }),
  fc.tuple(fc.integer({ min: 1, max: 30_000 }), fc.integer({ min: 0, max: 20_000 })).map(([n, m]) => encode('z'.repeat(n) + prose(7, m))),
);

/**
 * Random bytes (they do not compress) with a quote every 100 bytes (no text mark) whose head mark
 * comes late: edges too long to keep raw.
 */
function longEdged(): Uint8Array {
  for (let seed = 1; ; seed++) {
    let x = seed;
    const bytes = new Uint8Array(30_000).map((_, i) => (i % 100 === 99 ? 0x22 : ((x = (x * 1103515245 + 12345) >>> 0), x >>> 24)));
    const cut = edgesOf(bytes);
    if (encodeEdges(bytes.subarray(0, cut.head), bytes.subarray(bytes.length - cut.tail), false).length > EDGES_MEMBER_MAX) return bytes;
  }
}

/** The edges member as versions before the dictionary wrote it: `edges`, its bytes deflated (without a dictionary) or as they are. */
function earlierEdges(head: Uint8Array, tail: Uint8Array, compress: boolean): string {
  const both = new Uint8Array([...head, ...tail]);
  return `"edges":{"head":${head.length},"tail":${tail.length},"text":"${Buffer.from(compress ? packChunk(both) : both).toString('base64')}"}`;
}

/** The edges member as versions before Z85 wrote it: `dict_edges`, deflated with the dictionary, in base64. */
function dictionaryEdges(head: Uint8Array, tail: Uint8Array): string {
  const both = new Uint8Array([...head, ...tail]);
  return `"dict_edges":{"head":${head.length},"tail":${tail.length},"text":"${Buffer.from(packChunk(both, EDGE_DICTIONARY)).toString('base64')}"}`;
}

describe('chunk edges', () => {
  it('any document reads back exactly from a fresh process state; its edges are its own first and last bytes; the envelope stays small (property)', async () => {
    await fc.assert(
      fc.asyncProperty(documentArb, async (bytes) => {
        const storage = memoryStorage();
        const envelope = await store(storage, bytes);
        expect(envelope.length).toBeLessThanOrEqual(ENVELOPE_MAX_BYTES);
        const parsed = decodeEnvelope(envelope, 'doc')!;
        const cut = edgesOf(bytes);
        if (parsed.edges) {
          expect(same(parsed.edges.head, bytes.subarray(0, cut.head))).toBe(true);
          expect(same(parsed.edges.tail, bytes.subarray(bytes.length - cut.tail))).toBe(true);
        } else {
          // No mark within bounds, or edges too long to keep in an envelope an earlier version's sweep still reads.
          const member = encodeEdges(bytes.subarray(0, cut.head), bytes.subarray(bytes.length - cut.tail), true);
          expect(cut.head + cut.tail === 0 || member.length > EDGES_MEMBER_MAX).toBe(true);
        }
        forgetChunks(storage);
        expect(same((await resolveChunked(storage, 'doc', envelope))!, bytes)).toBe(true);
      }),
      { numRuns: 100 },
    );
  });

  it('a version that changes only the short fields around its long strings, whatever their length, names the same chunk tree: no chunk to store (property)', async () => {
    // A document as a checkpoint is: short fields (ids, times, seals, versions) before and after long strings (messages, items).
    const fieldsArb = fc.array(fc.string({ unit: fc.constantFrom(...'0123456789abcdef-:.TZ{}'.split('')), maxLength: 60 }), {
      minLength: 1,
      maxLength: 8,
    });
    const fields = (values: readonly string[]): string => values.map((v, i) => `"f${i}":"${v}"`).join(',');
    const documentOf = (head: readonly string[], texts: readonly string[], tail: readonly string[]): Uint8Array =>
      encode(`{"head":{${fields(head)}},"texts":[${texts.map((t) => `"${t}"`).join(',')}],"tail":{${fields(tail)}}}`);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer(), fc.integer({ min: 300, max: 3_000 })), { minLength: 12, maxLength: 30 }),
        fc.tuple(fieldsArb, fieldsArb, fieldsArb, fieldsArb),
        async (texts, [head1, tail1, head2, tail2]) => {
          const prosed = texts.map(([seed, size]) => prose(seed, size));
          const before = documentOf(head1, prosed, tail1);
          const after = documentOf(head2, prosed, tail2);
          fc.pre(before.length >= 4 * EDGES_MAX_BYTES && after.length >= 4 * EDGES_MAX_BYTES);
          const storage = memoryStorage();
          const first = decodeEnvelope(await store(storage, before), 'a')!;
          const second = await chunkDocument(storage, after);
          const parsed = decodeEnvelope(second.envelope, 'b')!;
          expect(parsed.edges).toBeDefined();
          expect([parsed.depth, parsed.ids]).toEqual([first.depth, first.ids]);
          // The process's cut of recent versions agrees, and writes nothing it wrote already.
          const again = await cutDocument(storage, after);
          expect(same(again.envelope, second.envelope)).toBe(true);
          forgetChunks(storage);
          expect(same((await resolveChunked(storage, 'b', second.envelope))!, after)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('without text marks, a version that changes only its first HEAD_MIN − 32 and last TAIL_MIN bytes names the same chunk tree (property)', async () => {
    let withEdges = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.integer({ min: 16_000, max: 60_000 }),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom(...'abcxyz0123456789{}'.split(''))), { minLength: 1, maxLength: 40 }),
        async (seed, size, changes) => {
          // A quote every 100 bytes: no stretch of text long enough for a text mark.
          const before = encode(prose(seed, size).replace(/(.{99})./g, '$1"'));
          const cut = edgesOf(before);
          fc.pre(cut.head > 0 && cut.tail > 0);
          withEdges++;
          const after = before.slice();
          for (const [i, ch] of changes) {
            const span = HEAD_MIN - 32 + TAIL_MIN;
            const at = i % span;
            after[at < HEAD_MIN - 32 ? at : after.length - TAIL_MIN + (at - (HEAD_MIN - 32))] = ch.charCodeAt(0);
          }
          // A quote removed could make a stretch long enough for a text mark: not this property's case.
          fc.pre(after.every((b, i) => b === 0x22 || before[i] !== 0x22));
          const storage = memoryStorage();
          const first = decodeEnvelope(await store(storage, before), 'a')!;
          const second = await chunkDocument(storage, after);
          const parsed = decodeEnvelope(second.envelope, 'b')!;
          expect([parsed.depth, parsed.ids]).toEqual([first.depth, first.ids]);
          const again = await cutDocument(storage, after);
          expect(same(again.envelope, second.envelope)).toBe(true);
        },
      ),
      { numRuns: 60 },
    );
    expect(withEdges).toBeGreaterThan(20);
  });

  it('a LangGraph turn stores chunks only for the checkpoint whose messages changed: the others reuse the tree', async () => {
    const storage = memoryStorage();
    const State = Annotation.Root({
      turn: Annotation<number>(),
      messages: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const graph = new StateGraph(State)
      .addNode('reply', (s: { turn: number }) => ({ messages: [`turn ${s.turn}: ${prose(s.turn + 1, 2_000)}`] }))
      .addEdge(START, 'reply')
      .addEdge('reply', END)
      .compile({ checkpointer: new SavepointSaver({ storage }) });
    const config = { configurable: { thread_id: 't' } };
    for (let turn = 0; turn < 16; turn++) await graph.invoke({ turn }, config);
    const keys = (await listAll(storage, 'langgraph/t/history/')).map((e) => e.key).sort();
    let pairs = 0;
    let previous: { version: unknown; ids: readonly string[] } | undefined;
    for (const key of keys) {
      const stored = (await storage.get(key))!.bytes;
      const envelope = decodeEnvelope(stored, key);
      const text = new TextDecoder().decode((await resolveChunked(storage, key, stored)) ?? stored);
      const version = (JSON.parse(text) as { channel_values: { messages?: { version: unknown } } }).channel_values.messages?.version;
      const current = envelope && { version, ids: envelope.ids };
      if (previous && current && previous.version === current.version) {
        pairs++;
        expect(current.ids).toEqual(previous.ids);
      }
      previous = current;
    }
    expect(pairs).toBeGreaterThanOrEqual(10);
  });

  it("a LangGraph checkpoint's edges hold none of its messages: the head ends where they start, the tail starts where they end; deflated with the dictionary", async () => {
    const storage = memoryStorage();
    const State = Annotation.Root({
      turn: Annotation<number>(),
      messages: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
    });
    const says = (turn: number): string => `turn ${turn}: ${prose(turn + 1, 2_000)}`;
    const graph = new StateGraph(State)
      .addNode('reply', (s: { turn: number }) => ({ messages: [says(s.turn)] }))
      .addEdge(START, 'reply')
      .addEdge('reply', END)
      .compile({ checkpointer: new SavepointSaver({ storage }) });
    const config = { configurable: { thread_id: 't' } };
    for (let turn = 0; turn < 12; turn++) await graph.invoke({ turn }, config);
    let checked = 0;
    for (const { key } of await listAll(storage, 'langgraph/t/history/')) {
      const stored = (await storage.get(key))!.bytes;
      const envelope = decodeEnvelope(stored, key);
      if (!envelope?.edges) continue;
      checked++;
      const whole = new TextDecoder().decode((await resolveChunked(storage, key, stored))!);
      const messages = (JSON.parse(whole) as { channel_values: { messages: { text: string } } }).channel_values.messages.text;
      const last = (JSON.parse(messages) as string[]).at(-1)!;
      // Prose holds no quote: each message is its text between \" and \" in the document.
      const start = whole.indexOf(says(0));
      const end = whole.lastIndexOf(last) + last.length + 2;
      expect(envelope.edges.head.length).toBe(start);
      expect(envelope.edges.tail.length).toBe(whole.length - end);
      // Stored with the dictionary: fewer bytes than the same edges deflated alone, as earlier versions stored them.
      const member = /"edges_z85":\[\d+,\d+,"[^"]*"\]/.exec(new TextDecoder().decode(stored))![0];
      expect(member.length).toBeLessThan(earlierEdges(envelope.edges.head, envelope.edges.tail, true).length - 150);
    }
    expect(checked).toBeGreaterThan(10);
  });

  it("an earlier version, which knows no edges_z85, finds the envelope's chunk ids (its sweep keeps them) and refuses to read the document", async () => {
    const storage = memoryStorage();
    const bytes = encode(`{"id":"${'0'.repeat(40)}","texts":["${prose(4, 30_000)}"],"n":1}`);
    const envelope = await store(storage, bytes);
    const text = new TextDecoder().decode(envelope);
    expect(text).toContain('"edges_z85":[');
    // An earlier version reads the envelope without the member it does not know.
    const asEarlier = encode(text.replace(/"edges_z85":\[\d+,\d+,"[^"]*"\],/, ''));
    expect(decodeEnvelope(asEarlier, 'doc')!.ids).toEqual(decodeEnvelope(envelope, 'doc')!.ids);
    forgetChunks(storage);
    await expect(resolveChunked(storage, 'doc', asEarlier)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
    expect(same((await resolveChunked(storage, 'doc', envelope))!, bytes)).toBe(true);
  });

  it('a document stored in an earlier form (edges to fixed places, plain, deflated or with the dictionary in base64; leaves of fixed size) reads back; the next version, cut now, too (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer(),
        fc.integer({ min: 20_000, max: 60_000 }),
        fc.integer({ min: 0, max: 2_048 }),
        fc.integer({ min: 0, max: 2_048 }),
        fc.integer({ min: 200, max: 2_048 }),
        async (seed, size, headAsked, tailAsked, leafSize) => {
          const bytes = encode(`{"texts":["${prose(seed, size)}"],"n":1}`);
          // What an earlier writer may have stored: any edge lengths (within an envelope), leaves cut elsewhere, a tree of its own shape.
          const form = ((seed % 3) + 3) % 3;
          const member = (h: number, t: number): string =>
            form === 2
              ? dictionaryEdges(bytes.subarray(0, h), bytes.subarray(bytes.length - t))
              : earlierEdges(bytes.subarray(0, h), bytes.subarray(bytes.length - t), form === 0);
          const kept = member(headAsked, tailAsked).length <= EDGES_MEMBER_MAX;
          const [head, tail] = kept ? [headAsked, tailAsked] : [0, 0];
          const storage = memoryStorage();
          const middle = bytes.subarray(head, bytes.length - tail);
          let ids: string[] = [];
          for (let at = 0; at < middle.length; at += leafSize) {
            const leaf = middle.subarray(at, at + leafSize);
            const id = sha256HexSync(leaf)!;
            ids.push(id);
            await storage.put(chunkKey(id), packChunk(leaf));
          }
          let depth = 0;
          for (; ids.length > 4; depth++) {
            const next: string[] = [];
            for (let at = 0; at < ids.length; at += 16) {
              const node = encodeNode(ids.slice(at, at + 16));
              const id = sha256HexSync(node)!;
              next.push(id);
              await storage.put(chunkKey(id), node);
            }
            ids = next;
          }
          const edges = head + tail === 0 ? undefined : member(head, tail);
          const envelope = encodeEnvelope({ bytes: bytes.length, depth, ids, scheme: 'sha256' }, edges);
          expect(same((await resolveChunked(storage, 'old', envelope))!, bytes)).toBe(true);
          const next = encode(`{"texts":["${prose(seed, size)}"],"n":2}`);
          const doc = await cutDocument(storage, next);
          for (const w of doc.writes) await storage.put(w.key, w.bytes);
          forgetChunks(storage);
          expect(same((await resolveChunked(storage, 'new', doc.envelope))!, next)).toBe(true);
          expect(same((await resolveChunked(storage, 'old', envelope))!, bytes)).toBe(true);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('damaged edges fail the read with checkpoint_integrity_mismatch', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'r', heartbeatIntervalMs: false, lock: false });
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { text: prose(3, 40_000) } });
    if (!r.ok) throw r.error;
    await writer.close();
    const stored = (await storage.get(r.key!))!.bytes;
    const text = new TextDecoder().decode(stored);
    expect(decodeEnvelope(stored, r.key!)?.edges).toBeDefined();
    const edgesAt = text.indexOf('"', text.indexOf('"edges_z85":[') + 13) + 1;
    const damaged = [
      // A character of the edges changed: inflating fails its CRC, or the document its seal.
      text.slice(0, edgesAt + 10) + (text[edgesAt + 10] === 'a' ? 'b' : 'a') + text.slice(edgesAt + 11),
      text.replace(/"edges_z85":\[(\d+)/, (_, n: string) => `"edges_z85":[${Number(n) - 1}`),
      text.replace(/"edges_z85":\[(\d+),(\d+)/, (_, h: string, t: string) => `"edges_z85":[${h},${Number(t) + 1}`),
      text.replace(/"edges_z85":\[\d+,\d+,"[^"]*"\]/, '"edges_z85":[1]'),
      // Two edges members: which holds the edges is not known.
      text.replace(/"edges_z85":/, '"edges":{"head":0,"tail":0,"text":""},"edges_z85":'),
    ];
    for (const bad of damaged) {
      const copy = memoryStorage();
      for (const e of await listAll(storage, '')) await copy.put(e.key, (await storage.get(e.key))!.bytes);
      await copy.put(r.key!, encode(bad));
      await expect(readSnapshot(copy, defaultProfile, r.key!)).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
    }
    forgetChunks(storage);
    expect((await readSnapshot(storage, defaultProfile, r.key!))?.payload).toEqual({ text: prose(3, 40_000) });
  });

  it('a store with keyed addressing keeps its edges uncompressed (a compressed length would say something of the content)', async () => {
    const keyed = { scheme: 'test-keyed', id: async (b: Uint8Array) => sha256HexSync(b), idSync: (b: Uint8Array) => sha256HexSync(b) };
    const storage = Object.assign(memoryStorage(), { contentAddressing: keyed });
    const bytes = encode(prose(11, 30_000));
    const envelope = await store(storage, bytes);
    const body = (
      JSON.parse(new TextDecoder().decode(envelope)) as { $savepoint_chunked: { edges: { head: number; tail: number; text: string } } }
    ).$savepoint_chunked.edges;
    const cut = edgesOf(bytes);
    expect([body.head, body.tail]).toEqual([cut.head, cut.tail]);
    expect(
      same(Buffer.from(body.text, 'base64'), new Uint8Array([...bytes.subarray(0, cut.head), ...bytes.subarray(bytes.length - cut.tail)])),
    ).toBe(true);
    // The same document on a plain store has them deflated: fewer bytes.
    const plain = await store(memoryStorage(), bytes);
    expect(plain.length).toBeLessThan(envelope.length);
    forgetChunks(storage);
    expect(same((await resolveChunked(storage, 'doc', envelope))!, bytes)).toBe(true);
  });

  it('edges too long for a small envelope are not kept: the envelope stays within what an earlier version reads as one', async () => {
    const keyed = { scheme: 'test-keyed', id: async (b: Uint8Array) => sha256HexSync(b), idSync: (b: Uint8Array) => sha256HexSync(b) };
    const storage = Object.assign(memoryStorage(), { contentAddressing: keyed });
    const bytes = longEdged();
    const envelope = await store(storage, bytes);
    expect(envelope.length).toBeLessThanOrEqual(4096);
    expect(decodeEnvelope(envelope, 'doc')!.edges).toBeUndefined();
    forgetChunks(storage);
    expect(same((await resolveChunked(storage, 'doc', envelope))!, bytes)).toBe(true);
  });
  it('the rolled scan finds the edges a hash of the 32 bytes before each place finds (property)', () => {
    /**
     * The edges as defined: the first text mark (top 6 bits, 128 quote-free bytes before) in [128, 2048], else the first head
     * mark in [384, 2048]; the last text mark from the end's side in [1, 2048], else the last tail mark in [1024, 2048].
     */
    const reference = (bytes: Uint8Array): { head: number; tail: number } => {
      const mark = (at: number, mask: number): boolean => {
        let h = 0;
        for (let j = at - 32; j < at; j++) h = ((h << 1) + GEAR[bytes[j]!]!) | 0;
        return (h & mask) === 0;
      };
      const text = (at: number): boolean => mark(at, 0xfc000000) && !bytes.subarray(at - 128, at).includes(0x22);
      const n = bytes.length;
      const quoteFree = (from: number, to: number): boolean => !bytes.subarray(from, to).includes(0x22);
      // A long string's start (a quote, then 128 quote-free bytes) within 2048 bytes of the start; its end likewise from the end.
      let opening = 0;
      for (let at = 1; at <= 2048 && !opening; at++) if (bytes[at - 1] === 0x22 && at + 128 <= n && quoteFree(at, at + 128)) opening = at;
      let closing = -1;
      for (let q = n - 1; q >= n - 2048 && closing < 0; q--)
        if (bytes[q] === 0x22 && q >= 128 && quoteFree(q - 128, q)) closing = n - q - 1;
      if (n < 4 * EDGES_MAX_BYTES) {
        const tail = Math.max(closing, 0);
        return opening + tail + 128 <= n ? { head: opening, tail } : { head: 0, tail: 0 };
      }
      const first = (from: number, ok: (at: number) => boolean): number => {
        for (let at = from; at <= 2048; at++) if (ok(at)) return at;
        return 0;
      };
      const last = (from: number, ok: (at: number) => boolean): number => {
        for (let at = n - from; at >= n - 2048; at--) if (ok(at)) return n - at;
        return 0;
      };
      return {
        head: opening || first(128, text) || first(HEAD_MIN, (at) => mark(at, 0xff800000)),
        tail: closing >= 0 ? closing : last(1, text) || last(TAIL_MIN, (at) => mark(at, 0xfc000000)),
      };
    };
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 2_000, maxLength: 5 * EDGES_MAX_BYTES }), fc.nat(4), (random, alphabet) => {
        // Low-entropy bytes too, where marks are rare and the scans run to their bounds; and dense quotes, where text marks are.
        const bytes =
          alphabet === 0
            ? random
            : alphabet === 3
              ? random.map((b) => (b % 48 === 0 ? 0x22 : b))
              : alphabet === 4
                ? random.map((b, i) => (b % 199 === 0 && i % 3 === 0 ? 0x22 : b === 0x22 ? 0x21 : b)) // long strings, a few quotes
                : random.map((b) => 0x61 + (b % (alphabet * 2)));
        expect(edgesOf(bytes)).toEqual(reference(bytes));
      }),
      { numRuns: 60 },
    );
  });
});
