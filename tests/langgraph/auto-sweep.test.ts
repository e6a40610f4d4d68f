/**
 * `SavepointSaver`'s `keepLast` with content chunks: the chunks only the deleted checkpoints
 * referenced are freed by the automatic sweep (writer/auto-sweep.ts), in the put's batch path
 * (a store with an atomic batch) and in the prune path (without one); every kept checkpoint reads
 * back, and the store's chunks level off instead of growing with the thread.
 */
import { describe, expect, it } from 'vitest';
import { listAll, memoryStorage, type AutoSweepOutcome, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { CHUNK_PREFIX } from '../../src/codec/chunking.js';
import { sweepSettled } from '../../src/writer/auto-sweep.js';
import { prose } from '../support/prose.js';
import { sequentialMemory } from '../support/storages.js';
import { cp, meta } from './checkpoints.js';

/** The conversation at turn `n`: ten ~2 KB messages, message n % 10 replaced by turn n's. */
function messagesAt(n: number): string[] {
  const seeds = Array.from({ length: 10 }, (_, i) => 1000 + i);
  for (let k = 1; k <= n; k++) seeds[k % 10] = k;
  return seeds.map((s) => prose(s, 2000));
}

/** Puts `turns` checkpoints into one thread; returns the chunk count every 20 turns and the ids put. */
async function run(storage: StorageAdapter, saver: SavepointSaver, turns: number): Promise<{ counts: number[]; ids: string[] }> {
  let config = { configurable: { thread_id: 't', checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
  const counts: number[] = [];
  const ids: string[] = [];
  for (let n = 1; n <= turns; n++) {
    const checkpoint = cp(n, { messages: messagesAt(n) });
    config = (await saver.put(config, checkpoint, { ...meta, step: n }, checkpoint.channel_versions)) as typeof config;
    ids.push(checkpoint.id);
    await sweepSettled(storage);
    if (n % 20 === 0) counts.push((await listAll(storage, CHUNK_PREFIX)).length);
  }
  return { counts, ids };
}

describe('SavepointSaver keepLast frees chunks by the automatic sweep', () => {
  for (const [label, make] of [
    ['atomic batch (deleted in the put)', () => memoryStorage()],
    ['sequential puts (pruned after the put)', () => sequentialMemory()],
  ] as const) {
    it(`${label}: kept checkpoints read back, chunks level off`, async () => {
      const storage = make();
      const outcomes: AutoSweepOutcome[] = [];
      const sweepChunks = { afterDeleted: 4, minIntervalMs: 0, graceMs: 0 };
      const saver = new SavepointSaver({ storage, keepLast: 5, sweepChunks, onSweep: (o) => outcomes.push(o) });
      const { counts, ids } = await run(storage, saver, 120);
      expect(outcomes.length).toBeGreaterThan(0);
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(outcomes.some((o) => o.ok && o.report.deleted.length > 0)).toBe(true);
      const kept = ids.slice(-5);
      for (const [i, id] of kept.entries()) {
        const tuple = await new SavepointSaver({ storage }).getTuple({
          configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: id },
        });
        expect(tuple?.checkpoint.channel_values, id).toEqual({ messages: messagesAt(120 - 4 + i) });
      }
      // Without the sweep, each turn leaves its own chunks behind.
      const unsweptStore = make();
      const unswept = await run(unsweptStore, new SavepointSaver({ storage: unsweptStore, keepLast: 5, sweepChunks: false }), 120);
      expect(unswept.counts.at(-1)!).toBeGreaterThan(3 * unswept.counts[0]!);
      expect(Math.max(...counts)).toBeLessThan(2 * counts[0]!);
    });
  }

  it('no sweep without keepLast, with dedup off, or with sweepChunks: false; a bad option is checkpoint_config_invalid', async () => {
    for (const options of [{}, { keepLast: 5, dedup: false }, { keepLast: 5, sweepChunks: false }] as const) {
      const storage = memoryStorage();
      const outcomes: AutoSweepOutcome[] = [];
      await run(storage, new SavepointSaver({ storage, ...options, onSweep: (o) => outcomes.push(o) }), 30);
      expect(outcomes, JSON.stringify(options)).toEqual([]);
    }
    for (const bad of [{ sweepChunks: 'yes' }, { sweepChunks: { afterDeleted: 0 } }, { onSweep: 'x' }]) {
      expect(() => new SavepointSaver({ storage: memoryStorage(), keepLast: 5, ...(bad as object) }), JSON.stringify(bad)).toThrow(
        expect.objectContaining({ reasonCode: 'checkpoint_config_invalid' }),
      );
    }
  });
});
