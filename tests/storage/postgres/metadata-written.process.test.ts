/**
 * The metadata column as this version writes it: the store sends each value's metadata
 * (client-metadata.ts) and a trigger computes it for every write that does not (an older
 * version's statements, a value the store leaves to the server, a move). Checked against the
 * column's own function: the value the store gives is the function's for random documents, no
 * write by this or an older version (their statements, from tests/fixtures) leaves a stale value,
 * and every older layout migrates to this one keeping its rows' values.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { clientMetadata } from '../../../src/storage/postgres/client-metadata.js';
import { orderKey } from '../../../src/storage/postgres/order-key.js';
import { sealCheckpointDocument } from '../../../src/langgraph/document.js';
import { sealWrites } from '../../../src/langgraph/writes.js';
import { checkpointPayload, writesDocument } from '../../langgraph/known-metadata-arbitraries.js';
import { encodeRunIndex } from '../../../src/codec/run-index.js';
import { indexMetadata } from '../../../src/writer/ordered-write.js';
import { runIndexArbitrary } from '../../writer/run-index-arbitraries.js';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;

interface OlderStatements {
  migrate: string[];
  putAny: string;
  putIfAbsent: string;
  putIfVersion: string;
  batch: string;
  pair?: { any: string };
  move?: string;
}
type Layout = 'v1' | 'v2' | 'v2-r2' | 'v2-r3';
const LAYOUTS: readonly Layout[] = ['v1', 'v2', 'v2-r2', 'v2-r3'];
const fixture = JSON.parse(readFileSync(new URL('../../fixtures/postgres/older-statements.json', import.meta.url), 'utf8')) as Record<
  Layout,
  OlderStatements
>;

/** The statements of an older version on `table`. */
function older(layout: Layout, table: string): OlderStatements {
  return JSON.parse(JSON.stringify(fixture[layout]).replaceAll('__TABLE__', table)) as OlderStatements;
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Number tokens as documents spell them: exact in a double or not, and beyond jsonb's numeric. */
const numberText = fc.constantFrom('1', '-0', '1.0', '0.1', '2.5e3', '12345678901234567890', '1e400', '1e-400', '1e1000000', '3');
const jsonText = fc.json({ maxDepth: 2 });
/** Metadata as a document might spell it: JSON of any values, or text with numbers as written. */
const metadataText = fc.oneof(
  fc
    .dictionary(fc.constantFrom('source', 'step', 'user', 'lc', 'parents', '1'), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })
    .map((m) => JSON.stringify(m)),
  fc.tuple(fc.constantFrom('step', 'n'), numberText).map(([k, n]) => `{"${k}":${n}}`),
  fc.constantFrom(
    '{"user":"ana"}',
    '{ "user" : "ana" }',
    '{"lc":1}',
    '{"a":"x\\"lc"}',
    '[1]',
    '"text"',
    'null',
    '{"s":"\\u0000"}',
    '{"s":"\\u00e9"}',
  ),
);
/** A stored value: documents with metadata in many spellings, documents without, and bytes that are no JSON object. */
const documentText = fc.oneof(
  fc.tuple(metadataText, jsonText).map(([m, other]) => `{"metadata":${m},"payload":${other}}`),
  fc.tuple(metadataText, numberText).map(([m, n]) => `{"n":${n},"metadata" :${m}}`),
  metadataText.map((m) => `{"metadata":${m},"metadata_blob":{"type":"x"}}`),
  metadataText.map((m) => `{"metadata":${m},"x":{"metadata":${m}}}`),
  metadataText.map((m) => `{"metadata":{"a":1},"metadata":${m}}`),
  fc.tuple(jsonText, numberText).map(([v, n]) => `{"value":${v},"n":${n}}`),
  fc.constantFrom(
    '{"$savepoint_chunked":{"bytes":1}}',
    '{"\\u006detadata":{"user":"ana"}}',
    '{"other":"a \\"metadata\\" b"}',
    '{"other":"say \\"metadata"}',
    '{not json}',
    '{"a":1} {"b":2}',
    '{}',
  ),
);
const stored = fc.oneof(
  { weight: 6, arbitrary: documentText.map(utf8) },
  { weight: 1, arbitrary: fc.constant(Uint8Array.of(0x7b, 0xff, 0x7d)) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 8 }).map((b) => Uint8Array.of(0x7b, ...b, 0x7d)) },
);
const keyOf = fc.constantFrom('k/a.json', 'k/b.json', 'k/c.txt');

suite('the metadata column written by the statements', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = makePool(server().url);
  });
  afterAll(async () => {
    await pool?.end();
  });

  const fnOf = (table: string): string => `"public"."${table}_metadata"`;
  /**
   * Rows whose column is not what the function computes from their key and value, or that say it
   * is of another version (NULL: a row an older layout wrote, not written since).
   */
  async function staleRows(table: string): Promise<unknown[]> {
    const res = await pool.query(
      `SELECT key, metadata::text AS metadata, ${fnOf(table)}(key, value)::text AS computed, version, metadata_version FROM "public"."${table}"
       WHERE metadata IS DISTINCT FROM ${fnOf(table)}(key, value) OR metadata_version <> version`,
    );
    return res.rows;
  }

  it('property: the metadata the store gives is what the column function computes from the same key and bytes', async () => {
    const storage = postgresStorage({ pool, table: freshTable('mdw') });
    await storage.migrate();
    const fn = fnOf(storage.table);
    let given = 0;
    try {
      await fc.assert(
        fc.asyncProperty(keyOf, stored, async (key, bytes) => {
          const m = clientMetadata(key, bytes);
          if (!m.given) return;
          given++;
          const res = await pool.query(
            `SELECT ${fn}($1::text, $2::bytea) IS NOT DISTINCT FROM $3::jsonb AS same, ${fn}($1, $2)::text AS computed`,
            [key, Buffer.from(bytes), m.json],
          );
          expect({ key, text: new TextDecoder().decode(bytes), given: m.json, same: res.rows[0].same }).toEqual({
            key,
            text: new TextDecoder().decode(bytes),
            given: m.json,
            same: true,
          });
        }),
        { numRuns: 600 },
      );
      // Most documents are decided by the store (a property that always left them to the server would pass by doing nothing).
      expect(given).toBeGreaterThan(300);
    } finally {
      await storage.close();
    }
  }, 120_000);

  /** A migrated store on a fresh table, with its column function's name, for `body`; closed after. */
  async function onFreshStore(prefix: string, body: (storage: PostgresStorage, fn: string) => Promise<void>): Promise<void> {
    const table = freshTable(prefix);
    const storage = postgresStorage({ pool, table });
    await storage.migrate();
    try {
      await body(storage, fnOf(table));
    } finally {
      await storage.close();
    }
  }

  /** The column the function computes from `key` and `bytes`, as `jsonb` text. */
  async function computedColumn(fn: string, key: string, bytes: Uint8Array): Promise<string | null> {
    return (await pool.query(`SELECT ${fn}($1::text, $2::bytea)::text AS computed`, [key, Buffer.from(bytes)])).rows[0].computed;
  }

  it(
    'property: the metadata the saver hands down with a checkpoint or writes document is what the column function computes from its bytes',
    () =>
      onFreshStore('mdk', async (_storage, fn) => {
        let said = 0;
        await fc.assert(
          fc.asyncProperty(checkpointPayload, async (p) => {
            const header = {
              id: '1ef4f797-8335-6428-8001-8a1503f9b875',
              runId: 'run-1',
              sequence: 1,
              createdAt: '2026-01-01T00:00:00Z',
              source: 'loop',
            };
            const sealed = await sealCheckpointDocument(header, p, { metadataColumnBelow: Number.POSITIVE_INFINITY });
            if (sealed.metadataColumn === undefined) return;
            said++;
            const res = await pool.query(`SELECT ${fn}($1::text, $2::bytea) IS NOT DISTINCT FROM $3::jsonb AS same`, [
              'c/1.json',
              Buffer.from(sealed.bytes),
              sealed.metadataColumn,
            ]);
            expect({ said: sealed.metadataColumn, same: res.rows[0].same }).toEqual({ said: sealed.metadataColumn, same: true });
          }),
          { numRuns: 300 },
        );
        expect(said).toBeGreaterThan(100);
        // A task's writes document says '{}' where its texts allow it.
        let writesSaid = 0;
        await fc.assert(
          fc.asyncProperty(writesDocument, async ([document, writes]) => {
            const sealed = sealWrites(document, writes, undefined, Number.POSITIVE_INFINITY);
            if (sealed.metadataColumn === undefined) return;
            writesSaid++;
            expect(await computedColumn(fn, 'w/1.json', await sealed.bytes)).toBe(sealed.metadataColumn);
          }),
          { numRuns: 200 },
        );
        expect(writesSaid).toBeGreaterThan(25);
      }),
    120_000,
  );

  it("property: the metadata the writer hands down with a run's index ('{}') is what the column function computes from its bytes", () =>
    onFreshStore('mdi', async (storage, fn) => {
      let said = 0;
      await fc.assert(
        fc.asyncProperty(runIndexArbitrary, async (index) => {
          const bytes = encodeRunIndex(index);
          const known = indexMetadata(storage, bytes);
          if (known === undefined) return;
          said++;
          expect({ said: known.json, computed: await computedColumn(fn, 'checkpoints/r/index.json', bytes) }).toEqual({
            said: '{}',
            computed: '{}',
          });
        }),
        { numRuns: 200 },
      );
      expect(said).toBeGreaterThan(50);
    }));

  it('a put, a pair and a batch take the metadata handed down for their very bytes, and not for other bytes', async () => {
    const table = freshTable('mdk');
    const storage = postgresStorage({ pool, table });
    await storage.migrate();
    const column = async (key: string): Promise<unknown> =>
      (await pool.query(`SELECT metadata FROM "public"."${table}" WHERE key_order = $1`, [orderKey(key)])).rows[0]?.metadata;
    const bytes = utf8('{"metadata":{"said":"by the bytes"}}');
    // The store takes what it is told rather than parsing: told something else, it writes that.
    const told = { bytes, json: '{"said":"handed down"}' };
    const otherArray = { bytes: bytes.slice(), json: '{"said":"handed down"}' };
    try {
      await storage.put('k/put.json', bytes, { knownMetadata: told });
      await storage.put('k/copy.json', bytes, { knownMetadata: otherArray });
      await storage.put('k/not-json.txt', bytes, { knownMetadata: told });
      await storage.batch([
        { type: 'put', key: 'k/pair-1.json', bytes, knownMetadata: otherArray },
        { type: 'put', key: 'k/pair-2.json', bytes, knownMetadata: told },
      ]);
      await storage.batch([{ type: 'put', key: 'k/batch.json', bytes, knownMetadata: told }]);
      expect({
        put: await column('k/put.json'),
        copy: await column('k/copy.json'),
        notJson: await column('k/not-json.txt'),
        pair1: await column('k/pair-1.json'),
        pair2: await column('k/pair-2.json'),
        batch: await column('k/batch.json'),
      }).toEqual({
        put: { said: 'handed down' },
        copy: { said: 'by the bytes' },
        notJson: null,
        pair1: { said: 'by the bytes' },
        pair2: { said: 'handed down' },
        batch: { said: 'handed down' },
      });
    } finally {
      await storage.close();
    }
  });

  it('a LangGraph checkpoint, its writes and its thread head: their metadata is given by the store, not computed by the server', () => {
    const checkpoint = JSON.stringify({
      v: 4,
      id: '1ef4f797-8335-6428-8001-8a1503f9b875',
      channel_values: { note: `1 ${'x'.repeat(1000)}` },
      metadata: { source: 'loop', step: 3, parents: {} },
      parent: '1ef4f797-8335-6428-8000-8a1503f9b875',
    });
    const writes = JSON.stringify({ writes: [['t', 'note', `1 ${'x'.repeat(1000)}`]] });
    expect(clientMetadata('c/1.json', utf8(checkpoint))).toEqual({ json: '{"source":"loop","step":3,"parents":{}}', given: true });
    expect(clientMetadata('w/1.json', utf8(writes))).toEqual({ json: '{}', given: true });
    expect(clientMetadata('h.json', utf8('{"id":"1ef4f797","sequence":12}'))).toEqual({ json: '{}', given: true });
  });

  it('property: writes of this version and of older ones, mixed on the same keys, never leave a stale value', async () => {
    const table = freshTable('mdw');
    const storage = postgresStorage({ pool, table });
    await storage.migrate();
    // Two write slots: puts made at once beyond them go together through the batches function.
    const smallPool = makePool(server().url, { max: 3 });
    const grouped = postgresStorage({ pool: smallPool, table });
    let groupedPuts = 0;
    const old = older('v2-r3', table);
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(fc.integer({ min: 0, max: 10 }), keyOf, stored, keyOf), { minLength: 1, maxLength: 12 }),
          async (steps) => {
            for (const [how, key, bytes, other] of steps) {
              const value = Buffer.from(bytes);
              const existing = await pool.query(`SELECT version::text AS v FROM "public"."${table}" WHERE key_order = $1`, [orderKey(key)]);
              const version = existing.rows[0]?.v as string | undefined;
              if (how === 0) await storage.put(key, bytes);
              else if (how === 1 && version) await storage.put(key, bytes, { ifVersion: version });
              else if (how === 2 && key !== other)
                await storage.batch([
                  { type: 'put', key, bytes },
                  { type: 'put', key: other, bytes },
                ]);
              else if (how === 3) await pool.query(old.putAny, [orderKey(key), key, value]);
              else if (how === 4 && version) await pool.query(old.putIfVersion, [orderKey(key), key, value, version]);
              else if (how === 5 && key !== other)
                await pool.query(old.pair!.any, [orderKey(key), key, value, orderKey(other), other, value]);
              else if (how === 6) await pool.query(old.batch, [['put'], [orderKey(key)], [key], [value], [null], [false]]);
              else if (how === 7 && key !== other) await pool.query(old.move!, [orderKey(key), orderKey(other), other]);
              else if (how === 8 && key !== other) await storage.move(key, other).catch(() => undefined);
              else if (how === 9) await storage.batch([{ type: 'put', key, bytes }]);
              else if (how === 10 && (groupedPuts += 5))
                await Promise.all(
                  [bytes, utf8('{"metadata":{"n":1}}'), utf8('{"metadata":{"n":2}}'), bytes, utf8('{"metadata":{"n":3}}')].map((b, i) =>
                    grouped.put(i % 2 === 0 ? key : other, b),
                  ),
                );
              else await pool.query(old.putIfAbsent, [orderKey(key), key, value]);
            }
            expect(await staleRows(table)).toEqual([]);
          },
        ),
        { numRuns: 60 },
      );
      // Some grouped puts went together through the batches function: fewer statements than puts (its first use's check counted).
      expect(grouped.stats().roundTrips - 1).toBeLessThan(groupedPuts);
    } finally {
      await storage.close();
      await grouped.close();
      await smallPool.end();
    }
  }, 120_000);

  it.each(LAYOUTS)(
    'a table at layout %s migrates to the written column, keeping its rows; that version writing beside it afterwards leaves no stale value',
    async (layout) => {
      const table = freshTable('mdw');
      const old = older(layout, table);
      const migrateOld = async (): Promise<void> => {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          for (const statement of old.migrate) await client.query(statement);
          await client.query('COMMIT');
        } finally {
          client.release();
        }
      };
      await migrateOld();
      const documents = ['{"metadata":{"user":"ana"}}', '{"metadata":{"user":"bob"},"metadata_blob":1}', '{"other":1}', 'not json'];
      for (const [i, d] of documents.entries()) await pool.query(old.putAny, [orderKey(`k/${i}.json`), `k/${i}.json`, Buffer.from(d)]);
      const storage = postgresStorage({ pool, table });
      await storage.put('k/new.json', utf8('{"metadata":{"user":"ana"}}'));
      const generated = await pool.query(
        `SELECT attgenerated FROM pg_attribute WHERE attrelid = '"public"."${table}"'::regclass AND attname = 'metadata'`,
      );
      expect(generated.rows[0].attgenerated).toBe('');
      expect(await staleRows(table)).toEqual([]);
      const listed: string[] = [];
      for await (const e of storage.listWhereMetadata('k/', { user: 'ana' })) listed.push(e.key);
      expect(listed).toEqual(['k/0.json', 'k/1.json', 'k/3.json', 'k/new.json']);
      // The older version starts again beside this one (its migration, then its writes over this one's rows).
      await migrateOld();
      await pool.query(old.putAny, [orderKey('k/new.json'), 'k/new.json', Buffer.from('{"metadata":{"user":"bob"}}')]);
      await pool.query(old.putAny, [orderKey('k/0.json'), 'k/0.json', Buffer.from('not json')]);
      await storage.put('k/2.json', utf8('{"metadata":{"user":"ana"}}'));
      expect(await staleRows(table)).toEqual([]);
      await storage.close();
    },
  );

  it('the metadata is of the bytes stored: a caller reusing its buffer once put returns changes neither', async () => {
    const table = freshTable('mdw');
    const storage = postgresStorage({ pool, table });
    const bytes = utf8('{"metadata":{"user":"ana"}}');
    // The first put waits for the layout check: the buffer changes meanwhile.
    const putting = storage.put('k/a.json', bytes);
    bytes.set(utf8('{"metadata":{"user":"bob"}}'));
    await putting;
    expect(new TextDecoder().decode((await storage.get('k/a.json'))?.bytes)).toBe('{"metadata":{"user":"ana"}}');
    expect(await staleRows(table)).toEqual([]);
    await storage.close();
  });

  it('with autoMigrate: false, a table whose column is still generated is written without the metadata (the server computes it)', async () => {
    const table = freshTable('mdw');
    const old = older('v2-r3', table);
    for (const statement of old.migrate) await pool.query(statement);
    const storage = postgresStorage({ pool, table, autoMigrate: false });
    const a = await storage.put('k/a.json', utf8('{"metadata":{"user":"ana"}}'));
    await storage.batch([
      { type: 'put', key: 'k/h.json', bytes: utf8('{"id":"b"}') },
      { type: 'put', key: 'k/b.json', bytes: utf8('{"metadata":{"user":"bob"}}') },
    ]);
    // A writer's checkpoint (create, put, check): the pair's checked statement in its older shape.
    await storage.batch([
      { type: 'put', key: 'k/c.json', bytes: utf8('{"metadata":{"user":"cy"}}'), ifAbsent: true },
      { type: 'put', key: 'k/l.json', bytes: utf8('{"id":"c"}') },
      { type: 'check', key: 'k/a.json', ifVersion: a.version },
    ]);
    // And with the run's index rewritten on its version.
    const index = await storage.put('k/i.json', utf8('{"checkpoints":[]}'));
    await storage.batch([
      { type: 'put', key: 'k/d.json', bytes: utf8('{"metadata":{"user":"di"}}'), ifAbsent: true },
      { type: 'put', key: 'k/l.json', bytes: utf8('{"id":"d"}') },
      { type: 'check', key: 'k/a.json', ifVersion: a.version },
      { type: 'put', key: 'k/i.json', bytes: utf8('{"checkpoints":[1]}'), ifVersion: index.version },
    ]);
    const rows = await pool.query(`SELECT key, metadata::text AS m FROM "public"."${table}" ORDER BY key`);
    expect(rows.rows).toEqual([
      { key: 'k/a.json', m: '{"user": "ana"}' },
      { key: 'k/b.json', m: '{"user": "bob"}' },
      { key: 'k/c.json', m: '{"user": "cy"}' },
      { key: 'k/d.json', m: '{"user": "di"}' },
      { key: 'k/h.json', m: '{}' },
      { key: 'k/i.json', m: '{}' },
      { key: 'k/l.json', m: '{}' },
    ]);
    await storage.close();
  });
});
