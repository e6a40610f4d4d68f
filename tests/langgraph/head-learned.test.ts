import fc from 'fast-check';
import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { readSnapshot } from 'savepoint/toolkit';
import { readLinked, type LinkedRead } from '../../src/contract/linked-read.js';
import type { MultiGetStorage } from '../../src/contract/storage.js';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';

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

  /**
   * memoryStorage with a linked read (as PostgreSQL and fs have: a turn's getTuple reads the head,
   * its checkpoint and that checkpoint's writes in one call), counting the `get`s of the thread's
   * head made besides, with a hook run before each listing of the thread (another saver's put,
   * between this saver's read of the head and its listing).
   */
  function watchedStore(): { storage: StorageAdapter; headReads: () => number; beforeListing: { hook?: () => Promise<void> } } {
    const inner = memoryStorage();
    let reads = 0;
    const beforeListing: { hook?: () => Promise<void> } = {};
    const storage: StorageAdapter & LinkedRead = {
      ...inner,
      capabilities: { ...inner.capabilities, linkedRead: true },
      // A store that reads no parts under given prefixes with the value: the saver lists the run itself.
      getLinked: (key, links) => readLinked(inner, key, links, false),
      get: (key) => {
        if (key === 'langgraph/t/head.json') reads++;
        return inner.get(key);
      },
      list: (prefix) => {
        const hook = prefix === 'langgraph/t/' ? beforeListing.hook : undefined;
        beforeListing.hook = undefined;
        if (!hook) return inner.list(prefix);
        return (async function* () {
          await hook();
          yield* inner.list(prefix);
        })();
      },
    };
    return { storage, headReads: () => reads, beforeListing };
  }

  it('a saver with keepLast meeting a thread takes the head its getTuple read as the run’s, unless its listing shows a put made since (regression: it read the head again every time)', async () => {
    const thread = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const { storage, headReads, beforeListing } = watchedStore();
    const writer = new SavepointSaver({ storage, keepLast: 5 });
    const written: Cursor = { config: thread, step: 0 };
    for (let i = 0; i < 8; i++) await superstep(writer, written);

    // Nothing put in between: the head the turn's first read gave is the run's.
    const quiet = new SavepointSaver({ storage, keepLast: 5 });
    let before = headReads();
    const turn: Cursor = { config: (await quiet.getTuple(thread))!.config, step: 100 };
    await superstep(quiet, turn);
    const readsQuiet = headReads() - before;

    // Another saver puts between this saver's read of the head and its listing: the head is read again.
    const racing = new SavepointSaver({ storage, keepLast: 5 });
    const other = new SavepointSaver({ storage, keepLast: 5 });
    const otherTurn: Cursor = { config: (await other.getTuple(thread))!.config, step: 200 };
    beforeListing.hook = () => superstep(other, otherTurn);
    before = headReads();
    const raced: Cursor = { config: (await racing.getTuple(thread))!.config, step: 300 };
    // The racing saver's turn goes on from the checkpoint it read, now a fork below the other's newest.
    await superstep(racing, raced);
    const readsRaced = headReads() - before;

    expect(readsQuiet).toBe(0);
    expect(readsRaced).toBe(1);
    // Every checkpoint kept holds a sequence of its own, the newest the racing saver's, above the other's.
    const sequences = await storedSequences(storage);
    expect(new Set(sequences.values()).size).toBe(sequences.size);
    const newest = raced.config.configurable?.['checkpoint_id'] as string;
    const others = otherTurn.config.configurable?.['checkpoint_id'] as string;
    expect(sequences.get(newest)).toBe(sequences.get(others)! + 1);
    expect(sequences.size).toBe(5);
  });

  /**
   * A store whose linked read also gives the run's keys and oldest documents (as PostgreSQL's, in
   * one statement), here in two steps with `between` run after the value is read and before the
   * rest: `lists` counts the run's listings, `headReads` the head's plain reads, `gets` the plain
   * reads of checkpoint documents.
   */
  function readsWithHead(): {
    storage: StorageAdapter;
    counts: { lists: number; headReads: number; gets: number };
    between: { hook?: () => Promise<void> };
  } {
    const inner = memoryStorage() as MultiGetStorage;
    const counts = { lists: 0, headReads: 0, gets: 0 };
    const between: { hook?: () => Promise<void> } = {};
    const storage: MultiGetStorage & LinkedRead = {
      ...inner,
      capabilities: { ...inner.capabilities, linkedRead: true },
      getLinked: async (key, links) => {
        const answer = await readLinked(inner, key, {
          ...(links.get ? { get: links.get } : {}),
          ...(links.list ? { list: links.list } : {}),
        });
        const hook = between.hook;
        between.hook = undefined;
        await hook?.();
        if (!answer) return undefined;
        const whole = await readLinked(inner, key, {
          ...(links.keys !== undefined ? { keys: links.keys } : {}),
          ...(links.first ? { first: links.first } : {}),
        });
        return { ...answer, ...(whole?.keys ? { keys: whole.keys } : {}), ...(whole?.first ? { first: whole.first } : {}) };
      },
      get: (key) => {
        if (key === 'langgraph/t/head.json') counts.headReads++;
        else if (key.startsWith('langgraph/t/history/')) counts.gets++;
        return inner.get(key);
      },
      getMany: (keys: readonly string[]) => {
        counts.gets += keys.filter((key) => key.startsWith('langgraph/t/history/')).length;
        return inner.getMany(keys);
      },
      list: (prefix) => {
        if (prefix === 'langgraph/t/') counts.lists++;
        return inner.list(prefix);
      },
    };
    return { storage, counts, between };
  }

  it('a saver with keepLast meeting a thread on a store that reads the run’s keys and oldest documents with its head: no listing and no read of the documents leaving; a put between the parts of that read is caught', async () => {
    const thread = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const { storage, counts, between } = readsWithHead();
    const writer = new SavepointSaver({ storage, keepLast: 5 });
    const written: Cursor = { config: thread, step: 0 };
    for (let i = 0; i < 8; i++) await superstep(writer, written);

    const quiet = new SavepointSaver({ storage, keepLast: 5 });
    const before = { ...counts };
    const turn: Cursor = { config: (await quiet.getTuple(thread))!.config, step: 100 };
    for (let i = 0; i < 4; i++) await superstep(quiet, turn);
    expect(counts.lists - before.lists).toBe(0);
    expect(counts.headReads - before.headReads).toBe(0);
    // The four checkpoints let go came with the head: no document read for their sequences.
    expect(counts.gets - before.gets).toBe(0);

    // Another saver puts between the head and the keys: the keys show its checkpoint, and the head is read again.
    const racing = new SavepointSaver({ storage, keepLast: 5 });
    const other = new SavepointSaver({ storage, keepLast: 5 });
    const otherTurn: Cursor = { config: (await other.getTuple(thread))!.config, step: 200 };
    between.hook = () => superstep(other, otherTurn);
    const raced = { ...counts };
    const racedTurn: Cursor = { config: (await racing.getTuple(thread))!.config, step: 300 };
    await superstep(racing, racedTurn);
    expect(counts.headReads - raced.headReads).toBe(1);
    const sequences = await storedSequences(storage);
    expect(new Set(sequences.values()).size).toBe(sequences.size);
    const newest = racedTurn.config.configurable?.['checkpoint_id'] as string;
    const others = otherTurn.config.configurable?.['checkpoint_id'] as string;
    expect(sequences.get(newest)).toBe(sequences.get(others)! + 1);
    expect(sequences.size).toBe(5);
  });
});
