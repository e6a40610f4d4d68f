import fc from 'fast-check';
import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { readSnapshot } from 'savepoint/toolkit';

// A saver that keeps every checkpoint learns a thread it meets from the thread's head alone (no
// listing): whether the thread holds an id at or below the head's is then found by a read.

/** One step of the property: a restart (a new saver instance), a new checkpoint (its id drawn from a pool, so it may sort below the head's), or an old one put again. */
type Step =
  { readonly kind: 'restart' } | { readonly kind: 'new'; readonly pick: number } | { readonly kind: 'again'; readonly pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.constant({ kind: 'restart' } as const),
  fc.record({ kind: fc.constant('new' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('again' as const), pick: fc.nat() }),
);

function checkpointOf(id: string, n: number): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: { note: `n ${n}` }, channel_versions: { note: n } };
}

/** Sequence of each stored checkpoint of the thread, read from the store. */
async function storedSequences(storage: StorageAdapter): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const entry of storage.list('langgraph/t/history/')) {
    const snapshot = await readSnapshot(storage, langGraphProfile, entry.key);
    if (snapshot) out.set(snapshot.id, snapshot.sequence);
  }
  return out;
}

describe('SavepointSaver learns a thread from its head', () => {
  it('property: across restarts, with new ids below the head’s and old ones put again, every checkpoint keeps one unique sequence and its writes', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        const storage = memoryStorage();
        // Ids in a pool, drawn in any order: a replica whose clock is behind makes ids below the head's.
        const pool = Array.from({ length: 32 }, (_, i) => uuid6(i));
        let saver = new SavepointSaver({ storage });
        const put: { id: string; sequence: number; writes: number }[] = [];
        let parent: string | undefined;
        let n = 0;
        for (const s of steps) {
          if (s.kind === 'restart') {
            saver = new SavepointSaver({ storage });
            continue;
          }
          const old = s.kind === 'again' && put.length > 0 ? put[s.pick % put.length]! : undefined;
          if (!old && pool.length === 0) continue;
          const id = old?.id ?? pool.splice(s.pick % pool.length, 1)[0]!;
          const config = { configurable: { thread_id: 't', checkpoint_ns: '', ...(parent ? { checkpoint_id: parent } : {}) } };
          await saver.put(config, checkpointOf(id, ++n), { source: 'loop', step: n, parents: {} }, { note: n });
          await saver.putWrites({ configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: id } }, [['note', n]], `task-${n}`);
          const sequence = (await storedSequences(storage)).get(id)!;
          if (old) {
            // Put again, it keeps its sequence (its writes folder with it).
            expect(sequence).toBe(old.sequence);
            old.writes++;
          } else put.push({ id, sequence, writes: 1 });
          parent = id;
        }
        const stored = await storedSequences(storage);
        expect([...stored.keys()].sort()).toEqual(put.map((p) => p.id).sort());
        expect(new Set(stored.values()).size).toBe(stored.size);
        const reader = new SavepointSaver({ storage });
        for (const p of put) {
          expect(stored.get(p.id)).toBe(p.sequence);
          const tuple = await reader.getTuple({ configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: p.id } });
          expect(tuple?.pendingWrites?.length).toBe(p.writes);
        }
      }),
      { numRuns: 60 },
    );
  });

  it('a restarted saver puts on a long thread without listing it; a saver with keepLast lists it (the ids it prunes)', async () => {
    const inner = memoryStorage();
    const first = new SavepointSaver({ storage: inner });
    let config = { configurable: { thread_id: 't', checkpoint_ns: '' } } as { configurable: Record<string, string> };
    for (let i = 1; i <= 30; i++)
      config = (await first.put(config, checkpointOf(uuid6(i), i), { source: 'loop', step: i, parents: {} }, { note: i })) as typeof config;
    for (const keepLast of [false, 40] as const) {
      const lists: string[] = [];
      const storage: StorageAdapter = { ...inner, list: (prefix) => (lists.push(prefix), inner.list(prefix)) };
      const saver = new SavepointSaver({ storage, keepLast });
      const next = checkpointOf(uuid6(100 + (keepLast || 0)), 100);
      config = (await saver.put(config, next, { source: 'loop', step: 100, parents: {} }, { note: 100 })) as typeof config;
      expect(lists.length > 0).toBe(keepLast !== false);
    }
    expect((await storedSequences(inner)).size).toBe(32);
    expect(new Set((await storedSequences(inner)).values()).size).toBe(32);
  });
});
