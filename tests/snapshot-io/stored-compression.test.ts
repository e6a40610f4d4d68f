/**
 * What a store without keyed addressing holds compressed besides its chunks: a chunked
 * document's envelope, gzipped whole with its edges raw (codec/chunking.ts `storedEnvelope`,
 * codec/chunk-edges.ts), and a LangGraph task's writes document, gzipped when that is smaller
 * (langgraph/writes.ts `storedWrites`). Either reads back exactly; any changed byte is caught;
 * a store with keyed addressing holds neither compressed; a store written before (edges in
 * base64, writes documents as they are) reads as it did.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { listAll, memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { envelopeOfStored } from '../../src/codec/chunking.js';
import { gunzip, isGzip } from '../../src/codec/gzip.js';
import { sha256HexSync } from '../../src/codec/sha256.js';
import { auditChunks } from '../../src/snapshot-io/chunk-refs.js';
import { forgetChunks } from '../../src/snapshot-io/chunk-store.js';
import { sweepChunks } from '../../src/retention/chunk-sweep.js';

/** The bench's ~2 KB message of pseudo-random letters (bench/dedup.bench.ts), as the fixture's writer made them. */
function message(turn: number): string {
  let x = (turn * 2654435761) >>> 0 || 1;
  let text = `turn ${turn}: `;
  while (text.length < 2048) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    text += String.fromCharCode(97 + (x % 26));
  }
  return text;
}

function conversation(storage: StorageAdapter) {
  const State = Annotation.Root({
    turn: Annotation<number>(),
    messages: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  });
  const saver = new SavepointSaver({ storage });
  const app = new StateGraph(State)
    .addNode('reply', (s: { turn: number }) => ({ messages: [message(s.turn)] }))
    .addEdge(START, 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer: saver });
  return { saver, app };
}

/** A checkpoint of the conversation holds its first messages, each as the turn made it (turn k's node appends message(k)). */
function expectConversation(tuple: { checkpoint: { channel_values: Record<string, unknown> } }): void {
  const messages = (tuple.checkpoint.channel_values.messages as string[] | undefined) ?? [];
  expect(messages).toEqual(Array.from({ length: messages.length }, (_, i) => message(i + 1)));
}

const keyed = { scheme: 'test-keyed', id: async (b: Uint8Array) => sha256HexSync(b), idSync: (b: Uint8Array) => sha256HexSync(b) };

/** A store holding what `storage` holds, named by the same addressing. */
async function copyOf(storage: StorageAdapter): Promise<StorageAdapter> {
  const copy = 'contentAddressing' in storage ? Object.assign(memoryStorage(), { contentAddressing: keyed }) : memoryStorage();
  for (const e of await listAll(storage, '')) await copy.put(e.key, (await storage.get(e.key))!.bytes);
  return copy;
}

describe('envelopes and writes documents stored compressed', () => {
  it('a conversation stores its envelopes and large writes documents gzipped, reads every checkpoint and its writes back, and passes verify; a keyed store compresses neither', async () => {
    for (const storage of [memoryStorage(), Object.assign(memoryStorage(), { contentAddressing: keyed })]) {
      const compress = !('contentAddressing' in storage);
      const { app } = conversation(storage);
      const config = { configurable: { thread_id: 't' } };
      for (let turn = 1; turn <= 12; turn++) await app.invoke({ turn }, config);
      let envelopes = 0;
      let zipped = 0;
      for (const e of await listAll(storage, 'langgraph/')) {
        const bytes = (await storage.get(e.key))!.bytes;
        if (isGzip(bytes)) zipped++;
        if (e.key.includes('/history/') && envelopeOfStored(bytes, e.key)) envelopes++;
      }
      expect(envelopes).toBeGreaterThan(5);
      // Raw edges under a member of their own: a sweep of an earlier version reads `edges` in base64
      // only, and would take an envelope whose `edges` it cannot read for none, marking no chunk.
      for (const e of await listAll(storage, 'langgraph/t/history/')) {
        const bytes = (await storage.get(e.key))!.bytes;
        const body = (
          JSON.parse(new TextDecoder().decode(isGzip(bytes) ? gunzip(bytes) : bytes)) as Record<string, Record<string, unknown>>
        ).$savepoint_chunked;
        if (!body) continue;
        expect(body.edges === undefined || typeof (body.edges as { text?: unknown }).text === 'string').toBe(true);
        if (compress) expect([body.edges, typeof (body.raw_edges as { raw?: unknown } | undefined)?.raw]).toEqual([undefined, 'string']);
      }
      // Envelopes and the writes holding a message (the small ones may be smaller as they are).
      if (compress) expect(zipped).toBeGreaterThanOrEqual(envelopes + 12);
      else expect(zipped).toBe(0);
      // Every checkpoint and its pending writes, from a process that knows nothing of the store.
      const fresh = conversation(await copyOf(storage));
      let n = 0;
      for await (const tuple of fresh.saver.list(config)) {
        expectConversation(tuple);
        n++;
      }
      expect(n).toBe(36);
      expect((await fresh.app.getState(config)).values.messages).toHaveLength(12);
      const audit = await auditChunks(storage);
      expect([audit.missing, audit.damaged, audit.unreferenced]).toEqual([[], [], []]);
    }
  });

  it('a changed byte of a gzipped envelope or writes document fails its read or leaves its content as it was: nothing reads as other content (property)', async () => {
    const storage = memoryStorage();
    const { app } = conversation(storage);
    const config = { configurable: { thread_id: 't' } };
    for (let turn = 1; turn <= 10; turn++) await app.invoke({ turn }, config);
    const zipped: string[] = [];
    for (const e of await listAll(storage, 'langgraph/')) if (isGzip((await storage.get(e.key))!.bytes)) zipped.push(e.key);
    expect(zipped.some((k) => k.includes('/parts/'))).toBe(true);
    expect(zipped.some((k) => k.includes('/history/'))).toBe(true);
    const reference = conversation(await copyOf(storage));
    const expected = new Map<string, unknown>();
    for await (const tuple of reference.saver.list(config))
      expected.set(tuple.checkpoint.id, [tuple.checkpoint.channel_values, tuple.pendingWrites]);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...zipped), fc.nat(), fc.integer({ min: 1, max: 255 }), async (key, at, flip) => {
        const copy = await copyOf(storage);
        const bytes = (await copy.get(key))!.bytes.slice();
        bytes[at % bytes.length]! ^= flip;
        await copy.put(key, bytes);
        forgetChunks(copy);
        const { saver } = conversation(copy);
        // Every checkpoint either reads as it was written or fails: none reads as other values.
        for (const id of expected.keys()) {
          const tuple = await saver.getTuple({ configurable: { thread_id: 't', checkpoint_id: id } }).catch(() => 'failed' as const);
          if (tuple === 'failed' || tuple === undefined) continue;
          expect([tuple.checkpoint.channel_values, tuple.pendingWrites]).toEqual(expected.get(id));
        }
        // A changed byte the content does not depend on (gzip's header time and system, its text flag, a
        // deflate block's padding bits) reads as before; every other one fails, as the gzip CRC and the seal say.
      }),
      { numRuns: 40 },
    );
  });

  it('a store written before (edges in base64, writes documents as they are) reads as it did, passes verify and a sweep, and takes new turns', async () => {
    // tests/fixtures/chunks/langgraph-written-edges-base64.json: turns 8–10 of the conversation above as the code before this change stored them.
    const storage = memoryStorage();
    const url = new URL('../fixtures/chunks/langgraph-written-edges-base64.json', import.meta.url);
    const entries = JSON.parse(readFileSync(url, 'utf8')) as Record<string, string>;
    for (const [key, base64] of Object.entries(entries)) await storage.put(key, new Uint8Array(Buffer.from(base64, 'base64')));
    for (const e of await listAll(storage, '')) expect(isGzip((await storage.get(e.key))!.bytes)).toBe(false);
    const { saver, app } = conversation(storage);
    const config = { configurable: { thread_id: 'old' } };
    let n = 0;
    let writes = 0;
    for await (const tuple of saver.list(config)) {
      expectConversation(tuple);
      writes += tuple.pendingWrites?.length ?? 0;
      n++;
    }
    expect(n).toBe(7);
    expect(writes).toBeGreaterThan(0);
    const audit = await auditChunks(storage);
    expect([audit.missing, audit.damaged, audit.unreferenced]).toEqual([[], [], []]);
    expect((await sweepChunks(storage)).hidden).toHaveLength(0);
    for (let turn = 11; turn <= 12; turn++) await app.invoke({ turn }, config);
    forgetChunks(storage);
    expect((await conversation(storage).app.getState(config)).values.messages).toEqual(
      Array.from({ length: 12 }, (_, i) => message(i + 1)),
    );
  });
});
