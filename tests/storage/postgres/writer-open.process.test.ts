/**
 * What a writer's `open()` sends PostgreSQL: the run lease, then the run's recovery in one
 * statement (the linked read of `latest` with the run's index and listing, or the run's keys in
 * its absence), where it was three (`latest`, the index, the listing). A run the writer before
 * closed is read from `latest` alone, with its index when the writer prunes as it goes.
 */
import type pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type JsonValue } from 'savepoint';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { askedLinks } from '../../support/counting-storage.js';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;

const pools: pg.Pool[] = [];
const stores: PostgresStorage[] = [];
function store(): PostgresStorage {
  const pool = makePool(server().url);
  pools.push(pool);
  const storage = postgresStorage({ pool, table: freshTable('open') });
  stores.push(storage);
  return storage;
}
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const p of pools.splice(0)) await p.end();
});

/** `count` checkpoints by `writer`, then its close: a run another writer left. */
async function fill(writer: ReturnType<typeof createWriter<JsonValue>>, count: number): Promise<void> {
  for (let i = 1; i <= count; i++)
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).ok).toBe(true);
  await writer.close();
}

const writerOf = (storage: PostgresStorage, runId: string) =>
  createWriter<JsonValue>({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false });

suite("a writer's open() on postgresStorage", () => {
  it('a new run: two statements, the lease and one read (regression: four)', async () => {
    const storage = store();
    await storage.get('warm'); // the store's first use checks its table
    const writer = writerOf(storage, 'fresh');
    const before = storage.stats().roundTrips;
    const opened = await writer.open();
    expect(opened).toMatchObject({ ok: true, lastSequence: 0 });
    expect(storage.stats().roundTrips - before).toBe(2);
    await writer.close();
  });

  it('a run 30 checkpoints long, left by another writer: two statements, the lease and one read (regression: four)', async () => {
    const storage = store();
    const first = writerOf(storage, 'long');
    for (let i = 1; i <= 30; i++)
      expect((await first.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).ok).toBe(true);
    await first.close();
    const second = writerOf(storage, 'long');
    const before = storage.stats().roundTrips;
    expect(await second.open()).toMatchObject({ ok: true, lastSequence: 30 });
    expect(storage.stats().roundTrips - before).toBe(2);
    const next = await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 31 } });
    expect(next).toMatchObject({ ok: true, sequence: 31 });
    await second.close();
    const history: number[] = [];
    for await (const e of storage.list('checkpoints/long/history/')) history.push(e.size);
    expect(history).toHaveLength(31);
  });

  it('a run 300 long without automatic retention: open reads latest alone (two statements, no index, no listing); the index is read before its rewrite, and completed at close', async () => {
    const storage = store();
    const noRetention = (runId: string) =>
      createWriter<JsonValue>({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false, autoRetention: false });
    const first = noRetention('long');
    await fill(first, 300);
    const { store: spied, asked } = askedLinks(storage);
    const second = createWriter<JsonValue>({
      storage: spied,
      profile: defaultProfile,
      runId: 'long',
      heartbeatIntervalMs: false,
      autoRetention: false,
    });
    let before = storage.stats().roundTrips;
    expect(await second.open()).toMatchObject({ ok: true, lastSequence: 300 });
    expect(storage.stats().roundTrips - before).toBe(2);
    expect(asked).toEqual([{ keysIfAbsent: 'checkpoints/long/' }]);
    // 300 / 16: the index waits for 18 entries; each checkpoint before is one statement.
    before = storage.stats().roundTrips;
    for (let i = 301; i <= 317; i++)
      expect(await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({
        ok: true,
        sequence: i,
      });
    expect(storage.stats().roundTrips - before).toBe(17);
    expect(asked).toHaveLength(1);
    expect(await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 318 } })).toMatchObject({
      ok: true,
      sequence: 318,
    });
    expect(asked).toHaveLength(2); // the full recovery's linked read: latest, the index and the listing
    expect(asked[1]).toMatchObject({ entries: 'checkpoints/long/' });
    expect(await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 319 } })).toMatchObject({
      ok: true,
      sequence: 319,
    });
    await second.close();
    const index = await storage.get(defaultProfile.layout.indexKey!('long'));
    const listed = JSON.parse(new TextDecoder().decode(index!.bytes)) as { checkpoints: { sequence: number }[] };
    expect(listed.checkpoints.map((e) => e.sequence)).toEqual(Array.from({ length: 319 }, (_, i) => i + 1));
  });

  it('a run 300 long with automatic retention (the default): open reads latest and the index in one statement, no listing; the run stays within keep-last 50', async () => {
    const storage = store();
    const first = writerOf(storage, 'kept');
    await fill(first, 300);
    const { store: spied, asked } = askedLinks(storage);
    const second = writerOf(spied, 'kept');
    const before = storage.stats().roundTrips;
    expect(await second.open()).toMatchObject({ ok: true, lastSequence: 300 });
    expect(storage.stats().roundTrips - before).toBe(2);
    // Regression: the full recovery's read, with the run's listing (`entries`).
    expect(asked).toEqual([{ keysIfAbsent: 'checkpoints/kept/', first: { prefix: 'checkpoints/kept/index.json', count: 1 } }]);
    for (let i = 301; i <= 320; i++)
      expect(await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({
        ok: true,
        sequence: i,
      });
    expect(asked).toHaveLength(1);
    await second.close();
    const index = await storage.get(defaultProfile.layout.indexKey!('kept'));
    const indexed = (JSON.parse(new TextDecoder().decode(index!.bytes)) as { checkpoints: { sequence: number }[] }).checkpoints.map(
      (e) => e.sequence,
    );
    const history: string[] = [];
    for await (const e of storage.list('checkpoints/kept/history/')) history.push(e.key);
    expect(history).toHaveLength(indexed.length);
    expect(indexed.length).toBeLessThanOrEqual(60); // keep 50, slack 10
    expect(indexed.slice(-50)).toEqual(Array.from({ length: 50 }, (_, i) => 271 + i));
  });

  it('a run whose latest is gone: its history found by the listing, numbering goes on after it', async () => {
    const storage = store();
    const first = writerOf(storage, 'left');
    for (let i = 1; i <= 3; i++)
      expect((await first.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).ok).toBe(true);
    await first.close();
    expect(await storage.delete(defaultProfile.layout.latestKey('left'))).toBe(true);
    const second = writerOf(storage, 'left');
    expect(await second.open()).toMatchObject({ ok: true, lastSequence: 3 });
    const next = await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 4 } });
    expect(next).toMatchObject({ ok: true, sequence: 4 });
    await second.close();
  });
});
