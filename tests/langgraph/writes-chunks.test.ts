/**
 * A task's writes document with a long value, stored as content chunks by the write step as a
 * checkpoint is (src/langgraph/saver-writes.ts): the checkpoint that holds the value next finds
 * most of its leaves stored; pending writes read back as written; documents stored whole before
 * still read; a damaged chunk is refused; a chunk a kept writes document names is never swept.
 */
import { MemorySaver, type Checkpoint, type PendingWrite } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, memoryStorage, sweepChunks, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { chunkKey, decodeEnvelope, looksChunked } from '../../src/codec/chunking.js';
import { leafIdsOf } from '../../src/snapshot-io/chunk-store.js';
import { writesKey } from '../../src/langgraph/keys.js';
import { encodeWrites } from '../../src/langgraph/writes.js';
import { pendingWritesOf } from '../../src/langgraph/pending-writes-view.js';
import { countingStorage } from '../support/counting-storage.js';
import { config, cp, message, meta } from './checkpoints.js';

/** The sum of the stored values' sizes. */
async function storedBytes(storage: StorageAdapter): Promise<number> {
  let total = 0;
  for await (const e of storage.list('')) total += e.size;
  return total;
}

/** The writes documents of `storage` stored as envelopes: key → the leaves they name. */
async function writesEnvelopes(storage: StorageAdapter): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for await (const e of storage.list('langgraph/')) {
    if (!e.key.includes('/parts/')) continue;
    const bytes = (await storage.get(e.key))!.bytes;
    const envelope = looksChunked(bytes) ? decodeEnvelope(bytes, e.key) : undefined;
    if (envelope) out.set(e.key, await leafIdsOf(storage, envelope));
  }
  return out;
}

/** Every leaf the checkpoint documents of `storage` name. */
async function checkpointLeaves(storage: StorageAdapter): Promise<Set<string>> {
  const out = new Set<string>();
  for await (const e of storage.list('langgraph/')) {
    if (!e.key.includes('/history/')) continue;
    const bytes = (await storage.get(e.key))!.bytes;
    const envelope = looksChunked(bytes) ? decodeEnvelope(bytes, e.key) : undefined;
    if (envelope) for (const id of await leafIdsOf(storage, envelope)) out.add(id);
  }
  return out;
}

/** The sequence a writes key is stored under (`…/parts/<sequence>/w_<task>.json`). */
const sequenceOfKey = (key: string): number => Number(key.split('/parts/')[1]!.split('/')[0]);

/** Each turn as LangGraph's loop stores it: a task's write of one message against the newest checkpoint, then the checkpoint holding it. */
async function converse(saver: SavepointSaver, turns: number, length: (turn: number) => number): Promise<Checkpoint[]> {
  const messages: string[] = [];
  const checkpoints: Checkpoint[] = [cp(0, { messages: [] })];
  await saver.put(config(), checkpoints[0]!, meta, { messages: 1 });
  for (let turn = 1; turn <= turns; turn++) {
    const m = message(turn, length(turn));
    const previous = checkpoints.at(-1)!;
    await saver.putWrites(config(previous.id), [['messages', [m]]], `task-${turn}`);
    messages.push(m);
    const next = cp(turn, { messages: [...messages] });
    checkpoints.push(next);
    await saver.put(config(previous.id), next, meta, { messages: turn + 1 });
  }
  return checkpoints;
}

describe('SavepointSaver: a long pending write stored as content chunks', () => {
  it('property: a long message written by putWrites and then held in the next checkpoint is stored about once (the put adds little of it again)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 4 }),
        fc.integer({ min: 24_000, max: 64_000 }),
        fc.integer({ min: 1, max: 1 << 30 }),
        async (before, length, seed) => {
          const storage = memoryStorage();
          const saver = new SavepointSaver({ storage });
          // A parent of 18 KB or more: stored as chunks already, so the put's new bytes are the message's.
          const messages = Array.from({ length: before }, (_, i) => message(seed + i + 1, 9000));
          const parent = cp(0, { messages });
          await saver.put(config(), parent, meta, { messages: 1 });
          const m = message(seed, length);
          const b0 = await storedBytes(storage);
          await saver.putWrites(config(parent.id), [['messages', [m]]], 'task');
          const b1 = await storedBytes(storage);
          await saver.put(config(parent.id), cp(1, { messages: [...messages, m] }), meta, { messages: 2 });
          const b2 = await storedBytes(storage);
          // The checkpoint's put: its envelope, a leaf or two where the message meets its neighbours, a path of nodes.
          expect(b2 - b1).toBeLessThan(8_000 + 0.1 * length);
          // Both together: the message's leaves once (deflated letters, ~0.6 of the text) and the small rest.
          expect(b2 - b0).toBeLessThan(12_000 + 0.75 * length);
          expect((await saver.getTuple(config(parent.id)))!.pendingWrites).toEqual([['task', 'messages', [m]]]);
        },
      ),
      { numRuns: 25 },
    );
  });

  it('a 2 KB message is stored as chunks in its writes document too, and the checkpoints holding it next name the very same leaves', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    await converse(saver, 8, () => 2_000);
    const writes = await writesEnvelopes(storage);
    expect(writes.size).toBe(8);
    const held = await checkpointLeaves(storage);
    for (const leaves of writes.values()) for (const id of leaves) expect(held.has(id)).toBe(true);
    const tuple = await saver.getTuple(config());
    expect((tuple!.checkpoint.channel_values.messages as string[]).length).toBe(8);
  });

  it('property: pending writes read back as MemorySaver returns them, values short and long, tasks writing again', async () => {
    const write = fc.record({
      channel: fc.constantFrom('messages', 'notes', '__interrupt__'),
      seed: fc.integer({ min: 1, max: 1 << 30 }),
      length: fc.oneof(fc.integer({ min: 0, max: 600 }), fc.integer({ min: 14_000, max: 40_000 })),
      asList: fc.boolean(),
    });
    const step = fc.record({
      task: fc.integer({ min: 0, max: 2 }),
      writes: fc.uniqueArray(write, { minLength: 1, maxLength: 3, selector: (w) => w.channel }),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(step, { maxLength: 3 }), { minLength: 1, maxLength: 4 }), async (turns) => {
        const storage = memoryStorage();
        const ours = new SavepointSaver({ storage });
        const theirs = new MemorySaver();
        const checkpoints: Checkpoint[] = [];
        for (const [n, steps] of turns.entries()) {
          const checkpoint = cp(n, { messages: turns.slice(0, n).map((_, i) => message(i + 1, 9000)) });
          checkpoints.push(checkpoint);
          const parent = config(checkpoints[n - 1]?.id);
          for (const saver of [ours, theirs]) await saver.put(parent, checkpoint, meta, { messages: n + 1 });
          for (const { task, writes } of steps) {
            const pending = writes.map(({ channel, seed, length, asList }): PendingWrite => {
              const text = message(seed, length);
              return [channel, asList ? [text] : text];
            });
            for (const saver of [ours, theirs]) await saver.putWrites(config(checkpoint.id), pending, `task-${task}`);
          }
        }
        const fresh = new SavepointSaver({ storage });
        for (const checkpoint of checkpoints) {
          const want = (await theirs.getTuple(config(checkpoint.id)))!.pendingWrites!;
          for (const saver of [ours, fresh]) {
            const got = (await saver.getTuple(config(checkpoint.id)))!.pendingWrites!;
            expect(new Set(got)).toEqual(new Set(want));
            expect(got).toHaveLength(want.length);
          }
        }
      }),
      { numRuns: 30 },
    );
  });

  it('stores a long write and its chunks in one commit where the store has one, a short one in one put as before', async () => {
    const { storage, calls } = countingStorage(memoryStorage());
    const saver = new SavepointSaver({ storage });
    const checkpoint = cp(0, { messages: [] });
    await saver.put(config(), checkpoint, meta, { messages: 1 });
    calls.length = 0;
    await saver.putWrites(config(checkpoint.id), [['messages', [message(3, 30_000)]]], 'long');
    expect(calls).toEqual(['batch:0']);
    calls.length = 0;
    await saver.putWrites(config(checkpoint.id), [['messages', [message(4, 300)]]], 'short');
    expect(calls).toEqual(['put']);
    expect((await writesEnvelopes(storage)).size).toBe(1);
  });

  it('stores a long write as an envelope, and whole with dedup off', async () => {
    for (const dedup of [true, false]) {
      const storage = memoryStorage();
      await converse(new SavepointSaver({ storage, dedup }), 3, () => 20_000);
      expect((await writesEnvelopes(storage)).size).toBe(dedup ? 3 : 0);
    }
  });

  it('reads a long writes document stored whole (as every store written before holds them)', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const checkpoint = cp(0, { messages: [] });
    await saver.put(config(), checkpoint, meta, { messages: 1 });
    const value = [message(7, 30_000)];
    const document = { thread_id: 't', checkpoint_ns: '', checkpoint_id: checkpoint.id, task_id: 'old', task_path: '' };
    const whole = await encodeWrites(document, [{ idx: 0, channel: 'messages', type: 'json', text: JSON.stringify(value) }]);
    expect(looksChunked(whole)).toBe(false);
    await storage.put(writesKey('t', 1, 'old'), whole);
    expect((await new SavepointSaver({ storage }).getTuple(config(checkpoint.id)))!.pendingWrites).toEqual([['old', 'messages', value]]);
    expect(await pendingWritesOf(storage, 't', 1)).toEqual([{ taskId: 'old', taskPath: '', channel: 'messages', value }]);
  });

  it('refuses a writes document whose chunk is damaged or missing (checkpoint_integrity_mismatch)', async () => {
    for (const damage of ['flip', 'delete'] as const) {
      const storage = memoryStorage();
      const checkpoints = await converse(new SavepointSaver({ storage }), 2, () => 20_000);
      const [key, ids] = [...(await writesEnvelopes(storage))].sort(([a], [b]) => a.localeCompare(b))[0]!;
      const chunk = chunkKey(ids[0]!);
      if (damage === 'delete') await storage.delete(chunk);
      else {
        const bytes = (await storage.get(chunk))!.bytes.slice();
        bytes[bytes.length >> 1]! ^= 1;
        await storage.put(chunk, bytes);
      }
      const sequence = sequenceOfKey(key);
      const error = await new SavepointSaver({ storage }).getTuple(config(checkpoints[sequence - 1]!.id)).catch((err: unknown) => err);
      expect(isCheckpointError(error, 'checkpoint_integrity_mismatch'), String(error)).toBe(true);
      const viewError = await pendingWritesOf(storage, 't', sequence).catch((err: unknown) => err);
      expect(isCheckpointError(viewError, 'checkpoint_integrity_mismatch'), String(viewError)).toBe(true);
    }
  });

  it('property: a chunk a kept writes document names is never swept, whichever checkpoints and writes are deleted', async () => {
    let onlyWrites = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 5 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        async (turns, dropCheckpoint, dropWrites) => {
          const storage = memoryStorage();
          await converse(new SavepointSaver({ storage }), turns, (t) => 16_000 + 3_000 * t);
          const keys: string[] = [];
          for await (const e of storage.list('langgraph/')) keys.push(e.key);
          const history = keys.filter((k) => k.includes('/history/')).sort();
          const parts = keys.filter((k) => k.includes('/parts/')).sort();
          for (const [i, k] of history.entries()) if (dropCheckpoint[i % 6]) await storage.delete(k);
          for (const [i, k] of parts.entries()) if (dropWrites[i % 6]) await storage.delete(k);
          const kept = await writesEnvelopes(storage);
          const leaves = await checkpointLeaves(storage);
          for (const ids of kept.values()) if (ids.some((id) => !leaves.has(id))) onlyWrites++;
          // Two sweeps without a grace period: the second deletes what the first hid.
          for (let i = 0; i < 2; i++) expect((await sweepChunks(storage, { graceMs: 0 })).stopped).toBeUndefined();
          for (const key of kept.keys()) {
            const views = await pendingWritesOf(storage, 't', sequenceOfKey(key));
            expect(views.map((v) => v.channel)).toEqual(['messages']);
          }
        },
      ),
      { numRuns: 20 },
    );
    // Some runs kept a leaf that only a writes document names: the sweep was put to the test.
    expect(onlyWrites).toBeGreaterThan(0);
  });
});
