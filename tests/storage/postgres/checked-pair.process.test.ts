/**
 * A writer's checkpoint batch — a create, an unconditional put and a check that its run lease
 * still holds a version — goes as one plain statement (the pair's checked form), not through the
 * batch function. It must answer exactly what the function answers: the same stored rows, the
 * same versions' order, the same failed condition, nothing written when any condition fails.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listAll, type BatchOperation, type CheckpointError } from 'savepoint';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, recordingPool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

/** What a store holds: each key's text, in key order. */
async function contents(s: PostgresStorage): Promise<[string, string | undefined][]> {
  const out: [string, string | undefined][] = [];
  for (const e of await listAll(s, '')) out.push([e.key, text((await s.get(e.key))?.bytes)]);
  return out;
}

/** A batch's result as the caller sees it: the outcomes' kinds and keys, or the conflict's key. */
async function resultOf(p: Promise<readonly { type: string; key: string }[]>): Promise<unknown> {
  try {
    return { ok: (await p).map((o) => [o.type, o.key]) };
  } catch (err) {
    const e = err as CheckpointError;
    return { failed: e.reasonCode, key: e.details['key'] };
  }
}

suite("a writer's checkpoint batch as the pair's checked statement", () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = makePool(server().url);
  });
  afterAll(async () => {
    await pool?.end();
  });

  /** A store whose statements are recorded, holding a run's lease; `texts` emptied once it is set up. */
  async function watchedRun(): Promise<{ s: PostgresStorage; texts: string[]; lease: string }> {
    const { pool: watched, texts } = recordingPool(pool);
    const s = postgresStorage({ pool: watched, table: freshTable('chk') });
    await s.migrate();
    const lease = (await s.put('run/lock', utf8('mine'))).version;
    texts.length = 0;
    return { s, texts, lease };
  }

  /** A writer's checkpoint: its history entry, `latest`, the check of its lease. */
  const checkpointOps = (lease: string): BatchOperation[] => [
    { type: 'put', key: 'run/history/1', bytes: utf8('one'), ifAbsent: true },
    { type: 'put', key: 'run/latest', bytes: utf8('one') },
    { type: 'check', key: 'run/lock', ifVersion: lease },
  ];

  it('is one plain statement, and stores what the batch function stores', async () => {
    const { s, texts, lease } = await watchedRun();
    const outcomes = await s.batch(checkpointOps(lease));
    expect(outcomes.map((o) => [o.type, o.key])).toEqual([
      ['put', 'run/history/1'],
      ['put', 'run/latest'],
      ['check', 'run/lock'],
    ]);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain('FOR SHARE');
    expect(texts[0]).not.toContain('_batch');
    const versions = outcomes.map((o) => (o.type === 'put' ? BigInt(o.version) : 0n));
    expect(versions[0]! < versions[1]!).toBe(true);
    expect(await contents(s)).toEqual([
      ['run/history/1', 'one'],
      ['run/latest', 'one'],
      ['run/lock', 'mine'],
    ]);
    expect((await s.get('run/lock'))?.version).toBe(lease);
    await s.close();
  });

  it('property: whatever the run holds, it answers and stores as the batch function does', async () => {
    // The reference: the same batch with one more check that always holds (an absent key checked
    // absent), a shape the statement does not take, so the batch function answers it.
    const checked = postgresStorage({ pool, table: freshTable('chk') });
    const reference = postgresStorage({ pool, table: freshTable('ref') });
    await checked.migrate();
    await reference.migrate();
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            created: fc.boolean(),
            latest: fc.boolean(),
            leaseRenewed: fc.boolean(),
            leaseGone: fc.boolean(),
            // The run's index: not in the batch, or put on the version it held, after which it stayed, moved or went.
            index: fc.constantFrom('none', 'held', 'moved', 'gone'),
          }),
          async (state) => {
            const results: unknown[] = [];
            const stored: unknown[] = [];
            for (const s of [checked, reference]) {
              for (const e of await listAll(s, '')) await s.delete(e.key);
              const held = (await s.put('r/lock', utf8('mine'))).version;
              if (state.leaseRenewed) await s.put('r/lock', utf8('renewed'));
              if (state.leaseGone) await s.delete('r/lock');
              const indexHeld = (await s.put('r/index', utf8('[6]'))).version;
              if (state.index === 'moved') await s.put('r/index', utf8('[6, "theirs"]'));
              if (state.index === 'gone') await s.delete('r/index');
              if (state.created) await s.put('r/h/7', utf8('theirs'));
              if (state.latest) await s.put('r/latest', utf8('six'));
              const ops: BatchOperation[] = [
                { type: 'put', key: 'r/h/7', bytes: utf8('seven'), ifAbsent: true },
                { type: 'put', key: 'r/latest', bytes: utf8('seven') },
                { type: 'check', key: 'r/lock', ifVersion: held },
              ];
              if (state.index !== 'none') ops.push({ type: 'put', key: 'r/index', bytes: utf8('[6, 7]'), ifVersion: indexHeld });
              const n = ops.length;
              if (s === reference) ops.push({ type: 'check', key: 'r/never', ifAbsent: true });
              const result = (await resultOf(s.batch(ops))) as { ok?: unknown[] };
              results.push(result.ok ? { ok: result.ok.slice(0, n) } : result);
              stored.push(await contents(s));
            }
            expect(results[0]).toEqual(results[1]);
            expect(stored[0]).toEqual(stored[1]);
          },
        ),
        { numRuns: 80 },
      );
    } finally {
      await checked.close();
      await reference.close();
    }
  }, 120_000);

  it("with the run's index on its version, is one plain statement too, and rewrites the index", async () => {
    const { s, texts, lease } = await watchedRun();
    const index = await s.put('run/index.json', utf8('{"checkpoints":[]}'));
    texts.length = 0;
    const outcomes = await s.batch([
      ...checkpointOps(lease),
      { type: 'put', key: 'run/index.json', bytes: utf8('{"checkpoints":[1]}'), ifVersion: index.version },
    ]);
    expect(texts).toHaveLength(1);
    expect(texts[0]).toContain('FOR UPDATE');
    expect(texts[0]).not.toContain('_batch');
    const indexed = outcomes[3];
    expect(indexed?.type === 'put' && BigInt(indexed.version) > BigInt(index.version)).toBe(true);
    expect((await s.get('run/index.json'))?.version).toBe(indexed?.type === 'put' ? indexed.version : undefined);
    expect(await contents(s)).toEqual([
      ['run/history/1', 'one'],
      ['run/index.json', '{"checkpoints":[1]}'],
      ['run/latest', 'one'],
      ['run/lock', 'mine'],
    ]);
    await s.close();
  });

  it('a lease renewed by another holder (its version moved) fails the batch on the lease, nothing written', async () => {
    const s = postgresStorage({ pool, table: freshTable('chk') });
    const lease = await s.put('run/lock', utf8('mine'));
    await s.put('run/lock', utf8('theirs'));
    const before = s.stats().roundTrips;
    const result = await resultOf(s.batch(checkpointOps(lease.version)));
    expect(result).toEqual({ failed: 'checkpoint_conflict', key: 'run/lock' });
    expect(s.stats().roundTrips - before).toBe(1);
    expect(await contents(s)).toEqual([['run/lock', 'theirs']]);
    await s.close();
  });
});
