import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { encryptedStorage, EncryptionKey, type EncryptedStorage, type StorageAdapter } from 'savepoint';
import { postgresStorage, type PostgresStorage } from 'savepoint/postgres';
import { runStorageConformance } from 'savepoint/testing';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

// encryptedStorage over a real PostgreSQL table: what a DBA or a backup reads is ciphertext.
const { server } = usePostgres();
let pool: pg.Pool;
beforeAll(() => {
  if (hasPostgres) pool = makePool(server().url, { max: 12 });
});
afterAll(async () => {
  await pool?.end();
});
const key = EncryptionKey.generate();
const limit = 1024 * 1024;

const drop = async (adapter: StorageAdapter): Promise<void> => {
  await adapter.close();
  const { schema, table } = (adapter as EncryptedStorage).inner as PostgresStorage;
  await pool.query(`DROP TABLE IF EXISTS "${schema}"."${table}" CASCADE`);
  await pool.query(`DROP FUNCTION IF EXISTS "${schema}"."${table}_batch"`);
};

const suites = hasPostgres ? describe : describe.skip;
suites('encryptedStorage over postgresStorage', () => {
  runStorageConformance({
    name: 'encryptedStorage(postgresStorage)',
    describe,
    it,
    fc,
    create: () => encryptedStorage(postgresStorage({ pool, table: freshTable(), maxValueBytes: limit }), { keys: key }),
    destroy: drop,
    reopen: (closed) =>
      encryptedStorage(
        postgresStorage({ pool, table: ((closed as EncryptedStorage).inner as PostgresStorage).table, maxValueBytes: limit }),
        {
          keys: key,
        },
      ),
    capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes: limit - 40, versionsPerWrite: true },
    timeoutMs: 120_000,
    nestedKeys: true,
    concurrency: 8,
    propertyRuns: 10,
  });
});
