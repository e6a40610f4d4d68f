/**
 * A task's writes document without a long value (ids, a seal, a few short values: most writes of
 * a graph's bookkeeping) stored whole in an envelope, deflated with the edges' dictionary
 * (src/snapshot-io/chunk-store.ts `packWhole`): fewer bytes (462 → about 272 for a bench turn's), pending writes read
 * back as written, also merged with the task's next writes; with a long value, or `dedup: false`,
 * stored as it is.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { decodeEnvelope, looksChunked } from '../../src/codec/chunking.js';
import { writesKey } from '../../src/langgraph/keys.js';
import { pendingWritesOf } from '../../src/langgraph/pending-writes-view.js';
import { cp, meta } from './checkpoints.js';

const config = (checkpoint_id?: string) => ({
  configurable: { thread_id: 't', checkpoint_ns: '', ...(checkpoint_id ? { checkpoint_id } : {}) },
});

/** The stored bytes of the only writes document of `storage`. */
async function writesStored(storage: StorageAdapter): Promise<Uint8Array> {
  const keys: string[] = [];
  for await (const e of storage.list('langgraph/t/parts/')) keys.push(e.key);
  expect(keys).toHaveLength(1);
  expect(keys[0]).toBe(writesKey('t', 1, 'start'));
  return (await storage.get(keys[0]!))!.bytes;
}

async function startTurn(saver: SavepointSaver, writes: [string, unknown][]): Promise<string> {
  const checkpoint = cp(0, { messages: [] });
  await saver.put(config(), checkpoint, meta, { messages: 1 });
  await saver.putWrites(config(checkpoint.id), writes, 'start');
  return checkpoint.id;
}

describe('small writes documents stored whole in an envelope', () => {
  it("a task's writes of short values: an envelope of under 70 % of its bytes, read back as written, merged with the task's next writes", async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const id = await startTurn(saver, [
      ['turn', 1],
      ['branch:to:reply', null],
    ]);
    const stored = await writesStored(storage);
    expect(looksChunked(stored)).toBe(true);
    const envelope = decodeEnvelope(stored, 'w')!;
    expect(envelope.ids).toEqual([]);
    expect(stored.length).toBeLessThan(envelope.bytes * 0.7);
    const expected = [
      ['start', 'turn', 1],
      ['start', 'branch:to:reply', null],
    ];
    expect((await new SavepointSaver({ storage }).getTuple(config(id)))!.pendingWrites).toEqual(expected);
    expect((await pendingWritesOf(storage, 't', 1)).map((w) => w.value)).toEqual([1, null]);
    await saver.putWrites(config(id), [['__error__', 'boom']], 'start');
    expect((await new SavepointSaver({ storage }).getTuple(config(id)))!.pendingWrites).toEqual([
      ['start', '__error__', 'boom'],
      ...expected,
    ]);
  });

  it('a long value (a message) under the size chunks start at is stored as it is; so is everything with dedup off', async () => {
    for (const [dedup, value] of [
      [true, 'm'.repeat(300)],
      [false, 1],
    ] as const) {
      const storage = memoryStorage();
      const id = await startTurn(new SavepointSaver({ storage, dedup }), [['messages', value]]);
      expect(looksChunked(await writesStored(storage))).toBe(false);
      expect((await new SavepointSaver({ storage }).getTuple(config(id)))!.pendingWrites).toEqual([['start', 'messages', value]]);
    }
  });
});
