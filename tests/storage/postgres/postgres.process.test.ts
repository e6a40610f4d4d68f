/**
 * postgresStorage's own rules, against a real server: hostile keys travel only as parameters
 * and prefixes match literally, listing is served by the primary-key index in code-unit order,
 * first use creates the table once even under a stampede, conditions hold in one statement,
 * and every driver failure becomes a reason code without the connection string's password.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, listAll, type CheckpointError } from 'savepoint';
import { POSTGRES_DEFAULT_MAX_VALUE_BYTES, postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { SCHEMA_VERSION, storeSql } from '../../../src/storage/postgres/sql.js';
import { METADATA_FUNCTION_MARKER } from '../../../src/storage/postgres/metadata-index.js';
import { orderKey, prefixRange } from '../../../src/storage/postgres/order-key.js';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
let pool: pg.Pool;
beforeAll(() => {
  if (hasPostgres) pool = makePool(server().url, { max: 6 });
});
afterAll(async () => {
  await pool?.end();
});

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);
const keysOf = async (s: PostgresStorage, prefix: string): Promise<string[]> => (await listAll(s, prefix)).map((e) => e.key);

async function failure(p: Promise<unknown>): Promise<CheckpointError> {
  try {
    await p;
  } catch (err) {
    if (isCheckpointError(err)) return err;
    throw new Error(`expected a CheckpointError, got ${String(err)}`, { cause: err });
  }
  throw new Error('expected a rejection');
}

/** Holds row locks on `keys` from another connection until `release()`. */
async function lockRows(store: PostgresStorage, keys: readonly string[]): Promise<{ release(): Promise<void> }> {
  const client = await pool.connect();
  await client.query('BEGIN');
  for (const key of keys)
    await client.query(`SELECT 1 FROM "${store.schema}"."${store.table}" WHERE key_order = $1 FOR UPDATE`, [orderKey(key)]);
  return {
    async release() {
      await client.query('ROLLBACK');
      client.release();
    },
  };
}
const lockRow = (store: PostgresStorage, key: string): ReturnType<typeof lockRows> => lockRows(store, [key]);

/** Waits until `n` of the store's statements wait for a lock. */
async function waitForLockWaiters(n: number): Promise<void> {
  for (let i = 0; i < 400; i++) {
    const { rows } = await pool.query(`SELECT pid FROM pg_stat_activity WHERE application_name = 'savepoint' AND wait_event_type = 'Lock'`);
    if (rows.length >= n) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${n} statements never waited for a lock`);
}

(hasPostgres ? describe : describe.skip)('postgresStorage', () => {
  describe('keys', () => {
    it('stores hostile keys as given, through parameters only (quotes, SQL, %, _, 1,024 characters, astral and private-use characters)', async () => {
      const s = postgresStorage({ pool, table: freshTable() });
      const hostile = [
        "it's",
        'say "hi"',
        "x'); DROP TABLE savepoint_objects; --",
        '%',
        '_',
        '50%_off/%%',
        '$1/$2',
        `${'k/'.repeat(511)}xy`.slice(0, 1024),
        '\u{1f600}/\uff5e/\ue000',
        "E'\\x00'", // a backslash: refused by assertKey, below
      ];
      const valid = hostile.filter((k) => !k.includes('\\'));
      expect(`${'k/'.repeat(511)}xy`.slice(0, 1024)).toHaveLength(1024);
      for (const key of valid) await s.put(key, utf8(key), { ifAbsent: true });
      for (const key of valid) expect(text((await s.get(key))?.bytes)).toBe(key);
      expect(await keysOf(s, '')).toEqual([...valid].sort());
      // Backslashes and NUL never reach the server: the contract refuses them first.
      for (const key of ['a\\b', "E'\\x00'", 'a\u0000b', '\u0000']) {
        expect((await failure(s.put(key, utf8('x')))).reasonCode).toBe('checkpoint_key_invalid');
        expect((await failure(s.get(key))).reasonCode).toBe('checkpoint_key_invalid');
      }
      const { rows } = await pool.query<{ n: string }>(`SELECT count(*) AS n FROM "public"."${s.table}"`);
      expect(Number(rows[0]!.n)).toBe(valid.length);
      await s.close();
    });

    it('a prefix with LIKE wildcards (% and _) matches literally', async () => {
      const s = postgresStorage({ pool, table: freshTable() });
      for (const key of ['a%/1', 'ab/1', 'a_/1', 'aX/1', 'a/1', 'a%b/1', '%/1', '_x/1']) await s.put(key, utf8(key));
      expect(await keysOf(s, 'a%')).toEqual(['a%/1', 'a%b/1']);
      expect(await keysOf(s, 'a%/')).toEqual(['a%/1']);
      expect(await keysOf(s, 'a_')).toEqual(['a_/1']);
      expect(await keysOf(s, '%')).toEqual(['%/1']);
      expect(await keysOf(s, '_')).toEqual(['_x/1']);
      await s.close();
    });

    it('lists in UTF-16 code-unit order, where UTF-8 byte order (COLLATE "C") would differ', async () => {
      const s = postgresStorage({ pool, table: freshTable() });
      // U+FF5E and U+E000 sort after U+1F600 in UTF-8 bytes, before it in UTF-16 code units (surrogates are D800–DFFF).
      const keys = ['z/\u{1f600}', 'z/\uff5e', 'z/\ue000', 'z/~', 'z/\u00e9', 'z/\ud7ff'];
      for (const key of keys) await s.put(key, utf8('v'));
      const expected = [...keys].sort();
      expect(expected).toEqual(['z/~', 'z/\u00e9', 'z/\ud7ff', 'z/\u{1f600}', 'z/\ue000', 'z/\uff5e']);
      expect(await keysOf(s, 'z/')).toEqual(expected);
      await s.close();
    });

    it('prefix ranges end right after the prefix, also at 0xFF bytes', () => {
      expect(prefixRange('')).toEqual({ lower: Buffer.alloc(0), upper: undefined });
      expect(prefixRange('a')).toEqual({ lower: Buffer.from([0, 0x61]), upper: Buffer.from([0, 0x62]) });
      expect(prefixRange('\u00ff')).toEqual({ lower: Buffer.from([0, 0xff]), upper: Buffer.from([1]) });
      expect(prefixRange('\uffff')).toEqual({ lower: Buffer.from([0xff, 0xff]), upper: undefined });
    });

    it('pages through long listings in order, without gaps or repeats', async () => {
      const s = postgresStorage({ pool, table: freshTable(), listPageSize: 3 });
      const keys = Array.from({ length: 17 }, (_, i) => `p/${String(i).padStart(2, '0')}`).concat(['p', 'p/00/x', 'q/1']);
      for (const key of keys) await s.put(key, utf8(key));
      expect(await keysOf(s, 'p/')).toEqual(keys.filter((k) => k.startsWith('p/')).sort());
      expect(await keysOf(s, '')).toEqual([...keys].sort());
      await s.close();
    });

    it('listing by prefix is served by the primary-key index (no sequential scan)', async () => {
      const s = postgresStorage({ pool, table: freshTable() });
      await s.put('seed', utf8('x'));
      await pool.query(`INSERT INTO "public"."${s.table}" (key_order, key, version, value)
        SELECT convert_to(lpad(g::text, 6, '0'), 'UTF8'), g::text, g + 1000, '' FROM generate_series(1, 20000) g`);
      await pool.query(`ANALYZE "public"."${s.table}"`);
      const sql = storeSql('public', s.table);
      const { lower, upper } = prefixRange('checkpoints/run-1/');
      const plan = await pool.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql.listRange}`, [lower, upper, 1000]);
      const text = plan.rows.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toMatch(/Index (Only )?Scan using \S*_pkey/);
      expect(text).not.toMatch(/Seq Scan/);
      await s.close();
    });
  });

  describe('setup', () => {
    it('creates the table once when many stores (separate pools, as separate processes would) start on it at once', async () => {
      const table = freshTable('stampede');
      const stores = Array.from({ length: 8 }, () =>
        postgresStorage({ connectionString: server().url, table, poolSize: 1, schema: 'stampede_schema' }),
      );
      const results = await Promise.allSettled(stores.map((s, i) => s.put(`k/${i}`, utf8(String(i)), { ifAbsent: true })));
      expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
      expect(await keysOf(stores[0]!, 'k/')).toHaveLength(8);
      await Promise.all(stores.map((s) => s.close()));
    });

    it('with autoMigrate: false, a missing table is checkpoint_config_invalid until migrate() runs; migrate() is idempotent', async () => {
      const s = postgresStorage({ pool, table: freshTable(), autoMigrate: false });
      const err = await failure(s.get('a'));
      expect(err.reasonCode).toBe('checkpoint_config_invalid');
      expect(err.message).toMatch(/migrate\(\)/);
      await s.migrate();
      await s.migrate();
      await s.put('a', utf8('1'));
      expect(text((await s.get('a'))?.bytes)).toBe('1');
      expect(s.migrationSql().join('\n')).toMatch(/CREATE TABLE IF NOT EXISTS "public"\."t_\d+_\d+"/);
      await s.close();
    });

    // A first read goes beside the layout check (one round trip, not two): its answer waits for the check.
    describe('a first read and the layout check', () => {
      const LINKS = { get: { member: 'id', before: 'd/', after: '.json' } } as const;
      /** A table made by `migrate()` holding `d/ptr.json` → `d/a.json`, its marker then set to `marker`. */
      async function tableMarked(marker: string): Promise<string> {
        const table = freshTable('layout');
        const maker = postgresStorage({ pool, table });
        await maker.migrate();
        await maker.put('d/a.json', utf8('{"a":1}'));
        await maker.put('d/ptr.json', utf8('{"id":"a"}'));
        await maker.close();
        await pool.query(`COMMENT ON TABLE "public"."${table}" IS '${marker}'`);
        return table;
      }
      const markerOf = async (table: string): Promise<unknown> =>
        (await pool.query(`SELECT obj_description('"public"."${table}"'::regclass, 'pg_class') AS m`)).rows[0].m;

      it.each(['get', 'getLinked'] as const)('the first %s is sent while the layout check is out, not after it', async (call) => {
        const table = await tableMarked(`savepoint store v${SCHEMA_VERSION}`);
        // A pool that holds the check's answer until another statement is sent (or 2 s pass).
        let checkOut = false;
        let sentBeside = false;
        let wake = (): void => undefined;
        const another = new Promise<void>((resolve) => (wake = resolve));
        const watching = {
          query: async (text: string, values?: unknown[]) => {
            if (!text.includes('obj_description')) {
              if (checkOut) sentBeside = true;
              wake();
              return pool.query(text, values);
            }
            checkOut = true;
            const answer = await pool.query(text, values);
            await Promise.race([another, new Promise((resolve) => setTimeout(resolve, 2000))]);
            checkOut = false;
            return answer;
          },
          connect: () => pool.connect(),
          end: async () => undefined,
        };
        const s = postgresStorage({ pool: watching as never, table });
        if (call === 'get') expect(text((await s.get('d/a.json'))?.bytes)).toBe('{"a":1}');
        else expect(text((await s.getLinked('d/ptr.json', LINKS))?.got?.object?.bytes)).toBe('{"a":1}');
        expect(sentBeside).toBe(true);
        await s.close();
      });

      it.each(['get', 'getLinked'] as const)(
        'with autoMigrate: false, a table at another layout is refused at the first %s, though its statement would answer',
        async (call) => {
          const table = await tableMarked('savepoint store v1');
          for (let attempt = 0; attempt < 2; attempt++) {
            const s = postgresStorage({ pool, table, autoMigrate: false });
            const err = await failure(call === 'get' ? s.get('d/a.json') : s.getLinked('d/ptr.json', LINKS));
            expect(err.reasonCode).toBe('checkpoint_config_invalid');
            expect(err.message).toMatch(/another layout: run migrate\(\)/);
            await s.close();
          }
          expect(await markerOf(table)).toBe('savepoint store v1');
        },
      );

      it.each(['get', 'getLinked'] as const)(
        'with autoMigrate, the first %s upgrades a table at another layout and answers from it',
        async (call) => {
          const table = await tableMarked('savepoint store v1');
          const s = postgresStorage({ pool, table });
          if (call === 'get') expect(text((await s.get('d/a.json'))?.bytes)).toBe('{"a":1}');
          else expect(text((await s.getLinked('d/ptr.json', LINKS))?.got?.object?.bytes)).toBe('{"a":1}');
          expect(await markerOf(table)).toMatch(/^savepoint store v\d+$/);
          expect(await markerOf(table)).not.toBe('savepoint store v1');
          await s.close();
        },
      );

      // A table at the current layout whose metadata function an older version made (no revision comment).
      it.each([true, false])(
        'a table whose metadata function is older: replaced at first use with autoMigrate (%s), else kept and served',
        async (autoMigrate) => {
          const table = await tableMarked(`savepoint store v${SCHEMA_VERSION}`);
          const fn = `"public"."${table}_metadata"(text, bytea)`;
          await pool.query(`COMMENT ON FUNCTION ${fn} IS NULL`);
          const revision = async (): Promise<unknown> =>
            (await pool.query(`SELECT obj_description(to_regprocedure($1), 'pg_proc') AS r`, [fn])).rows[0].r;
          const s = postgresStorage({ pool, table, autoMigrate });
          expect(text((await s.get('d/a.json'))?.bytes)).toBe('{"a":1}');
          await s.put('d/b.json', utf8('{"metadata":{"user":"ana"}}'));
          const listed: string[] = [];
          for await (const e of s.listWhereMetadata('d/', { user: 'ana' })) listed.push(e.key);
          expect(listed).toEqual(['d/b.json']);
          expect(await revision()).toBe(autoMigrate ? METADATA_FUNCTION_MARKER : null);
          expect(await markerOf(table)).toBe(`savepoint store v${SCHEMA_VERSION}`);
          await s.close();
        },
      );

      // A version after this one left a later revision: the same column, so this version keeps it rather than putting its own back.
      it('a table whose metadata function is of a later revision: kept at first use with autoMigrate', async () => {
        const table = await tableMarked(`savepoint store v${SCHEMA_VERSION}`);
        const fn = `"public"."${table}_metadata"(text, bytea)`;
        await pool.query(`COMMENT ON FUNCTION ${fn} IS 'savepoint metadata r99'`);
        const s = postgresStorage({ pool, table });
        expect(text((await s.get('d/a.json'))?.bytes)).toBe('{"a":1}');
        await s.put('d/b.json', utf8('{"metadata":{"user":"ana"}}'));
        const listed: string[] = [];
        for await (const e of s.listWhereMetadata('d/', { user: 'ana' })) listed.push(e.key);
        expect(listed).toEqual(['d/b.json']);
        expect((await pool.query(`SELECT obj_description(to_regprocedure($1), 'pg_proc') AS r`, [fn])).rows[0].r).toBe(
          'savepoint metadata r99',
        );
        await s.close();
      });

      it.each(['get', 'getLinked'] as const)(
        'with autoMigrate, the first %s of a missing table creates it; reads after it send one statement',
        async (call) => {
          const table = freshTable('layout');
          const s = postgresStorage({ pool, table });
          const read = (): Promise<unknown> => (call === 'get' ? s.get('d/a.json') : s.getLinked('d/ptr.json', LINKS));
          expect(await read()).toBeUndefined();
          expect(await markerOf(table)).toMatch(/^savepoint store v\d+$/);
          await s.put('d/a.json', utf8('{"a":2}'));
          await s.put('d/ptr.json', utf8('{"id":"a"}'));
          const before = s.stats().roundTrips;
          expect(await read()).toBeDefined();
          expect(s.stats().roundTrips - before).toBe(1);
          await s.close();
        },
      );
    });

    it('declares a 64 MiB value limit by default and refuses larger values with checkpoint_too_large', async () => {
      const s = postgresStorage({ pool, table: freshTable(), maxValueBytes: 16 });
      expect(postgresStorage({ pool }).capabilities.maxValueBytes).toBe(POSTGRES_DEFAULT_MAX_VALUE_BYTES);
      expect(POSTGRES_DEFAULT_MAX_VALUE_BYTES).toBe(64 * 1024 * 1024);
      const err = await failure(s.put('big', new Uint8Array(17)));
      expect(err.reasonCode).toBe('checkpoint_too_large');
      expect(err.details).toMatchObject({ size: 17, limit: 16 });
      await s.put('fits', new Uint8Array(16));
      expect(await keysOf(s, '')).toEqual(['fits']);
      await s.close();
    });

    it('refuses bad options with checkpoint_config_invalid', () => {
      const bad: unknown[] = [
        undefined,
        {},
        { pool, connectionString: server().url },
        { connectionString: '' },
        { pool: {} },
        { pool, table: 'x"; DROP TABLE y; --' },
        { pool, schema: '1abc' },
        { pool, table: 'a'.repeat(49) },
        { pool, maxValueBytes: 0 },
        { pool, maxValueBytes: 512 * 1024 * 1024 },
        { pool, autoMigrate: 'yes' },
      ];
      for (const options of bad) {
        expect(() => postgresStorage(options as never), JSON.stringify(options && { ...(options as object), pool: undefined })).toThrow(
          expect.objectContaining({ reasonCode: 'checkpoint_config_invalid' }),
        );
      }
    });
  });

  describe('conditions and batches', () => {
    it('versions come from one sequence: bigint strings, increasing, never reused for a key', async () => {
      const s = postgresStorage({ pool, table: freshTable() });
      const seen: bigint[] = [];
      for (let i = 0; i < 5; i++) seen.push(BigInt((await s.put('k', utf8(String(i)))).version));
      await s.delete('k');
      seen.push(BigInt((await s.put('k', utf8('again'), { ifAbsent: true })).version));
      for (let i = 1; i < seen.length; i++) expect(seen[i]! > seen[i - 1]!).toBe(true);
      // Versions no store issues (not canonical bigints) never match, and never reach SQL as text.
      for (const v of ['0', '01', '-1', '1e3', "1' OR '1'='1", '99999999999999999999']) {
        expect((await failure(s.put('k', utf8('x'), { ifVersion: v }))).reasonCode).toBe('checkpoint_conflict');
      }
      await s.close();
    });

    it('a batch check on an absent key leaves nothing behind, and two crossed batches never both commit (no write skew)', async () => {
      const table = freshTable();
      const a = postgresStorage({ connectionString: server().url, table, poolSize: 2 });
      const b = postgresStorage({ connectionString: server().url, table, poolSize: 2 });
      await a.batch([
        { type: 'check', key: 'nobody', ifAbsent: true },
        { type: 'put', key: 'gate-a', bytes: utf8('s') },
      ]);
      await b.put('gate-b', utf8('s'));
      expect(await keysOf(a, '')).toEqual(['gate-a', 'gate-b']);
      for (let round = 0; round < 4; round++) {
        const [x, y] = [`x${round}`, `y${round}`];
        // Each batch ends with a write to a row this test holds locked, so both are in flight at
        // once, past their checks, before either commits. Serially, one must see the other's
        // key; both committing would be write skew.
        const gates = await lockRows(a, ['gate-a', 'gate-b']);
        const pending = Promise.allSettled([
          a.batch([
            { type: 'check', key: y, ifAbsent: true },
            { type: 'put', key: x, bytes: utf8('a') },
            { type: 'put', key: 'gate-a', bytes: utf8(x) },
          ]),
          b.batch([
            { type: 'check', key: x, ifAbsent: true },
            { type: 'put', key: y, bytes: utf8('b') },
            { type: 'put', key: 'gate-b', bytes: utf8(y) },
          ]),
        ]);
        await waitForLockWaiters(2);
        await gates.release();
        const results = await pending;
        for (const r of results) if (r.status === 'rejected') expect((r.reason as CheckpointError).reasonCode).toBe('checkpoint_conflict');
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const stored = await keysOf(a, '');
        expect(stored.includes(x)).toBe(results[0].status === 'fulfilled');
        expect(stored.includes(y)).toBe(results[1].status === 'fulfilled');
      }
      await a.close();
      await b.close();
    });

    it('a failed batch condition rolls back every operation before it, in one round trip', async () => {
      const s = postgresStorage({ pool, table: freshTable() });
      const v = await s.put('lease', utf8('mine'));
      await s.put('lease', utf8('theirs'));
      const before = s.stats().roundTrips;
      const err = await failure(
        s.batch([
          { type: 'put', key: 'h/1', bytes: utf8('1'), ifAbsent: true },
          { type: 'put', key: 'latest', bytes: utf8('1') },
          { type: 'delete', key: 'old' },
          { type: 'check', key: 'lease', ifVersion: v.version },
        ]),
      );
      expect(err.reasonCode).toBe('checkpoint_conflict');
      expect(err.details.key).toBe('lease');
      expect(s.stats().roundTrips - before).toBe(1);
      expect(await keysOf(s, '')).toEqual(['lease']);
      await s.close();
    });
  });

  describe('failures become reason codes', () => {
    const secret = 'pa55-w0rd-never-shown';
    const withPassword = (url: string): string => url.replace('postgres@', `postgres:${secret}@`);
    const noSecret = (err: CheckpointError): void => {
      const all = [
        err.message,
        JSON.stringify(err),
        JSON.stringify(err.details),
        String((err.cause as Error | undefined)?.message),
        String(err.stack),
      ].join('\n');
      expect(all).not.toContain(secret);
    };

    it('a server that refuses connections: checkpoint_storage_unavailable, password not in the error', async () => {
      const dead = server().url.replace(`:${server().port}/`, ':1/');
      const s = postgresStorage({ connectionString: withPassword(dead), table: freshTable(), connectionTimeoutMs: 2000 });
      const err = await failure(s.put('a', utf8('x')));
      expect(err.reasonCode).toBe('checkpoint_storage_unavailable');
      expect(err.details.sqlstate).toBe('ECONNREFUSED');
      noSecret(err);
      await s.close();
    });

    it('a statement over statement_timeout: checkpoint_storage_unavailable with sqlstate 57014', async () => {
      const s = postgresStorage({ connectionString: withPassword(server().url), table: freshTable(), statementTimeoutMs: 300 });
      await s.put('busy', utf8('1'));
      const lock = await lockRow(s, 'busy');
      try {
        const err = await failure(s.put('busy', utf8('2')));
        expect(err.reasonCode).toBe('checkpoint_storage_unavailable');
        expect(err.details.sqlstate).toBe('57014');
        noSecret(err);
      } finally {
        await lock.release();
      }
      expect(text((await s.get('busy'))?.bytes)).toBe('1');
      await s.close();
    });

    it('a full pool: checkpoint_backpressure once connectionTimeoutMs passes', async () => {
      const s = postgresStorage({ connectionString: server().url, table: freshTable(), poolSize: 1, connectionTimeoutMs: 300 });
      await s.put('busy', utf8('1'));
      const lock = await lockRow(s, 'busy');
      try {
        const stuck = s.put('busy', utf8('2')); // holds the only connection, waiting for the row lock
        const err = await failure(s.get('other'));
        expect(err.reasonCode).toBe('checkpoint_backpressure');
        await lock.release();
        await stuck;
      } catch (err) {
        await lock.release().catch(() => undefined);
        throw err;
      }
      await s.close();
    });

    it('a connection dropped mid-statement: checkpoint_storage_unavailable; the next call reconnects', async () => {
      const s = postgresStorage({ connectionString: withPassword(server().url), table: freshTable(), poolSize: 1 });
      await s.put('busy', utf8('1'));
      const lock = await lockRow(s, 'busy');
      try {
        const stuck = failure(s.put('busy', utf8('2')));
        // Wait until the store's statement is blocked on the lock, then drop its connection.
        await waitForLockWaiters(1);
        await pool.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'savepoint' AND wait_event_type = 'Lock'`,
        );
        const err = await stuck;
        expect(err.reasonCode).toBe('checkpoint_storage_unavailable');
        noSecret(err);
      } finally {
        await lock.release();
      }
      await s.put('busy', utf8('3'));
      expect(text((await s.get('busy'))?.bytes)).toBe('3');
      await s.close();
    });
  });
});
