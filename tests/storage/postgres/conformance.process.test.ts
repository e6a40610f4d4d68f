import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { runStorageConformance } from 'savepoint/testing';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
let pool: pg.Pool;
beforeAll(() => {
  if (hasPostgres) pool = makePool(server().url, { max: 12 });
});
afterAll(async () => {
  await pool?.end();
});

const drop = async (adapter: StorageAdapter): Promise<void> => {
  await adapter.close();
  const { schema, table } = adapter as PostgresStorage;
  await pool.query(`DROP TABLE IF EXISTS "${schema}"."${table}" CASCADE`);
  await pool.query(`DROP FUNCTION IF EXISTS "${schema}"."${table}_batch"`);
};

const suites = hasPostgres ? describe : describe.skip;
suites('postgresStorage against a real server', () => {
  // The caller's pool: the way services that already run node-postgres use the store.
  runStorageConformance({
    name: 'postgresStorage({ pool })',
    describe,
    it,
    fc,
    // 8 MiB rather than the 64 MiB default: the size-limit test writes and reads a value of
    // exactly the limit, which at 64 MiB takes over a minute on a loaded two-core machine.
    create: () => postgresStorage({ pool, table: freshTable(), maxValueBytes: 8 * 1024 * 1024 }),
    destroy: drop,
    reopen: (closed) => postgresStorage({ pool, table: (closed as PostgresStorage).table, maxValueBytes: 8 * 1024 * 1024 }),
    capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes: 8 * 1024 * 1024, versionsPerWrite: true },
    timeoutMs: 120_000,
    nestedKeys: true,
    concurrency: 8,
    propertyRuns: 40,
  });

  // Its own pool from a connection string, in a named schema, with a small declared size limit.
  runStorageConformance({
    name: 'postgresStorage({ connectionString, schema, maxValueBytes })',
    describe,
    it,
    fc,
    create: () =>
      postgresStorage({ connectionString: server().url, schema: 'sp_conformance', table: freshTable(), maxValueBytes: 4096, poolSize: 4 }),
    destroy: drop,
    reopen: (closed) =>
      postgresStorage({
        connectionString: server().url,
        schema: 'sp_conformance',
        table: (closed as PostgresStorage).table,
        maxValueBytes: 4096,
      }),
    capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes: 4096, versionsPerWrite: true },
    nestedKeys: true,
    concurrency: 8,
    propertyRuns: 8,
  });
});
