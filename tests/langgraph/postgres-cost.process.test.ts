import type pg from 'pg';
import type { RunnableConfig } from '@langchain/core/runnables';
import type { CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../support/postgres-fixture.js';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';

// What SavepointSaver sends PostgreSQL per superstep, counted in statements (postgresStorage's
// roundTrips): each one is a commit, so a WAL flush the superstep waits for on a durable server.
const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;

const pools: pg.Pool[] = [];
const stores: PostgresStorage[] = [];
function store(listPageSize?: number): PostgresStorage {
  const pool = makePool(server().url);
  pools.push(pool);
  const storage = postgresStorage({ pool, table: freshTable('cost'), ...(listPageSize ? { listPageSize } : {}) });
  stores.push(storage);
  return storage;
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const p of pools.splice(0)) await p.end();
});

/** Statements `fn` sends through `storage`. */
async function statements(storage: PostgresStorage, fn: () => Promise<unknown>): Promise<number> {
  const before = storage.stats().roundTrips;
  await fn();
  return storage.stats().roundTrips - before;
}

suite('SavepointSaver on postgresStorage: statements per superstep', () => {
  it('a superstep on a thread the saver knows is two statements: the writes, and the checkpoint with its head claim in one batch', async () => {
    const storage = store();
    const saver = new SavepointSaver({ storage });
    const cursor: Cursor = { config: { configurable: { thread_id: 'known', checkpoint_ns: '' } }, step: 0 };
    for (let i = 0; i < 3; i++) await superstep(saver, cursor);
    const sent = await statements(storage, async () => {
      for (let i = 0; i < 10; i++) await superstep(saver, cursor);
    });
    expect(sent).toBe(20);
  });

  it('a new thread: getTuple is one statement (the linked read finds no head, and no key under the thread either, in the same statement; regression: it listed the thread after)', async () => {
    const storage = store();
    const saver = new SavepointSaver({ storage });
    const thread = { configurable: { thread_id: 'new-thread', checkpoint_ns: '' } };
    await storage.get('langgraph/warm'); // the store's first use checks its table
    let tuple: unknown;
    expect(await statements(storage, async () => (tuple = await saver.getTuple(thread)))).toBe(1);
    expect(tuple).toBeUndefined();
    const cursor: Cursor = { config: thread, step: 0 };
    expect(await statements(storage, () => superstep(saver, cursor))).toBe(1);
    expect(await statements(storage, () => superstep(saver, cursor))).toBe(2);
    expect((await new SavepointSaver({ storage }).getTuple(thread))?.config.configurable?.['checkpoint_id']).toBe(
      cursor.config.configurable?.['checkpoint_id'],
    );
  });

  it.each([false, 3] as const)(
    'a thread without a head (stored before heads), keepLast %s: found by the keys read with the head’s absence, no listing; the next put goes on after its sequences',
    async (keepLast) => {
      const storage = store(2);
      const thread = { configurable: { thread_id: 'headless', checkpoint_ns: '' } };
      const cursor: Cursor = { config: thread, step: 0 };
      const writer = new SavepointSaver({ storage });
      for (let i = 0; i < 4; i++) await superstep(writer, cursor);
      await writer.putWrites(cursor.config, [['note', 'pending']], 'task-pending');
      expect(await storage.delete('langgraph/headless/head.json')).toBe(true);
      const fresh = new SavepointSaver({ storage, keepLast });
      let tuple: CheckpointTuple | undefined;
      const sent = await statements(storage, async () => (tuple = await fresh.getTuple(thread)));
      // The linked read (its keys with it), the newest document for its sequence, then that checkpoint with its writes;
      // with keepLast, the documents leaving first too (one multi-get, started as the run is learned). A listing would
      // be two more at a page of two keys.
      expect(sent).toBe(keepLast === false ? 3 : 4);
      expect(tuple?.config.configurable?.['checkpoint_id']).toBe(cursor.config.configurable?.['checkpoint_id']);
      expect(tuple?.pendingWrites?.map(([, channel, value]) => [channel, value])).toEqual([['note', 'pending']]);
      const next: Cursor = { config: tuple!.config, step: cursor.step };
      await superstep(fresh, next);
      await superstep(fresh, next);
      const folders = new Map<string, number>();
      for await (const entry of storage.list('langgraph/headless/parts/')) {
        const folder = entry.key.split('/')[3]!;
        folders.set(folder, (folders.get(folder) ?? 0) + 1);
      }
      // Sequences 1–4 (the last with the pending write and the new put's), then the new puts' own: no folder shared by two checkpoints.
      expect([...folders.keys()].map(Number).sort((a, b) => a - b)).toEqual(keepLast === false ? [1, 2, 3, 4, 5] : [4, 5]);
      expect(folders.get('4')).toBe(2);
    },
  );

  it('a saver meeting a thread for the first time sends as many statements on one of 600 checkpoints as on one of 20 (no listing of the thread)', async () => {
    // A small list page makes a listing of the long thread cost many statements, so one would show.
    const storage = store(50);
    const writer = new SavepointSaver({ storage });
    const lengths = { short: 20, long: 600 };
    for (const [thread, length] of Object.entries(lengths)) {
      const cursor: Cursor = { config: { configurable: { thread_id: thread, checkpoint_ns: '' } }, step: 0 };
      for (let i = 0; i < length; i++) await superstep(writer, cursor);
    }
    const sent: Record<string, number> = {};
    const ids: Record<string, string | undefined> = {};
    for (const thread of Object.keys(lengths)) {
      const fresh = new SavepointSaver({ storage });
      sent[thread] = await statements(storage, async () => {
        const tuple = await fresh.getTuple({ configurable: { thread_id: thread } });
        const cursor: Cursor = { config: tuple!.config, step: 10_000 };
        for (let i = 0; i < 3; i++) await superstep(fresh, cursor);
        ids[thread] = cursor.config.configurable?.['checkpoint_id'] as string;
      });
    }
    expect(sent['long']).toBe(sent['short']);
    // The fresh saver's checkpoints continue the thread: the newest is theirs, at the next sequences.
    const reader = new SavepointSaver({ storage });
    for (const [thread, length] of Object.entries(lengths)) {
      const newest = await reader.getTuple({ configurable: { thread_id: thread } });
      expect(newest?.config.configurable?.['checkpoint_id']).toBe(ids[thread]);
      let count = 0;
      for await (const _ of reader.list({ configurable: { thread_id: thread } })) count++;
      expect(count).toBe(length + 3);
    }
  });

  it('keepLast on a thread another saver wrote: a turn’s start is one statement (its head, keys and oldest documents), each superstep its two, the old checkpoint and its writes deleted in the put’s batch', async () => {
    const storage = store();
    const thread = { configurable: { thread_id: 'bounded', checkpoint_ns: '' } };
    const cursor: Cursor = { config: thread, step: 0 };
    const writer = new SavepointSaver({ storage, keepLast: 5 });
    for (let i = 0; i < 8; i++) await superstep(writer, cursor);
    const fresh = new SavepointSaver({ storage, keepLast: 5 });
    const next: Cursor = { config: thread, step: 100 };
    const turn = await statements(storage, async () => {
      next.config = (await fresh.getTuple(thread))!.config;
      await superstep(fresh, next);
    });
    // The linked read, which gives the thread's keys and its oldest documents (those leaving next) with its head; the
    // superstep's two. Nothing is read again: the keys show no put since (the head is taken as the run's), the
    // checkpoint read is the first put's parent, and the documents leaving came with the head.
    expect(turn).toBe(3);
    const sent = await statements(storage, async () => {
      for (let i = 0; i < 10; i++) await superstep(fresh, next);
    });
    // Each put lets its oldest checkpoint go in its own statement; the sequences naming their writes were read once, by a multi-get.
    expect(sent).toBe(20);
    let kept = 0;
    for await (const _ of new SavepointSaver({ storage }).list(thread)) kept++;
    expect(kept).toBe(5);
    const parts = new Set<string>();
    for await (const entry of storage.list('langgraph/bounded/parts/')) parts.add(entry.key.split('/')[3]!);
    // The writes of the four older checkpoints kept (the newest has none yet), none of those gone.
    expect(parts.size).toBe(4);
  });

  it('a turn on a thread another saver served last: one statement reads its head, newest checkpoint and pending writes, then two per superstep', async () => {
    const pool = makePool(server().url);
    pools.push(pool);
    const table = freshTable('cost');
    const replicas = [0, 1].map(() => postgresStorage({ pool, table }));
    stores.push(...replicas);
    const savers = replicas.map((storage) => new SavepointSaver({ storage }));
    const thread = { configurable: { thread_id: 'replicas', checkpoint_ns: '' } };
    for (let turn = 0; turn < 6; turn++) {
      const i = turn % 2;
      let pending: unknown;
      const sent = await statements(replicas[i]!, async () => {
        const tuple = await savers[i]!.getTuple(thread);
        pending = tuple?.pendingWrites;
        const cursor: Cursor = { config: tuple?.config ?? thread, step: turn * 10 };
        for (let s = 0; s < 3; s++) await superstep(savers[i]!, cursor);
        // A write left under the newest checkpoint: the next turn, on the other saver, reads it with the checkpoint.
        await savers[i]!.putWrites(cursor.config, [['note', `left by turn ${turn}`]], `left-${turn}`);
      });
      if (turn > 0) expect(pending).toEqual([[`left-${turn - 1}`, 'note', `left by turn ${turn - 1}`]]);
      // From the third turn both savers have met the store and the thread.
      if (turn >= 2) expect(sent, `turn ${turn}`).toBe(1 + 2 * 3 + 1);
    }
  });
  it('getTuple of a checkpoint named by id (getState of an older one) is one statement: its document and its pending writes', async () => {
    const storage = store();
    const writer = new SavepointSaver({ storage });
    const cursor: Cursor = { config: { configurable: { thread_id: 'named', checkpoint_ns: '' } }, step: 0 };
    const configs: RunnableConfig[] = [];
    for (let i = 0; i < 4; i++) {
      await superstep(writer, cursor);
      configs.push(cursor.config);
    }
    for (const saver of [writer, new SavepointSaver({ storage })]) {
      for (const [i, config] of configs.slice(0, -1).entries()) {
        let tuple: CheckpointTuple | undefined;
        expect(await statements(storage, async () => (tuple = await saver.getTuple(config)))).toBe(1);
        expect(tuple?.config.configurable?.['checkpoint_id']).toBe(config.configurable?.['checkpoint_id']);
        // Each checkpoint but the newest holds the writes of the superstep after it.
        expect(tuple?.pendingWrites).toEqual([[`task-${i + 2}`, 'note', `step ${i + 2}`]]);
      }
    }
  });
});
