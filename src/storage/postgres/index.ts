/**
 * The PostgreSQL storage adapter (`savepoint/postgres`). One file per concept: `sql.ts` (every
 * statement and the DDL), `order-key.ts` (keys in code-unit order), `driver.ts` (the pool and
 * the lazily loaded `pg`), `errors.ts` (driver errors → reason codes), and the factory in
 * `postgres-storage.ts`.
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
