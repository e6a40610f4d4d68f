/**
 * The PostgreSQL storage adapter (`savepoint/postgres`). One file per concept: `sql.ts` (every
 * statement and the DDL), `order-key.ts` (keys in code-unit order), `driver.ts` (the pool and
 * the lazily loaded `pg`), `errors.ts` (driver errors → reason codes), `options.ts` (checking
 * the options), `store-state.ts` (what one store keeps between calls: pool, counters, calls in
 * flight), `migrate.ts` (creating the table, once per store), `checks.ts` (versions and sizes
 * checked before a write is sent), `objects.ts` (get, put, delete), `list.ts`, `batch.ts`, and
 * the factory that assembles them in `postgres-storage.ts`.
 */
export {
  postgresStorage,
  POSTGRES_DEFAULT_MAX_VALUE_BYTES,
  POSTGRES_MAX_VALUE_BYTES,
  type PostgresStorage,
  type PostgresStorageOptions,
  type PostgresStorageStats,
} from './postgres-storage.js';
export type { PostgresPool, PostgresClient, PostgresQueryResult } from './driver.js';
