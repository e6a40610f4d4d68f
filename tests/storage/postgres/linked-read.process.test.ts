/**
 * postgresStorage's linked read (contract/linked-read.ts) against the contract's own rule: on
 * random pointer values (JSON objects of every member shape, JSON that is not an object, bytes
 * that are not JSON) and random keys around them, `getLinked` follows a link only to the key
 * `linkedKey` names, with what `get` and `list` answer there, in one statement; an ASCII
 * pointer's links it follows itself, escapes included (but `\u`). An encrypted store over it does not declare the capability.
 * The statement's plan stays cheap on a table of any size (the server would otherwise compile it
 * at every call), and a part with more rows than it reads in place is left to the caller.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { encryptedStorage, EncryptionKey } from 'savepoint';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import pg from 'pg';
import { isAbsentLinked, linkedKey, linkedReadOf, readLinked, type ReadLinks } from '../../../src/contract/linked-read.js';
import { LINKED_READ_LIMITS } from '../../../src/storage/postgres/linked-read-sql.js';
import { linkedReadParams } from '../../../src/storage/postgres/linked-read.js';
import { storeSql } from '../../../src/storage/postgres/sql.js';
import { fillServiceSized, freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;
const stores: PostgresStorage[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

const LINKS: ReadLinks = {
  get: { member: 'id', before: 'p/doc/', after: '.json' },
  list: { member: 'n', before: 'p/parts/', after: '/' },
};
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

/** A node of `EXPLAIN (FORMAT JSON)`'s plan. */
interface PlanNode {
  readonly 'Node Type': string;
  readonly Plans?: readonly PlanNode[];
}

/** A parameter the store sends, as a literal (EXECUTE takes no bound values). */
const literal = (v: unknown): string =>
  v === null ? 'NULL' : Buffer.isBuffer(v) ? `'\\x${v.toString('hex')}'::bytea` : typeof v === 'number' ? String(v) : `'${String(v)}'`;

/** `node` and every node below it. */
const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** Member values of every shape the rule tells apart. */
const memberValue = fc.oneof(
  fc.constantFrom('a', 'abc', '7', '-', '_x', 'a/b', '', 'é', 'x'.repeat(128), 'x'.repeat(129), 'a b', '\u0000'),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,8}$/),
  fc.integer({ min: -3, max: 20 }),
  fc.constantFrom(7.5, 1e15, 999_999_999_999_999, -0, 1e2, 0.1),
  fc.constantFrom(null, true, false, [], {}, ['a'], { id: 'a' }),
);
/** A pointer's bytes: a JSON object with the members (sometimes with escapes or spaces), else other JSON or noise. */
const pointer = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .record({ id: memberValue, n: memberValue, other: fc.jsonValue({ maxDepth: 1 }) }, { requiredKeys: [] })
      .map((o) => utf8(JSON.stringify(o))),
  },
  {
    weight: 1,
    arbitrary: fc.record({ id: memberValue, n: memberValue }).map((o) => utf8(JSON.stringify(o, null, 1).replace(/"id"/, '"\\u0069d"'))),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => utf8(JSON.stringify(v) ?? 'null')) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 24 }) },
);
const around = fc.uniqueArray(
  fc.oneof(
    fc.stringMatching(/^[A-Za-z0-9_-]{1,4}$/).map((s) => `p/doc/${s}.json`),
    fc
      .tuple(fc.constantFrom('7', '70', '7-', '0', '1', '12', 'a', 'abc'), fc.constantFrom('w', 'x', 'y'))
      .map(([d, f]) => `p/parts/${d}/${f}`),
  ),
  { maxLength: 8 },
);
/** A pointer the store parses in place: an ASCII JSON object whose escapes are JSON's short ones (no `\u`). */
const isPlain = (bytes: Uint8Array): boolean => {
  if (bytes.some((b) => b >= 0x80)) return false;
  const text = new TextDecoder().decode(bytes);
  if (/(^|[^\\])(\\\\)*\\u/.test(text)) return false;
  try {
    const v: unknown = JSON.parse(text);
    return v !== null && typeof v === 'object' && !Array.isArray(v);
  } catch {
    return false;
  }
};

suite('postgresStorage getLinked', () => {
  it('property: follows a link only to the key the contract names, answers what get and list answer there, in one statement', async () => {
    const storage = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(storage);
    let run = 0;
    await fc.assert(
      fc.asyncProperty(pointer, around, async (bytes, keys) => {
        const root = `r${++run}`;
        const at = (key: string): string => `${root}/${key}`;
        const links: ReadLinks = {
          get: { ...LINKS.get!, before: at(LINKS.get!.before) },
          list: { ...LINKS.list!, before: at(LINKS.list!.before) },
        };
        for (const [i, key] of keys.entries()) await storage.put(at(key), utf8(`value ${i}`));
        await storage.put(at('p/ptr.json'), bytes);
        const before = storage.stats().roundTrips;
        const answer = await storage.getLinked(at('p/ptr.json'), links);
        expect(storage.stats().roundTrips - before).toBe(1);
        expect(answer?.value?.bytes).toEqual(bytes);
        const getKey = linkedKey(bytes, links.get!);
        const prefix = linkedKey(bytes, links.list!);
        if (isPlain(bytes)) {
          expect(answer?.got?.key).toBe(getKey);
          expect(answer?.listed?.prefix).toBe(prefix);
        }
        if (answer?.got) {
          expect(answer.got.key).toBe(getKey);
          expect(answer.got.object).toEqual(await storage.get(answer.got.key));
        }
        if (answer?.listed) {
          expect(answer.listed.prefix).toBe(prefix);
          const listed: { key: string; version: string }[] = [];
          for await (const e of storage.list(answer.listed.prefix)) listed.push({ key: e.key, version: e.version });
          expect(answer.listed.objects.map((o) => ({ key: o.key, version: o.version }))).toEqual(listed);
        }
        // readLinked completes what the store left: the same answer as reads step by step.
        const whole = await readLinked(storage, at('p/ptr.json'), links);
        expect(whole?.got?.key).toBe(getKey);
        expect(whole?.listed?.prefix).toBe(prefix);
      }),
      { numRuns: 60 },
    );
  }, 120_000);

  it('property: the keys under a given prefix (alone, and with their versions and sizes), and the first few with their values, come in the same statement as list and getMany answer them', async () => {
    const storage = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(storage);
    await storage.put('h', utf8('{}'));
    const getLinked = linkedReadOf(storage)!;
    let round = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.oneof(
            { weight: 4, arbitrary: fc.stringMatching(/^[a-c]{1,3}(\/[a-c]{1,2})?$/) },
            // Keys whose stored form is not ASCII's (the keys part comes packed, decoded from UTF-16): two bytes, a surrogate pair, the private use area.
            { weight: 1, arbitrary: fc.constantFrom('é', 'aé/b', 'a\u{1F600}', '\uE000', 'b/\uFFFD', 'c\u00FF') },
          ),
          { maxLength: 12 },
        ),
        fc.constantFrom('q/', 'q/a', 'q/b/', 'q/ab'),
        fc.integer({ min: 1, max: 6 }),
        async (names, prefix, count) => {
          const base = `r${round++}/`;
          for (const name of names) await storage.put(`${base}q/${name}`, utf8(name));
          const under = `${base}${prefix}`;
          const before = storage.stats().roundTrips;
          const answer = await getLinked('h', { keys: under, entries: under, first: { prefix: under, count } });
          expect(storage.stats().roundTrips - before).toBe(1);
          const listed = [];
          const entries = [];
          for await (const entry of storage.list(under)) {
            listed.push(entry.key);
            entries.push(entry);
          }
          expect(answer?.keys).toEqual({ prefix: under, keys: listed });
          expect(answer?.entries).toEqual({ prefix: under, entries });
          const first = listed.slice(0, count);
          expect(answer?.first?.prefix).toBe(under);
          expect(answer?.first?.objects.map((o) => o.key)).toEqual(first);
          const values = await storage.getMany(first);
          expect(answer?.first?.objects.map((o) => new TextDecoder().decode(o.bytes))).toEqual(
            values.map((v) => new TextDecoder().decode(v!.bytes)),
          );
          expect(answer?.first?.objects.map((o) => o.version)).toEqual(values.map((v) => v!.version));
          // Only when the value is absent: the keys under keysIfAbsent, in the same statement.
          const beforeAbsent = storage.stats().roundTrips;
          const atAbsent = await getLinked(`${base}none`, { keysIfAbsent: under, keys: under });
          expect(storage.stats().roundTrips - beforeAbsent).toBe(1);
          expect(atAbsent).toEqual({ absent: { prefix: under, keys: listed } });
          const atPresent = await getLinked('h', { keysIfAbsent: under });
          expect(isAbsentLinked(atPresent)).toBe(false);
          expect(atPresent?.value?.version).toBe((await storage.get('h'))!.version);
        },
      ),
      { numRuns: 40 },
    );
    // An absent value: nothing under the prefixes is read either, unless asked for when absent.
    expect(await getLinked('absent', { keys: 'r0/', entries: 'r0/', first: { prefix: 'r0/', count: 3 } })).toBeUndefined();
  });

  it('readLinked reads the parts under given prefixes a store left (or a store without a linked read), and leaves them when asked to', async () => {
    const storage = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(storage);
    await storage.put('h', utf8('{}'));
    for (const name of ['u/a', 'u/b', 'u/c/d']) await storage.put(name, utf8(name));
    const innerPlain = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(innerPlain);
    // No linked read (it cannot read members of ciphertext): readLinked reads every part itself.
    const plain = encryptedStorage(innerPlain, { keys: EncryptionKey.generate() });
    await plain.put('h', utf8('{}'));
    for (const name of ['u/a', 'u/b', 'u/c/d']) await plain.put(name, utf8(name));
    for (const store of [storage, plain]) {
      const answer = await readLinked(store, 'h', { keys: 'u/', first: { prefix: 'u/', count: 2 } });
      expect(answer?.keys?.keys).toEqual(['u/a', 'u/b', 'u/c/d']);
      expect(answer?.first?.objects.map((o) => [o.key, new TextDecoder().decode(o.bytes)])).toEqual([
        ['u/a', 'u/a'],
        ['u/b', 'u/b'],
      ]);
    }
    const left = await readLinked(plain, 'h', { keys: 'u/', first: { prefix: 'u/', count: 2 } }, false);
    expect(left?.keys).toBeUndefined();
    expect(left?.first).toBeUndefined();
    await expect(readLinked(storage, 'h', { first: { prefix: 'u/', count: 0 } })).rejects.toMatchObject({
      reasonCode: 'checkpoint_config_invalid',
    });
  });

  it('an absent key is undefined; a key that holds no JSON comes back alone', async () => {
    const storage = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(storage);
    expect(await storage.getLinked('p/ptr.json', LINKS)).toBeUndefined();
    await storage.put('p/ptr.json', utf8('{"id":"abc"'));
    const torn = await storage.getLinked('p/ptr.json', LINKS);
    expect(torn?.got).toBeUndefined();
    expect(torn?.value?.bytes).toEqual(utf8('{"id":"abc"'));
    await expect(storage.getLinked('p/ptr.json', { get: { member: 'id', before: '../', after: '' } })).rejects.toMatchObject({
      reasonCode: 'checkpoint_key_invalid',
    });
  });

  it('a pointer with escaped text in its members (a LangGraph checkpoint document) has its links followed in the statement; one with a \\u escape is left to the caller', async () => {
    const storage = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(storage);
    await storage.put('p/doc/abc.json', utf8('doc'));
    await storage.put('p/parts/7/w', utf8('w'));
    const escaped = JSON.stringify({ id: 'abc', n: 7, text: '{"v":4,"path":"a\\b/c"}\n\t', other: ['"', '\\'] });
    expect(escaped).toContain('\\"');
    await storage.put('p/ptr.json', utf8(escaped));
    const answer = await storage.getLinked('p/ptr.json', LINKS);
    expect(answer?.got).toEqual({ key: 'p/doc/abc.json', object: await storage.get('p/doc/abc.json') });
    expect(answer?.listed?.prefix).toBe('p/parts/7/');
    expect(answer?.listed?.objects.map((o) => o.key)).toEqual(['p/parts/7/w']);
    // An escaped backslash before a digit is ASCII, not the escape form of a byte of the high half.
    await storage.put('p/ptr.json', utf8('{"id":"abc","n":7,"other":{"\\\\0":0}}'));
    expect((await storage.getLinked('p/ptr.json', LINKS))?.got?.key).toBe('p/doc/abc.json');
    for (const text of ['{"id":"ab\\u0063","n":7}', '{"id":"abc","n":7,"x":"\\u0000"}', '{"id":"abc","n":7,"x":"\\ud800"}']) {
      await storage.put('p/ptr.json', utf8(text));
      const before = storage.stats().roundTrips;
      const left = await storage.getLinked('p/ptr.json', LINKS);
      expect(storage.stats().roundTrips - before).toBe(1);
      expect(left?.got).toBeUndefined();
      expect((await readLinked(storage, 'p/ptr.json', LINKS))?.got?.key).toBe(linkedKey(utf8(text), LINKS.get!));
    }
  });

  it('encryptedStorage over it does not declare a linked read (the server cannot read members of ciphertext)', async () => {
    const inner = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(inner);
    const encrypted = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    expect(linkedReadOf(inner)).toBeTypeOf('function');
    expect(encrypted.capabilities.linkedRead).toBeUndefined();
    expect(linkedReadOf(encrypted)).toBeUndefined();
    await encrypted.put('p/ptr.json', utf8('{"id":"abc","n":1}'));
    await encrypted.put('p/doc/abc.json', utf8('secret'));
    const answer = await readLinked(encrypted, 'p/ptr.json', LINKS);
    expect(answer?.got?.object?.bytes).toEqual(utf8('secret'));
  });

  it("the statement's generic plan costs less than jit_above_cost on a table the server believes holds a billion rows", async () => {
    const table = freshTable('linked');
    const storage = postgresStorage({ connectionString: server().url, table });
    stores.push(storage);
    for (const name of ['t/latest.json', 't/parts/1/w', 't/a', 't/b']) await storage.put(name, utf8('{"sequence":1}'));
    const client = new pg.Client({ connectionString: server().url });
    await client.connect();
    try {
      await client.query(`ANALYZE ${table}`);
      // The planner scales the table's rows per page by its current pages: a billion rows, as far as plans go.
      await client.query(`UPDATE pg_class SET reltuples = 1e9 WHERE relname IN ('${table}', '${table}_pkey')`);
      await client.query('SET plan_cache_mode = force_generic_plan');
      await client.query(`PREPARE lr AS ${storeSql('public', table).linkedRead}`);
      const args = linkedReadParams('t/latest.json', {
        get: { member: 'id', before: 't/doc/', after: '.json' },
        list: { member: 'sequence', before: 't/parts/', after: '/' },
        keys: 't/',
        first: { prefix: 't/', count: 8 },
        keysIfAbsent: 't/',
        entries: 't/',
      }).map(literal);
      const explained = await client.query<{
        'QUERY PLAN': [{ Plan: { 'Total Cost': number; 'Actual Rows': number }; JIT?: unknown }];
      }>(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE lr(${args.join(', ')})`);
      const [plan] = explained.rows[0]!['QUERY PLAN'];
      const { rows } = await client.query<{ jit_above_cost: string }>('SHOW jit_above_cost');
      expect(plan.Plan['Total Cost']).toBeLessThan(Number(rows[0]!.jit_above_cost));
      expect(plan.JIT).toBeUndefined();
      // The value, the listed writes (1), the 4 keys under t/ packed in one row, then as first and entries: the parameters are the store's.
      expect(plan.Plan['Actual Rows']).toBe(11);
    } finally {
      await client.end();
    }
  });

  it('is planned once on a connection, whichever parts a call asks for, and the plan kept reads the keys under a prefix from the index in key order (regressions: planned again at every call; a bitmap scan of the heap)', async () => {
    const onePool = makePool(server().url, { max: 1 });
    const table = freshTable('linked_plan');
    const storage = postgresStorage({ pool: onePool, table });
    try {
      await storage.migrate();
      await fillServiceSized(onePool, table);
      await storage.put('r/head.json', utf8('{"id":"c3","sequence":3}'));
      for (let i = 1; i <= 3; i++) {
        await storage.put(`r/doc/c${i}.json`, utf8(`{"n":${i}}`));
        await storage.put(`r/parts/${i}/w`, utf8('writes'));
      }
      const head: ReadLinks = {
        get: { member: 'id', before: 'r/doc/', after: '.json' },
        list: { member: 'sequence', before: 'r/parts/', after: '/' },
      };
      // A saver's two reads of a thread's head: alone, and with the thread's keys and first documents when it meets the thread.
      for (let i = 0; i < 12; i++) {
        const linked = await linkedReadOf(storage)!(
          'r/head.json',
          i % 2 === 0 ? head : { ...head, keys: 'r/', first: { prefix: 'r/doc/', count: 2 } },
        );
        expect(linked?.got?.object).toBeDefined();
        if (i % 2 === 1) expect(linked?.keys?.keys).toHaveLength(7);
      }
      const { rows } = await onePool.query<{ generic: string; custom: string }>(
        "SELECT generic_plans::text AS generic, custom_plans::text AS custom FROM pg_prepared_statements WHERE statement LIKE '%0 AS part%'",
      );
      expect(rows).toHaveLength(1);
      // The server tries custom plans first (five of them), then keeps the generic one: no call's parameters make a plan of their own cheaper.
      expect(Number(rows[0]!.generic)).toBeGreaterThan(0);
      expect(Number(rows[0]!.custom)).toBeLessThan(12);
      // The plan kept reads the packed keys (parts 3 and 5, each an aggregate) from the index in key
      // order: a bitmap scan of the heap (which the planner prefers on a table this size) visits every
      // row deleted since the last vacuum, and sorts after.
      const client = await onePool.connect();
      try {
        await client.query('SET plan_cache_mode = force_generic_plan');
        await client.query(`PREPARE shape AS ${storeSql('public', table).linkedRead}`);
        const args = linkedReadParams('r/head.json', { ...head, keys: 'r/', first: { prefix: 'r/doc/', count: 2 } }).map(literal);
        const explained = await client.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(
          `EXPLAIN (FORMAT JSON) EXECUTE shape(${args.join(', ')})`,
        );
        const aggregates = nodesOf(explained.rows[0]!['QUERY PLAN'][0].Plan).filter((n) => n['Node Type'] === 'Aggregate');
        expect(aggregates).toHaveLength(2);
        for (const aggregate of aggregates) {
          const below = nodesOf(aggregate).map((n) => n['Node Type']);
          expect(below).toContain('Index Only Scan');
          expect(below).not.toContain('Bitmap Heap Scan');
        }
        await client.query('DEALLOCATE shape');
        await client.query('RESET plan_cache_mode');
      } finally {
        client.release();
      }
    } finally {
      await storage.close();
      await onePool.end();
    }
  });

  it('a part with more rows than the statement reads in place is left to the caller, and readLinked reads it', async () => {
    const storage = postgresStorage({ connectionString: server().url, table: freshTable('linked') });
    stores.push(storage);
    const L = LINKED_READ_LIMITS;
    const names = (prefix: string, count: number): string[] =>
      Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(5, '0')}`);
    const putAll = async (keys: readonly string[]): Promise<void> => {
      for (let i = 0; i < keys.length; i += 256) await Promise.all(keys.slice(i, i + 256).map((key) => storage.put(key, utf8('v'))));
    };
    // Exactly at each limit: read in place. One more: left to the caller.
    for (const [root, more] of [
      ['at', 0],
      ['over', 1],
    ] as const) {
      await putAll([
        ...names(`${root}/parts/1/`, L.listed + more),
        ...names(`${root}/k/`, L.keys + more),
        ...names(`${root}/e/`, L.entries + more),
      ]);
      await storage.put(`${root}/ptr.json`, utf8('{"n":1}'));
      const links: ReadLinks = {
        list: { member: 'n', before: `${root}/parts/`, after: '/' },
        keys: `${root}/k/`,
        entries: `${root}/e/`,
        first: { prefix: `${root}/e/`, count: 256 },
      };
      const own = await storage.getLinked(`${root}/ptr.json`, links);
      const within = more === 0;
      expect(own?.listed?.objects.length).toBe(within ? L.listed : undefined);
      expect(own?.keys?.keys.length).toBe(within ? L.keys : undefined);
      expect(own?.entries?.entries.length).toBe(within ? L.entries : undefined);
      expect(own?.first?.objects.length).toBe(256);
      const whole = await readLinked(storage, `${root}/ptr.json`, links);
      expect(whole?.listed?.objects.map((o) => o.key)).toEqual(names(`${root}/parts/1/`, L.listed + more));
      expect(whole?.keys?.keys).toEqual(names(`${root}/k/`, L.keys + more));
      expect(whole?.entries?.entries.map((e) => e.key)).toEqual(names(`${root}/e/`, L.entries + more));
      // Only when the value is absent: its keys as well.
      const keys = { absent: { prefix: `${root}/k/`, keys: names(`${root}/k/`, L.keys + more) } };
      expect(await storage.getLinked(`${root}/none.json`, { keysIfAbsent: `${root}/k/` })).toEqual(within ? keys : undefined);
      expect(await readLinked(storage, `${root}/none.json`, { keysIfAbsent: `${root}/k/` })).toEqual(keys);
    }
  }, 120_000);
});
