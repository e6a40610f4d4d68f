/**
 * The saver keeps the documents it decoded with the bytes it decoded them from
 * (src/langgraph/decoded-cache.ts), so reading a thread again costs a read of stored bytes,
 * not a decode. The cache must never change an answer: whatever happens to the store between
 * two reads (a checkpoint deleted, replaced by other bytes, damaged; a writes document
 * replaced), a saver that read before answers exactly what a fresh saver answers.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, DeltaChannel, END, START, StateGraph } from '@langchain/langgraph';
import type { CheckpointTuple } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { scratchDirs } from '../support/scratch.js';

const newDir = scratchDirs('lg-decoded-cache');

/** ~3 KB of text different for every `n`: five turns make documents over 16 KiB (stored as chunks). */
const big = (n: number): string => `${n}:`.padEnd(3000, String.fromCharCode(97 + (n % 26)));

function plainGraph(saver: SavepointSaver) {
  const State = Annotation.Root({ messages: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
  return new StateGraph(State)
    .addNode('reply', (s) => ({ messages: [big(s.messages.length)] }))
    .addEdge(START, 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer: saver });
}

function deltaGraph(saver: SavepointSaver) {
  const State = Annotation.Root({
    messages: new DeltaChannel<string[], string | string[]>((state, writes) => [...state, ...writes.flat()], {
      snapshotFrequency: 3,
      initialValueFactory: () => [],
    }),
  });
  return new StateGraph(State)
    .addNode('reply', (s) => ({ messages: [`reply ${s.messages.length}`] }))
    .addEdge(START, 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer: saver });
}

/** What a read answers, comparable: the tuple's JSON, `none`, or the error's reason code. */
async function answer(read: () => Promise<unknown>): Promise<string> {
  try {
    const value = await read();
    return value === undefined ? 'none' : JSON.stringify(value);
  } catch (err) {
    return isCheckpointError(err) ? `error ${err.reasonCode}` : `raw ${String(err)}`;
  }
}

const tupleOf = (t: CheckpointTuple | undefined) =>
  t && { config: t.config, checkpoint: t.checkpoint, metadata: t.metadata, pendingWrites: t.pendingWrites, parentConfig: t.parentConfig };

/** A change to the store made behind the saver's back. */
type Change =
  | { kind: 'delete'; at: number }
  | { kind: 'copy'; from: number; to: number }
  | { kind: 'damage'; at: number; byte: number }
  | { kind: 'none' };

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant('delete' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('copy' as const), from: fc.nat(), to: fc.nat() }),
  fc.record({ kind: fc.constant('damage' as const), at: fc.nat(), byte: fc.nat() }),
  fc.record({ kind: fc.constant('none' as const) }),
);

async function applyChange(storage: StorageAdapter, change: Change): Promise<void> {
  if (change.kind === 'none') return;
  // Checkpoint documents and writes documents alike: every key of the thread but its head.
  const keys: string[] = [];
  for await (const e of storage.list('langgraph/')) if (!e.key.endsWith('/head.json')) keys.push(e.key);
  if (keys.length === 0) return;
  if (change.kind === 'delete') {
    await storage.delete(keys[change.at % keys.length]!);
    return;
  }
  if (change.kind === 'copy') {
    const from = await storage.get(keys[change.from % keys.length]!);
    if (from) await storage.put(keys[change.to % keys.length]!, from.bytes);
    return;
  }
  const key = keys[change.at % keys.length]!;
  const stored = await storage.get(key);
  if (!stored || stored.bytes.length === 0) return;
  const bytes = stored.bytes.slice();
  const at = change.byte % bytes.length;
  bytes[at] = bytes[at]! ^ 0x01;
  await storage.put(key, bytes);
}

/** Every read a graph makes of a thread: each checkpoint's tuple, the newest, the newest's state. */
async function readAll(saver: SavepointSaver, graph: ReturnType<typeof plainGraph>, ids: readonly string[]): Promise<string[]> {
  const thread: RunnableConfig = { configurable: { thread_id: 'chat' } };
  const out = [await answer(async () => tupleOf(await saver.getTuple(thread)))];
  for (const id of ids)
    out.push(await answer(async () => tupleOf(await saver.getTuple({ configurable: { thread_id: 'chat', checkpoint_id: id } }))));
  out.push(await answer(async () => (await graph.getState(thread)).values));
  return out;
}

const stores: [string, () => StorageAdapter][] = [
  ['memory', () => memoryStorage()],
  ['fs (journal)', () => fsStorage({ dir: newDir() })],
];

describe.each(stores)('SavepointSaver on %s: the decoded-document cache never changes an answer', (_name, makeStorage) => {
  for (const [reducer, make] of [
    ['plain reducer (chunked documents)', plainGraph],
    ['DeltaChannel (ancestor walk)', deltaGraph],
  ] as const) {
    it(`${reducer}: after random changes behind its back, a saver that read before answers what a fresh saver answers (property)`, async () => {
      await fc.assert(
        // Read first or not: a saver that never read keeps the checkpoints it wrote, by the versions the store gave them.
        fc.asyncProperty(
          fc.integer({ min: 2, max: 6 }),
          fc.array(changeArb, { minLength: 1, maxLength: 4 }),
          fc.boolean(),
          async (turns, changes, readFirst) => {
            const storage = makeStorage();
            try {
              const cached = new SavepointSaver({ storage });
              const graph = (make as typeof plainGraph)(cached);
              for (let t = 0; t < turns; t++) await graph.invoke({ messages: [big(1000 + t)] }, { configurable: { thread_id: 'chat' } });
              const ids: string[] = [];
              for await (const t of new SavepointSaver({ storage }).list({ configurable: { thread_id: 'chat' } }))
                ids.push(t.config.configurable!.checkpoint_id as string);
              if (readFirst) await readAll(cached, graph, ids); // fills the cache
              for (const change of changes) {
                await applyChange(storage, change);
                const fresh = new SavepointSaver({ storage });
                expect(await readAll(cached, graph, ids)).toEqual(await readAll(fresh, (make as typeof plainGraph)(fresh), ids));
              }
            } finally {
              await storage.close();
            }
          },
        ),
        { numRuns: 12 },
      );
    }, 120_000);
  }

  it('a checkpoint document damaged after it was read is refused on the next read (regression guard: the cache compares stored bytes)', async () => {
    const storage = makeStorage();
    try {
      const saver = new SavepointSaver({ storage });
      const graph = plainGraph(saver);
      await graph.invoke({ messages: ['hi'] }, { configurable: { thread_id: 'chat' } });
      const tuple = await saver.getTuple({ configurable: { thread_id: 'chat' } });
      expect(tuple).toBeDefined();
      const key = (await (async () => {
        for await (const e of storage.list('langgraph/chat/history/'))
          if (e.key.includes(tuple!.config.configurable!.checkpoint_id as string)) return e.key;
        return undefined;
      })())!;
      const stored = (await storage.get(key))!.bytes.slice();
      const at = stored.indexOf('"'.charCodeAt(0), stored.length >> 1);
      stored[at + 1] = stored[at + 1]! ^ 0x01;
      await storage.put(key, stored);
      expect(await answer(() => saver.getTuple(tuple!.config))).toMatch(/^error checkpoint_(integrity_mismatch|schema_invalid)/);
    } finally {
      await storage.close();
    }
  });
});

describe('SavepointSaver keeps the checkpoint it just wrote for the next read of it', () => {
  it("the next turn's read of the newest checkpoint reads none of its chunks back (a cost removed) and answers what a fresh saver answers", async () => {
    const inner = memoryStorage();
    const chunkReads: string[] = [];
    const storage: StorageAdapter = {
      ...inner,
      get: (key, options) => {
        if (key.startsWith('chunks/')) chunkReads.push(key);
        return inner.get(key, options);
      },
    };
    const saver = new SavepointSaver({ storage });
    const graph = plainGraph(saver);
    const thread: RunnableConfig = { configurable: { thread_id: 'chat' } };
    for (let t = 0; t < 6; t++) await graph.invoke({ messages: [big(2000 + t)] }, thread);
    chunkReads.length = 0;
    const newest = tupleOf(await saver.getTuple(thread));
    expect(chunkReads).toEqual([]);
    expect((newest?.checkpoint.channel_values.messages as string[]).length).toBe(12);
    expect(JSON.stringify(newest)).toBe(JSON.stringify(tupleOf(await new SavepointSaver({ storage: inner }).getTuple(thread))));
  });

  it('a checkpoint the saver wrote, then replaced behind its back by other bytes of the same id, is read afresh', async () => {
    const storage = memoryStorage();
    const other = memoryStorage();
    const thread: RunnableConfig = { configurable: { thread_id: 'chat' } };
    const saver = new SavepointSaver({ storage });
    await plainGraph(saver).invoke({ messages: [big(1)] }, thread);
    const ours = await saver.getTuple(thread);
    // The same checkpoint id holding other values, written by another saver on another store, copied in with its chunks.
    const elsewhere = new SavepointSaver({ storage: other });
    const { config, checkpoint, metadata } = ours!;
    const replaced = { ...checkpoint, channel_values: { ...checkpoint.channel_values, messages: [big(7), big(8)] } };
    await elsewhere.put(config, replaced, metadata!, { messages: checkpoint.channel_versions.messages! });
    for await (const e of other.list('')) if (!e.key.endsWith('/head.json')) await storage.put(e.key, (await other.get(e.key))!.bytes);
    const again = await saver.getTuple(ours!.config);
    expect(again?.checkpoint.channel_values.messages).toEqual([big(7), big(8)]);
  });
});
