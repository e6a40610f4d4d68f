/**
 * postgresStorage's two-put batch (a LangGraph checkpoint: its thread's head under a condition,
 * then its document) goes as one plain statement, not through the batch function: the same
 * outcomes, all or nothing, with the conflict naming the conditional key.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, type BatchOperation, type StorageAdapter } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';
import { fillServiceSized, freshTable, hasPostgres, makePool, recordingPool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
let pool: pg.Pool;
beforeAll(() => {
  if (hasPostgres) pool = makePool(server().url, { max: 4 });
});
afterAll(async () => {
  await pool?.end();
});

/** A table at the current layout whose conflict function an earlier release did not make. */
async function withoutConflictFunction(table: string): Promise<void> {
  const maker = postgresStorage({ pool, table });
  await maker.migrate();
  await maker.close();
  await pool.query(`DROP FUNCTION "public"."${table}_conflict"(integer)`);
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

/** The first put's condition, against what its key holds before: none, ifAbsent, a current or a stale version. */
type Condition = 'none' | 'absent' | 'current' | 'stale';

interface Case {
  readonly condition: Condition;
  /** Whether each key holds a value before the batch. */
  readonly headStored: boolean;
  readonly documentStored: boolean;
  /** Keys deleted after the two puts (a checkpoint `keepLast` lets go, and its writes): whether each holds a value before. */
  readonly deletes: readonly boolean[];
}

const cases = fc.record<Case>({
  condition: fc.constantFrom<Condition>('none', 'absent', 'current', 'stale'),
  headStored: fc.boolean(),
  documentStored: fc.boolean(),
  // Past the number of deletes named one parameter each, the statement takes them as one array.
  deletes: fc.oneof(fc.array(fc.boolean(), { maxLength: 3 }), fc.array(fc.boolean(), { minLength: 14, maxLength: 20 })),
});

/** Whether the first put's condition holds (a current version needs a stored key). */
const holds = (c: Case): boolean =>
  c.condition === 'none' || (c.condition === 'absent' && !c.headStored) || (c.condition === 'current' && c.headStored);

(hasPostgres ? describe : describe.skip)('postgresStorage two-put batch', () => {
  /** The property below on `storage`: each batch applied whole or refused whole. */
  async function appliedWholeOrRefusedWhole(storage: StorageAdapter): Promise<void> {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(cases, async (c) => {
        const head = `runs/${++n}/head.json`;
        const document = `runs/${n}/history/0001.json`;
        const stored = c.headStored ? await storage.put(head, utf8('head before')) : undefined;
        if (c.documentStored) await storage.put(document, utf8('document before'));
        const gone = c.deletes.map((_, i) => `runs/${n}/parts/${i}/w.json`);
        for (const [i, key] of gone.entries()) if (c.deletes[i]) await storage.put(key, utf8('old writes'));
        const first: BatchOperation = { type: 'put', key: head, bytes: utf8('head after') };
        const put =
          c.condition === 'absent'
            ? { ...first, ifAbsent: true }
            : c.condition === 'current'
              ? { ...first, ifVersion: stored?.version ?? '1' }
              : c.condition === 'stale'
                ? { ...first, ifVersion: '9000000000' }
                : first;
        const deletes = gone.map((key): BatchOperation => ({ type: 'delete', key }));
        const result = await storage.batch!([put, { type: 'put', key: document, bytes: utf8('document after') }, ...deletes]).then(
          (outcomes) => ({ outcomes }),
          (error: unknown) => ({ error }),
        );
        const [headNow, documentNow] = await Promise.all([storage.get(head), storage.get(document)]);
        const goneNow = await Promise.all(gone.map((key) => storage.get(key)));
        if (holds(c)) {
          expect('outcomes' in result).toBe(true);
          const outcomes = (result as { outcomes: { key: string; version?: string; existed?: boolean }[] }).outcomes;
          expect(outcomes.map((o) => o.key)).toEqual([head, document, ...gone]);
          expect(outcomes.slice(2).map((o) => o.existed)).toEqual(c.deletes);
          expect(goneNow.every((v) => v === undefined)).toBe(true);
          expect(outcomes[0]!.version).toBe(headNow?.version);
          expect(outcomes[1]!.version).toBe(documentNow?.version);
          expect(headNow?.version).not.toBe(stored?.version);
          expect(text(headNow?.bytes)).toBe('head after');
          expect(text(documentNow?.bytes)).toBe('document after');
        } else {
          const error = (result as { error?: unknown }).error;
          expect(isCheckpointError(error, 'checkpoint_conflict')).toBe(true);
          expect((error as { details?: { key?: string } }).details?.key).toBe(head);
          expect(headNow?.version).toBe(stored?.version);
          expect(text(headNow?.bytes)).toBe(c.headStored ? 'head before' : undefined);
          expect(text(documentNow?.bytes)).toBe(c.documentStored ? 'document before' : undefined);
          expect(goneNow.map((v) => text(v?.bytes))).toEqual(c.deletes.map((stored) => (stored ? 'old writes' : undefined)));
        }
      }),
      { numRuns: 60 },
    );
  }

  it('property: a conditional put and an unconditional one, then deletes, are applied whole or refused whole, as the batch function applies them', async () => {
    const storage = postgresStorage({ pool, table: freshTable('pair') });
    try {
      await appliedWholeOrRefusedWhole(storage);
    } finally {
      await storage.close();
    }
  });

  it('property: the same on a table without the conflict function, kept as it is (autoMigrate false): the WITH form', async () => {
    const table = freshTable('pair_with');
    await withoutConflictFunction(table);
    const { pool: watched, texts: sent } = recordingPool(pool);
    const storage = postgresStorage({ pool: watched, table, autoMigrate: false });
    try {
      await appliedWholeOrRefusedWhole(storage);
      expect(sent.some((text) => text.startsWith('WITH first AS ('))).toBe(true);
      expect(sent.some((text) => text.includes('_conflict'))).toBe(false);
    } finally {
      await storage.close();
    }
  });

  it('a store that may migrate gives a table without the conflict function the function, and then sends the pair as one insert', async () => {
    const table = freshTable('pair_up');
    await withoutConflictFunction(table);
    const { pool: watched, texts: sent } = recordingPool(pool);
    const storage = postgresStorage({ pool: watched, table });
    try {
      const [created] = await storage.batch([
        { type: 'put', key: 'r/head.json', bytes: utf8('1'), ifAbsent: true },
        { type: 'put', key: 'r/1.json', bytes: utf8('one') },
      ]);
      const { rows } = await pool.query<{ found: boolean }>(
        `SELECT to_regprocedure('"public"."${table}_conflict"(integer)') IS NOT NULL AS found`,
      );
      expect(rows[0]!.found).toBe(true);
      expect(sent.at(-1)).toMatch(/^INSERT INTO /);
      // A stale version: the function raises, the statement is rolled back, the conflict names the head.
      const refused = storage.batch([
        { type: 'put', key: 'r/head.json', bytes: utf8('2'), ifVersion: '9000000000' },
        { type: 'put', key: 'r/2.json', bytes: utf8('two') },
      ]);
      await expect(refused).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict', details: { key: 'r/head.json' } });
      expect(await storage.get('r/2.json')).toBeUndefined();
      expect((await storage.get('r/head.json'))?.version).toBe((created as { version: string }).version);
    } finally {
      await storage.close();
    }
  });

  it('a two-put batch needs no batch function: one plain statement, parameters in binary', async () => {
    const table = freshTable('pair_plain');
    const storage = postgresStorage({ pool, table });
    try {
      await storage.migrate();
      // Without the batch function, only a batch that does not call it can still be applied.
      await pool.query(`DROP FUNCTION "public"."${table}_batch"(text[], bytea[], text[], bytea[], bigint[], boolean[])`);
      await pool.query(
        `DROP FUNCTION "public"."${table}_batch_meta"(text[], bytea[], text[], bytea[], bigint[], boolean[], jsonb[], boolean[])`,
      );
      const created = await storage.batch([
        { type: 'put', key: 'r/head.json', bytes: utf8('1'), ifAbsent: true },
        { type: 'put', key: 'r/1.json', bytes: utf8('one') },
      ]);
      const replaced = await storage.batch([
        { type: 'put', key: 'r/head.json', bytes: utf8('2'), ifVersion: (created[0] as { version: string }).version },
        { type: 'put', key: 'r/2.json', bytes: utf8('two') },
      ]);
      expect(replaced.map((o) => o.key)).toEqual(['r/head.json', 'r/2.json']);
      expect(text((await storage.get('r/head.json'))?.bytes)).toBe('2');
      expect(text((await storage.get('r/2.json'))?.bytes)).toBe('two');
      // The pair with the deletes of what keepLast lets go: one plain statement too.
      await storage.put('r/parts/1/w.json', utf8('writes of one'));
      const pruned = await storage.batch([
        { type: 'put', key: 'r/head.json', bytes: utf8('3'), ifVersion: (replaced[0] as { version: string }).version },
        { type: 'put', key: 'r/3.json', bytes: utf8('three') },
        { type: 'delete', key: 'r/1.json' },
        { type: 'delete', key: 'r/parts/1/w.json' },
        { type: 'delete', key: 'r/parts/1/never.json' },
      ]);
      expect(pruned.slice(2)).toEqual([
        { type: 'delete', key: 'r/1.json', existed: true },
        { type: 'delete', key: 'r/parts/1/w.json', existed: true },
        { type: 'delete', key: 'r/parts/1/never.json', existed: false },
      ]);
      expect(text((await storage.get('r/3.json'))?.bytes)).toBe('three');
      expect(await storage.get('r/1.json')).toBeUndefined();
      expect(await storage.get('r/parts/1/w.json')).toBeUndefined();
      // A batch of another shape still goes through the function, now missing.
      await expect(
        storage.batch([
          { type: 'put', key: 'r/head.json', bytes: utf8('3') },
          { type: 'delete', key: 'r/1.json' },
        ]),
      ).rejects.toThrow();
    } finally {
      await storage.close();
    }
  });

  it('the pair with the deletes keepLast makes is planned once on a connection, not at every call (regression: an array of keys made the server plan it again each time)', async () => {
    const onePool = makePool(server().url, { max: 1 });
    const table = freshTable('pair_plan');
    const storage = postgresStorage({ pool: onePool, table });
    try {
      await storage.migrate();
      await fillServiceSized(onePool, table);
      const outcome = await storage.batch([
        { type: 'put', key: 'r/head.json', bytes: utf8('0'), ifAbsent: true },
        { type: 'put', key: 'r/0.json', bytes: utf8('zero') },
      ]);
      let head = (outcome[0] as { version: string }).version;
      for (let i = 1; i <= 12; i++) {
        await storage.put(`r/parts/${i - 1}/w.json`, utf8('writes'));
        const outcomes = await storage.batch([
          { type: 'put', key: 'r/head.json', bytes: utf8(String(i)), ifVersion: head },
          { type: 'put', key: `r/${i}.json`, bytes: utf8(`document ${i}`) },
          { type: 'delete', key: `r/${i - 1}.json` },
          { type: 'delete', key: `r/parts/${i - 1}/w.json` },
        ]);
        expect(outcomes.slice(2).map((o) => (o as { existed: boolean }).existed)).toEqual([true, true]);
        head = (outcomes[0] as { version: string }).version;
      }
      const { rows } = await onePool.query<{ generic: string; custom: string }>(
        "SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements WHERE statement LIKE '%gone AS%'",
      );
      expect(rows).toHaveLength(1);
      // The server tries custom plans first (five of them), then keeps the generic one.
      expect(Number(rows[0]!.generic)).toBeGreaterThan(0);
      expect(Number(rows[0]!.custom)).toBeLessThan(12);
    } finally {
      await storage.close();
      await onePool.end();
    }
  });
});
