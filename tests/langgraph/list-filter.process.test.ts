/**
 * `list({ filter })` on PostgreSQL answered from the table's metadata column (the store's
 * metadata listing, contract/metadata-listing.ts) instead of reading every checkpoint: the same
 * answer as the scan a store without the capability gets, for random metadata, filters, limits,
 * namespaces, big (chunked) documents and metadata the column cannot hold; and what it leaves
 * out when it can.
 */
import { JsonPlusSerializer, emptyCheckpoint, uuid6, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EncryptionKey, encryptedStorage, memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../support/postgres-fixture.js';

const { server } = usePostgres();
const suite = hasPostgres ? describe : describe.skip;

/** `storage` as a store without the capability (every other member its own). */
const withoutListing = (storage: StorageAdapter): StorageAdapter => ({
  ...storage,
  capabilities: { ...storage.capabilities, metadataListing: false },
});

/** `storage` with the keys its metadata listings yield recorded. */
function recording(storage: PostgresStorage): { storage: PostgresStorage; yielded: string[] } {
  const yielded: string[] = [];
  const wrapped: PostgresStorage = {
    ...storage,
    async *listWhereMetadata(prefix, contains, options) {
      for await (const entry of storage.listWhereMetadata(prefix, contains, options)) {
        yielded.push(entry.key);
        yield entry;
      }
    },
  };
  return { storage: wrapped, yielded };
}

const summary = (tuples: readonly CheckpointTuple[]) =>
  tuples.map((t) => ({ config: t.config, metadata: t.metadata, values: t.checkpoint.channel_values, writes: t.pendingWrites }));

async function collect(saver: SavepointSaver, ...args: Parameters<SavepointSaver['list']>): Promise<CheckpointTuple[]> {
  const out: CheckpointTuple[] = [];
  for await (const t of saver.list(...args)) out.push(t);
  return out;
}

let counter = 0;

/** Puts `metadata.length` checkpoints on (thread, ns), every third with pending writes; `big` ones over the chunking threshold. */
async function fill(
  saver: SavepointSaver,
  thread: string,
  ns: string,
  metadata: readonly Record<string, unknown>[],
  big: readonly boolean[],
) {
  let config = { configurable: { thread_id: thread, checkpoint_ns: ns } } as { configurable: Record<string, unknown> };
  for (const [i, m] of metadata.entries()) {
    const values = { note: big[i] ? 'x'.repeat(40_000) + i : `step ${i}` };
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(++counter), channel_values: values, channel_versions: { note: i + 1 } };
    config = (await saver.put(config, checkpoint, { source: 'loop', step: i, parents: {}, ...m } as never, {
      note: i + 1,
    })) as typeof config;
    if (i % 3 === 0) await saver.putWrites(config, [['note', `w${i}`]], `task-${i}`);
  }
}

// Values that match each other in some ways and not others: containment that is not equality
// ([1] in [1, 2], { a: 1 } in { a: 1, b: 2 }), numbers written two ways, null, a NUL jsonb refuses,
// an object LangChain's reviver turns into another value (undefined).
const value = fc.constantFrom<unknown>('ana', 'bob', 1, 2, 1.5, null, true, [1], [1, 2], { a: 1 }, { a: 1, b: 2 }, 'nul\u0000here', 'é', {
  lc: 2,
  type: 'undefined',
});
const metadataArb = fc.dictionary(fc.constantFrom('user', 'tags', 'n', 'deep'), value, { maxKeys: 3 });

suite('SavepointSaver list({ filter }) on postgresStorage: the metadata listing', () => {
  let pool: pg.Pool;
  let storage: PostgresStorage;
  beforeAll(() => {
    pool = makePool(server().url);
    storage = postgresStorage({ pool, table: freshTable('lgfilter') });
  });
  afterAll(async () => {
    await storage?.close();
    await pool?.end();
  });

  it('property: the answer from the index is the answer of the scan (random metadata, filters, limits, namespaces, chunked documents)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(metadataArb, fc.boolean(), fc.constantFrom('', 'sub')), { minLength: 1, maxLength: 12 }),
        fc.oneof(metadataArb, fc.nat(11)),
        fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
        fc.constantFrom<'thread' | 'run' | 'all'>('thread', 'run', 'all'),
        async (steps, filterFrom, limit, scope) => {
          const thread = `t${++counter}`;
          const writer = new SavepointSaver({ storage });
          for (const ns of ['', 'sub'])
            await fill(
              writer,
              thread,
              ns,
              steps.filter((s) => s[2] === ns).map((s) => s[0]),
              steps.filter((s) => s[2] === ns).map((s) => s[1]),
            );
          // A filter from a stored checkpoint's metadata (it matches something), or a random one.
          const filter = typeof filterFrom === 'number' ? steps[filterFrom % steps.length]![0] : filterFrom;
          const configurable = scope === 'all' ? {} : scope === 'run' ? { thread_id: thread, checkpoint_ns: '' } : { thread_id: thread };
          const options = { filter, ...(limit === undefined ? {} : { limit }) };
          const indexed = await collect(new SavepointSaver({ storage }), { configurable }, options);
          const scanned = await collect(new SavepointSaver({ storage: withoutListing(storage) }), { configurable }, options);
          expect(summary(indexed)).toEqual(summary(scanned));
        },
      ),
      { numRuns: 30 },
    );
  }, 120_000);

  it('leaves out the checkpoints whose metadata does not match: 1 in 50 matching, only the matches (and chunked documents) are listed', async () => {
    const { storage: recorded, yielded } = recording(storage);
    const saver = new SavepointSaver({ storage: recorded });
    const thread = `few-${++counter}`;
    const metadata = Array.from({ length: 100 }, (_, i) => ({ user: i % 50 === 7 ? 'ana' : 'bob' }));
    await fill(
      saver,
      thread,
      '',
      metadata,
      metadata.map((_, i) => i === 99),
    );
    const found = await collect(saver, { configurable: { thread_id: thread } }, { filter: { user: 'ana' } });
    expect(found.map((t) => t.metadata?.['step'])).toEqual([57, 7]);
    // The two matches and the chunked document (its envelope holds no metadata: unknown, read and checked).
    expect(yielded.filter((k) => k.includes('/history/'))).toHaveLength(3);
    expect(yielded.some((k) => k.includes('/parts/') || k.endsWith('head.json'))).toBe(false);
  });

  it('metadata a serializer stores in another form (metadata_blob) is read and checked, not left out', async () => {
    const json = new JsonPlusSerializer();
    // As an encrypting serializer: its own type tag, so the saver keeps the bytes as they are.
    const sealed = Object.assign(Object.create(json) as JsonPlusSerializer, {
      dumpsTyped: async (value: unknown) => ['sealed-json', (await json.dumpsTyped(value))[1]] as [string, Uint8Array],
      loadsTyped: (type: string, data: Uint8Array | string) => json.loadsTyped(type === 'sealed-json' ? 'json' : type, data),
    });
    const saver = new SavepointSaver({ storage, serde: sealed });
    const thread = `blob-${++counter}`;
    await fill(saver, thread, '', [{ user: 'ana' }, { user: 'bob' }], [false, false]);
    const found = await collect(saver, { configurable: { thread_id: thread } }, { filter: { user: 'ana' } });
    expect(found.map((t) => t.metadata?.['step'])).toEqual([0]);
  });

  it('a table of layout v1 (no metadata column) is upgraded at first use, the column computed for the rows it holds', async () => {
    const table = freshTable('lgv1');
    const first = postgresStorage({ pool, table });
    const thread = `v1-${++counter}`;
    await fill(
      new SavepointSaver({ storage: first }),
      thread,
      '',
      [{ user: 'ana' }, { user: 'bob' }, { user: 'ana' }],
      [false, false, false],
    );
    await first.close();
    await pool.query(`ALTER TABLE "public"."${table}" DROP COLUMN metadata`);
    await pool.query(`COMMENT ON TABLE "public"."${table}" IS 'savepoint store v1'`);
    const upgraded = postgresStorage({ pool, table });
    const { storage: recorded, yielded } = recording(upgraded);
    const found = await collect(
      new SavepointSaver({ storage: recorded }),
      { configurable: { thread_id: thread } },
      { filter: { user: 'ana' } },
    );
    expect(found.map((t) => t.metadata?.['step'])).toEqual([2, 0]);
    expect(yielded.filter((k) => k.includes('/history/'))).toHaveLength(2);
    await upgraded.close();
  });

  it('ids that extend another with "-" keep id order, newest first (a-1 sorts after a by id, before it by key)', async () => {
    const saver = new SavepointSaver({ storage });
    const thread = `ids-${++counter}`;
    let config = { configurable: { thread_id: thread, checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
    for (const [i, id] of ['a', 'a-1', 'a-1-x', 'a-2', 'a0', 'b'].entries()) {
      const checkpoint = { ...emptyCheckpoint(), id, channel_values: { note: i }, channel_versions: { note: i + 1 } };
      config = (await saver.put(config, checkpoint, { source: 'loop', step: i, parents: {}, user: 'ana' } as never, {
        note: i + 1,
      })) as typeof config;
    }
    const options = { filter: { user: 'ana' } };
    for (const configurable of [{ thread_id: thread }, { thread_id: thread, checkpoint_ns: '' }]) {
      const indexed = await collect(new SavepointSaver({ storage }), { configurable }, options);
      const scanned = await collect(new SavepointSaver({ storage: withoutListing(storage) }), { configurable }, options);
      expect(indexed.map((t) => t.config.configurable?.['checkpoint_id'])).toEqual(['b', 'a0', 'a-2', 'a-1-x', 'a-1', 'a']);
      expect(summary(indexed)).toEqual(summary(scanned));
    }
  });

  it('a store without the capability still answers, by reading: memoryStorage, and encryptedStorage over PostgreSQL (which does not forward it)', async () => {
    const encrypted = encryptedStorage(storage, { keys: EncryptionKey.generate() });
    expect(encrypted.capabilities.metadataListing).toBeUndefined();
    expect('listWhereMetadata' in encrypted).toBe(false);
    for (const store of [memoryStorage(), encrypted]) {
      const saver = new SavepointSaver({ storage: store });
      const thread = `plain-${++counter}`;
      await fill(saver, thread, '', [{ user: 'ana' }, { user: 'bob' }, { user: 'ana' }], [false, false, false]);
      const found = await collect(saver, { configurable: { thread_id: thread } }, { filter: { user: 'ana' }, limit: 5 });
      expect(found.map((t) => t.metadata?.['step'])).toEqual([2, 0]);
    }
  });

  it('encryptedStorage over PostgreSQL: no plaintext metadata in the table’s metadata column', async () => {
    const table = freshTable('lgenc');
    const inner = postgresStorage({ pool, table });
    const saver = new SavepointSaver({ storage: encryptedStorage(inner, { keys: EncryptionKey.generate() }) });
    await fill(saver, 'secret-thread', '', [{ user: 'ana-secret' }, { user: 'bob-secret' }], [false, false]);
    // Only the keyring, a plaintext JSON document without metadata, has a column value: `{}`.
    const rows = await pool.query<{ key: string; metadata: unknown }>(
      `SELECT key, metadata FROM "public"."${table}" WHERE metadata IS NOT NULL`,
    );
    expect(rows.rows).toEqual([{ key: 'savepoint-keyring.json', metadata: {} }]);
    await inner.close();
  });

  it('listWhereMetadata refuses a filter that is not an object with checkpoint_config_invalid', async () => {
    const listing = storage.listWhereMetadata('langgraph/', 'user' as never);
    await expect(listing[Symbol.asyncIterator]().next()).rejects.toMatchObject({ reasonCode: 'checkpoint_config_invalid' });
  });
});
