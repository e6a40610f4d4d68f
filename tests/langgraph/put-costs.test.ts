/**
 * What a put costs the saver besides the document it seals, pinned where it could grow with the
 * thread or the saver's age. A checkpoint the saver writes is kept for its next read by the
 * version the store acknowledged (src/langgraph/decoded-cache.ts `keepWritten`), and the snapshot
 * a read would decode is made only when a read finds that version: most checkpoints a saver
 * writes are never read back by it. The cache over its budget lets many entries go at once. A new
 * checkpoint's id is known not held without a search of the run's ids. Without `keepLast`, the
 * keys of a task's writes are remembered only while their checkpoint may still move.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { createDecodedCache, keepWritten, keptValue } from '../../src/langgraph/decoded-cache.js';
import { hasId, type RunState } from '../../src/langgraph/run-state.js';
import { SavepointSaver } from 'savepoint/langgraph';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';

describe('a written document kept by its version', () => {
  it('is made at the first read that finds its version, once, and never for another version (a cost removed from every put)', () => {
    const cache = createDecodedCache<{ n: number }>(1 << 20);
    let made = 0;
    keepWritten(cache, 'k', 'v1', () => ({ n: ++made }), 100);
    expect(made).toBe(0);
    expect(keptValue(cache, 'k', { bytes: new Uint8Array(1), version: 'v2' })).toBeUndefined();
    expect(made).toBe(0);
    const first = keptValue(cache, 'k', { bytes: new Uint8Array(1), version: 'v1' });
    expect(first).toEqual({ n: 1 });
    expect(keptValue(cache, 'k', { bytes: new Uint8Array(1), version: 'v1' })).toBe(first);
    expect(made).toBe(1);
  });

  it('a put and the read of the checkpoint it wrote answer what a fresh saver reads from the store', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    let config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    for (let step = 1; step <= 3; step++) {
      const checkpoint = { ...emptyCheckpoint(), id: uuid6(step), channel_values: { note: `n${step}` }, channel_versions: { note: step } };
      const metadata = { source: 'loop', step, parents: {}, nested: { b: [1, 'x'], a: null } } as never;
      config = (await saver.put(config, checkpoint, metadata, { note: step })) as typeof config;
      // The caller changing its metadata after the put changes nothing stored or kept.
      (metadata as { step: number }).step = -1;
      const kept = await saver.getTuple(config);
      const fresh = await new SavepointSaver({ storage }).getTuple(config);
      expect(kept).toEqual(fresh);
      expect(kept?.metadata).toMatchObject({ step });
    }
  });
});

describe('the decoded cache over its budget', () => {
  it('lets the oldest go until a quarter of its budget is free, so the walk that finds them runs once per many keeps', () => {
    const cache = createDecodedCache<number>(1000);
    for (let i = 0; i < 10; i++) keepWritten(cache, `k${i}`, 'v', () => i, 50); // 10 × 100 = the whole budget
    expect(cache.cost).toBe(1000);
    keepWritten(cache, 'k10', 'v', () => 10, 50);
    expect(cache.cost).toBe(700);
    expect([...cache.entries.keys()]).toEqual(['k4', 'k5', 'k6', 'k7', 'k8', 'k9', 'k10']);
    // The next keeps fit again without letting anything go.
    for (let i = 11; i < 14; i++) keepWritten(cache, `k${i}`, 'v', () => i, 50);
    expect(cache.entries.size).toBe(10);
    expect(keptValue(cache, 'k13', { bytes: new Uint8Array(0), version: 'v' })).toBe(13);
  });
});

describe("a run's ids", () => {
  it('a new checkpoint id, above every id held, is found not held from the last id alone (a put asks twice; a long thread holds thousands)', () => {
    const held = Array.from({ length: 4096 }, (_, i) => `id-${String(i).padStart(5, '0')}`);
    let reads = 0;
    const ids = new Proxy(held, {
      get(target, property, receiver) {
        if (typeof property === 'string' && /^\d+$/.test(property)) reads++;
        return Reflect.get(target, property, receiver) as unknown;
      },
    });
    const run = { ids } as unknown as RunState;
    expect(hasId(run, 'id-99999')).toBe(false);
    expect(reads).toBe(1);
    // Ids held, and ids below the last, are still searched.
    expect(hasId(run, 'id-01234')).toBe(true);
    expect(hasId(run, 'id-01234x')).toBe(false);
    expect(hasId(run, held.at(-1)!)).toBe(true);
  });
});

describe('writes keys a saver remembers', () => {
  const step = (n: number, id = uuid6(n)) => ({
    ...emptyCheckpoint(),
    id,
    channel_values: { note: `n${n}` },
    channel_versions: { note: n },
  });
  const meta = (n: number) => ({ source: 'loop', step: n, parents: {} }) as never;

  it('without keepLast, none for a checkpoint stored: a long-lived saver does not keep one set of keys a superstep for good', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    let config = { configurable: { thread_id: 't', checkpoint_ns: '' } } as { configurable: Record<string, string> };
    for (let n = 1; n <= 50; n++) {
      if (config.configurable.checkpoint_id) await saver.putWrites(config, [['note', `w${n}`]], `task-${n}`);
      // Writes sent before their checkpoint's put (LangGraph's async durability), then the put.
      const id = uuid6(n);
      const early = { configurable: { ...config.configurable, checkpoint_id: id } };
      if (n % 5 === 0) await saver.putWrites(early, [['note', `early${n}`]], `early-${n}`);
      config = (await saver.put(config, step(n, id), meta(n), { note: n })) as typeof config;
      if (n % 5 === 0) expect((await saver.getTuple(early))?.pendingWrites).toEqual([[`early-${n}`, 'note', `early${n}`]]);
    }
    const run = (saver as unknown as { state: { loaded: Map<string, RunState> } }).state.loaded.get('t')!;
    expect(run.writeKeys.size).toBe(0);
  });

  it("without keepLast, a checkpoint's early writes still move with it when another saver claimed its sequence first", async () => {
    const storage = memoryStorage();
    const a = new SavepointSaver({ storage });
    const b = new SavepointSaver({ storage });
    const root = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const first = await a.put(root, step(1), meta(1), { note: 1 });
    await b.getTuple(root);
    // A's early writes for its next checkpoint take the next sequence; B stores its own there first.
    const mine = step(2);
    await a.putWrites({ configurable: { ...first.configurable, checkpoint_id: mine.id } }, [['note', 'early']], 'task-a');
    const theirs = await b.put(first, step(3), meta(2), { note: 2 });
    const stored = await a.put(first, mine, meta(2), { note: 2 });
    expect((await a.getTuple(stored))?.pendingWrites).toEqual([['task-a', 'note', 'early']]);
    expect((await new SavepointSaver({ storage }).getTuple(stored))?.pendingWrites).toEqual([['task-a', 'note', 'early']]);
    expect((await new SavepointSaver({ storage }).getTuple(theirs))?.pendingWrites).toEqual([]);
  });
});
