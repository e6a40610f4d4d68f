/**
 * Appending one ~2 KB message to a long conversation writes O(message + log n) new bytes, not
 * O(state): counted in bytes stored, for the writer and for SavepointSaver.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { prose } from '../support/prose.js';

/** Bytes stored under keys that are new, or whose size changed, since `before`. */
async function newBytes(storage: StorageAdapter, before: Map<string, number>): Promise<number> {
  let n = 0;
  for (const e of await listAll(storage, '')) if (before.get(e.key) !== e.size) n += e.size;
  return n;
}
const sizes = async (storage: StorageAdapter): Promise<Map<string, number>> =>
  new Map((await listAll(storage, '')).map((e) => [e.key, e.size]));

/** The bound: the message, two leaves of 8 KiB at most around it, the path of nodes (three levels of 64 ids of 32 bytes), the documents. */
const BOUND = 2_000 + 2 * 8192 + 3 * 64 * 32 + 4_000;

describe('footprint of an append to a long list', () => {
  it('the writer: appending a message to 200 writes a bounded number of new bytes, whatever the length', async () => {
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'chat', heartbeatIntervalMs: false, autoRetention: false });
    const messages: string[] = [];
    const perAppend: number[] = [];
    for (let turn = 0; turn < 200; turn++) {
      messages.push(prose(turn + 1, 2000));
      const before = turn % 50 === 49 ? await sizes(storage) : undefined;
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { messages: [...messages] } });
      if (!r.ok) throw r.error;
      if (before) perAppend.push(await newBytes(storage, before));
    }
    await writer.close();
    // The state is ~400 KB at the end; an append costs about the same at 50 messages as at 200.
    for (const n of perAppend) expect(n).toBeLessThan(BOUND);
    const total = (await listAll(storage, '')).reduce((s, e) => s + e.size, 0);
    expect(total).toBeLessThan(200 * BOUND);
  });

  it('SavepointSaver: 200 turns, 3 checkpoints a turn as a graph takes them, store under 1/50 of the checkpoints whole', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage, keepLast: false });
    let config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const messages: unknown[] = [];
    let whole = 0;
    let last = 0;
    let n = 0;
    for (let turn = 1; turn <= 200; turn++) {
      for (let k = 0; k < 3; k++) {
        if (k === 1) messages.push({ type: 'ai', content: prose(turn, 2000), id: `m${turn}` });
        n++;
        const before = turn === 200 && k === 1 ? await sizes(storage) : undefined;
        const cp = {
          ...emptyCheckpoint(),
          id: uuid6(n),
          channel_values: { messages: [...messages] },
          channel_versions: { messages: n + 1 },
        };
        config = await saver.put(config, cp, { source: 'loop', step: n, parents: {} }, { messages: n + 1 });
        whole += JSON.stringify(messages).length;
        if (before) last = await newBytes(storage, before);
      }
    }
    expect(last).toBeLessThan(BOUND);
    const total = (await listAll(storage, '')).reduce((s, e) => s + e.size, 0);
    expect(total).toBeLessThan(whole / 50);
  });
});
