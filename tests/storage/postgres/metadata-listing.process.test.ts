/**
 * postgresStorage's metadata listing (contract/metadata-listing.ts) against a model of its rules:
 * which values have known metadata (a JSON object's `metadata` object; `{}` for other JSON
 * objects; unknown for other bytes, chunk envelopes, `metadata_blob`, `lc` members, keys not
 * ending `.json`), JSON containment, ascending and descending order across pages.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** PostgreSQL's `jsonb @>`, for the values the test makes (no top-level scalar-in-array rule needed). */
function contains(doc: Json, part: Json): boolean {
  if (Array.isArray(part)) return Array.isArray(doc) && part.every((p) => doc.some((d) => contains(d, p)));
  if (part !== null && typeof part === 'object') {
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) return false;
    return Object.entries(part).every(([k, v]) => k in doc && contains(doc[k]!, v));
  }
  return doc === part;
}

/** The model of the metadata column: undefined is unknown (NULL). */
function metadataOf(key: string, text: string | undefined): Json | undefined {
  if (text === undefined || !key.endsWith('.json') || !text.startsWith('{') || !text.endsWith('}')) return undefined;
  let doc: { [k: string]: Json };
  try {
    doc = JSON.parse(text) as { [k: string]: Json };
  } catch {
    return undefined;
  }
  if ('$savepoint_chunked' in doc || 'metadata_blob' in doc) return undefined;
  const meta = doc['metadata'];
  if (meta === undefined || meta === null || typeof meta !== 'object' || Array.isArray(meta)) return {};
  return JSON.stringify(meta).includes('"lc"') ? undefined : meta;
}

const value = fc.constantFrom<Json>('ana', 'bob', 1, 2, null, true, [1], [1, 2], { a: 1 }, { a: 1, b: 2 }, { lc: 1 });
const metadata = fc.dictionary(fc.constantFrom('user', 'tags', 'n'), value, { maxKeys: 3 });
/** A stored value: a document with metadata, one without, with metadata in other forms, or bytes that are no JSON. */
const stored = fc.oneof(
  metadata.map((m) => ({ text: JSON.stringify({ metadata: m, payload: 'x' }) })),
  metadata.map((m) => ({ text: JSON.stringify({ metadata: m, metadata_blob: { type: 'x', data: '' } }) })),
  fc.constant({ text: JSON.stringify({ other: 1 }) }),
  fc.constant({ text: JSON.stringify({ $savepoint_chunked: { bytes: 1 } }) }),
  fc.constant({ text: JSON.stringify({ metadata: 'not an object' }) }),
  fc.constant({ text: '{not json}' }),
  // The name spelled with an escape, or only inside a string: read as JSON either way.
  fc.constant({ text: '{"\\u006detadata":{"user":"ana"}}' }),
  fc.constant({ text: '{"other":"a \\"metadata\\" b"}' }),
  // JSON that jsonb cannot hold (a number beyond numeric's range) and that names no metadata: empty metadata.
  fc.constant({ text: '{"other":"a \\"quoted\\" b","n":1e1000000}' }),
  fc.constant({ bytes: Uint8Array.of(0x7b, 0xff, 0x7d) }),
);

suite('postgresStorage listWhereMetadata', () => {
  let pool: pg.Pool;
  beforeAll(() => {
    pool = makePool(server().url);
  });
  afterAll(async () => {
    await pool?.end();
  });

  it('property: yields exactly the keys the model keeps, ascending and descending, across pages', async () => {
    const storage: PostgresStorage = postgresStorage({ pool, table: freshTable('mdl'), listPageSize: 20 });
    let round = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.tuple(stored, fc.constantFrom('.json', '.txt')), { minLength: 0, maxLength: 60 }),
          metadata,
          async (values, filter) => {
            const prefix = `r${++round}/`;
            const model: string[] = [];
            for (const [i, [v, ext]] of values.entries()) {
              const key = `${prefix}${String(i).padStart(3, '0')}${ext}`;
              const bytes = 'bytes' in v ? v.bytes : new TextEncoder().encode(v.text);
              await storage.put(key, bytes);
              const meta = metadataOf(key, 'text' in v ? v.text : undefined);
              if (meta === undefined || contains(meta, filter)) model.push(key);
            }
            const up: string[] = [];
            for await (const e of storage.listWhereMetadata(prefix, filter)) up.push(e.key);
            const down: string[] = [];
            for await (const e of storage.listWhereMetadata(prefix, filter, { descending: true })) down.push(e.key);
            expect(up).toEqual(model);
            expect(down).toEqual([...model].reverse());
          },
        ),
        { numRuns: 25 },
      );
    } finally {
      await storage.close();
    }
  }, 120_000);

  it('a filter jsonb cannot hold (a NUL) lists every key, as `list` does', async () => {
    const storage = postgresStorage({ pool, table: freshTable('mdl') });
    try {
      await storage.put('k/a.json', new TextEncoder().encode('{"metadata":{"user":"ana"}}'));
      await storage.put('k/b.json', new TextEncoder().encode('{"metadata":{"user":"bob"}}'));
      const keys: string[] = [];
      for await (const e of storage.listWhereMetadata('k/', { user: 'a\u0000' }, { descending: true })) keys.push(e.key);
      expect(keys).toEqual(['k/b.json', 'k/a.json']);
    } finally {
      await storage.close();
    }
  });
});
