/**
 * A checkpoint the saver writes is kept for its next read by the version the store acknowledged
 * (src/langgraph/decoded-cache.ts `keepWritten`), and the snapshot a read would decode is made
 * only when a read finds that version: most checkpoints a saver writes are never read back by it,
 * and making the snapshot parses the metadata and builds its objects on every put otherwise.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { createDecodedCache, keepWritten, keptValue } from '../../src/langgraph/decoded-cache.js';
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
