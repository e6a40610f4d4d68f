/**
 * postgresStorage sends its linked read as a named statement, so each connection parses and
 * plans that long statement once: on a node-postgres pool (its own or the caller's). A pool of
 * the same shape that is not node-postgres gets plain `(text, values)` calls; a server that
 * loses the statement (a transaction-mode pooler) is answered unnamed from then on. A named
 * statement reaches a node-postgres pool as a query config (a `Query` handed to a pool is
 * answered only by pg 8.19 and later).
 */
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresStorage, type PostgresPool, type PostgresQueryResult, type PostgresStorage } from 'savepoint/postgres';
import { readLinked, type ReadLinks } from '../../../src/contract/linked-read.js';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const LINKS: ReadLinks = { get: { member: 'id', before: 'doc/', after: '.json' }, list: { member: 'n', before: 'parts/', after: '/' } };

const pools: pg.Pool[] = [];
const stores: PostgresStorage[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const p of pools.splice(0)) await p.end();
});

/** A store on `pool` holding a pointer, the document it names and one part. */
async function filled(pool: PostgresPool): Promise<PostgresStorage> {
  const storage = postgresStorage({ pool, table: freshTable('named') });
  stores.push(storage);
  await storage.put('head', utf8('{"id":"a","n":3}'));
  await storage.put('doc/a.json', utf8('document a'));
  await storage.put('parts/3/w', utf8('part'));
  return storage;
}

/** What the linked read answers, as plain text. */
async function answer(storage: PostgresStorage): Promise<unknown> {
  const read = await readLinked(storage, 'head', LINKS);
  const text = (bytes: Uint8Array | undefined): string | undefined => bytes && new TextDecoder().decode(bytes);
  return { got: text(read?.got?.object?.bytes), listed: read?.listed?.objects.map((o) => [o.key, text(o.bytes)]) };
}
const EXPECTED = { got: 'document a', listed: [['parts/3/w', 'part']] };

/** The prepared statements of the pool's one connection. */
async function prepared(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>("SELECT name FROM pg_prepared_statements WHERE name LIKE 'savepoint_%'");
  return rows.map((r) => r.name);
}

suite('postgresStorage named statements', () => {
  it('the linked read is prepared once on a connection and answers the same every time', async () => {
    const pool = makePool(server().url, { max: 1 });
    pools.push(pool);
    const storage = await filled(pool);
    // Its puts went by name too: the linked read adds one statement, once.
    const before = (await prepared(pool)).length;
    for (let i = 0; i < 3; i++) expect(await answer(storage)).toEqual(EXPECTED);
    expect(await prepared(pool)).toHaveLength(before + 1);
    // A second table's linked read is another statement, under another name, on the same connection.
    const other = await filled(pool);
    const beforeOther = (await prepared(pool)).length;
    expect(await answer(other)).toEqual(EXPECTED);
    expect(await prepared(pool)).toHaveLength(beforeOther + 1);
  });

  it('a listing is never prepared: each page is planned for its own range (regression: a generic plan of a prepared range scan stalled 64 threads on a table of long threads)', async () => {
    const pool = makePool(server().url, { max: 1 });
    pools.push(pool);
    const storage = await filled(pool);
    for (let i = 0; i < 8; i++) {
      for await (const entry of storage.list('parts/')) expect(entry.key).toBe('parts/3/w');
      for await (const entry of storage.list('')) expect(entry.key).toBeTypeOf('string');
    }
    const { rows } = await pool.query<{ statement: string }>("SELECT statement FROM pg_prepared_statements WHERE name LIKE 'savepoint_%'");
    expect(rows.length).toBeGreaterThan(0); // the puts' statements are prepared
    expect(rows.filter((r) => /ORDER BY key_order/.test(r.statement))).toEqual([]);
  });

  it('a server that lost the statement (a transaction-mode pooler) is answered unnamed from then on', async () => {
    const pool = makePool(server().url, { max: 1 });
    pools.push(pool);
    const storage = await filled(pool);
    expect(await answer(storage)).toEqual(EXPECTED);
    // The connection still believes the statement prepared: its next use fails on the server (26000).
    await pool.query('DEALLOCATE ALL');
    expect(await answer(storage)).toEqual(EXPECTED);
    expect(await answer(storage)).toEqual(EXPECTED);
    expect(await prepared(pool)).toEqual([]);
  });

  it('a node-postgres pool gets each named statement as a named query config, never a Query object (which pg before 8.19 would leave unanswered)', async () => {
    const pool = makePool(server().url);
    pools.push(pool);
    const sent: unknown[] = [];
    const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
    (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      sent.push(args[0]);
      return query(...args);
    };
    const storage = await filled(pool);
    await storage.batch([
      { type: 'put', key: 'head', bytes: utf8('{"id":"a","n":3}') },
      { type: 'put', key: 'doc/a.json', bytes: utf8('document a') },
    ]);
    expect(await answer(storage)).toEqual(EXPECTED);
    const named = sent.filter((s) => typeof s !== 'string');
    expect(named.length).toBeGreaterThanOrEqual(6); // setup, three puts, the pair, the linked read
    for (const q of named) {
      expect(Object.getPrototypeOf(q)).toBe(Object.prototype);
      expect((q as { name?: unknown }).name).toMatch(/^savepoint_[0-9a-f]{24}$/);
    }
  });

  it('a pool of the same shape that is not node-postgres gets (text, values) calls only', async () => {
    const pool = makePool(server().url);
    pools.push(pool);
    const texts: unknown[] = [];
    const shaped: PostgresPool = {
      query: <R>(text: string, values?: unknown[]) => {
        texts.push(text);
        return pool.query(text, values) as unknown as Promise<PostgresQueryResult<R>>;
      },
      connect: () => pool.connect(),
      end: async () => undefined,
    };
    const storage = await filled(shaped);
    expect(await answer(storage)).toEqual(EXPECTED);
    expect(texts.length).toBeGreaterThan(0);
    expect(texts.every((t) => typeof t === 'string')).toBe(true);
  });
});
