import { CheckpointError } from '../../contract/errors.js';
import type { PostgresPool } from './driver.js';
import { storeSql, type StoreSql } from './sql.js';

/** Default and ceiling of `maxValueBytes`. A `bytea` holds up to 1 GB, but the driver reads values as hex text (twice the size), which must stay under the server's 1 GB message limit. */
export const POSTGRES_DEFAULT_MAX_VALUE_BYTES = 64 * 1024 * 1024;
export const POSTGRES_MAX_VALUE_BYTES = 256 * 1024 * 1024;

/** Options of {@link postgresStorage}: a pool or a connection string, plus where the table lives. */
export interface PostgresStorageOptions {
  /**
   * Your node-postgres `Pool` (or one of the same shape). The store never ends it: you own it.
   * Give it an `'error'` listener, or an idle connection the server drops will crash the process.
   */
  readonly pool?: PostgresPool;
  /**
   * `postgres://user:password@host:port/db`: the store makes its own `pg.Pool` (needs the `pg`
   * package) and ends it on `close()`. Never echoed in an error or a log.
   */
  readonly connectionString?: string;
  /** Schema of the table; created on first use when missing. @default 'public' */
  readonly schema?: string;
  /** Table holding keys and values (plus `<table>_version_seq` and `<table>_batch()`). @default 'savepoint_objects' */
  readonly table?: string;
  /**
   * Create or upgrade the table at first use (safe when many processes start at once: the DDL
   * runs under an advisory lock). `false`: a DBA runs `migrate()` (or its SQL) beforehand and a
   * missing table fails with `checkpoint_config_invalid`.
   * @default true
   */
  readonly autoMigrate?: boolean;
  /** Largest value accepted, in bytes; larger puts fail with `checkpoint_too_large`. At most 256 MiB. @default 67108864 (64 MiB) */
  readonly maxValueBytes?: number;
  /** Connections of the pool made from `connectionString`. @default 10 */
  readonly poolSize?: number;
  /** Own pool: longest wait for a connection (a full pool answers `checkpoint_backpressure`, an unreachable server `checkpoint_storage_unavailable`). @default 10000 */
  readonly connectionTimeoutMs?: number;
  /** Own pool: the server's `statement_timeout` per statement (exceeded: `checkpoint_storage_unavailable`). @default 30000 */
  readonly statementTimeoutMs?: number;
  /** Rows fetched per `list()` round trip. @default 1000 */
  readonly listPageSize?: number;
}

/** A store's options once checked, with every default filled in; fixed for the store's life. */
export interface PostgresSettings {
  /** The caller's pool (never ended by the store), or undefined when the store makes its own from `connectionString`. */
  readonly givenPool: PostgresPool | undefined;
  readonly connectionString: string | undefined;
  readonly schema: string;
  readonly table: string;
  /** Every statement of this schema and table. */
  readonly sql: StoreSql;
  readonly maxValueBytes: number;
  readonly poolSize: number;
  readonly connectionTimeoutMs: number;
  readonly statementTimeoutMs: number;
  /** Rows per `list()` round trip. */
  readonly pageSize: number;
  readonly autoMigrate: boolean;
}

export function config(message: string, option: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', message, { details: { option } });
}

function positiveInt(value: unknown, name: string, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max)
    throw config(`${name} must be an integer from 1 to ${max}`, name);
  return value;
}

/** Checks the options (throwing `checkpoint_config_invalid`) and fills in the defaults. */
export function postgresSettings(options: PostgresStorageOptions): PostgresSettings {
  if (!options || typeof options !== 'object') throw config('postgresStorage needs options: { pool } or { connectionString }', 'options');
  const { pool: givenPool, connectionString } = options;
  if ((givenPool === undefined) === (connectionString === undefined))
    throw config('postgresStorage needs exactly one of pool and connectionString', 'pool');
  if (
    givenPool !== undefined &&
    (typeof givenPool !== 'object' || typeof givenPool.query !== 'function' || typeof givenPool.connect !== 'function')
  ) {
    throw config('pool must be a node-postgres Pool (with query() and connect())', 'pool');
  }
  if (connectionString !== undefined && (typeof connectionString !== 'string' || connectionString === ''))
    throw config('connectionString must be a non-empty string', 'connectionString');
  const schema = options.schema ?? 'public';
  const table = options.table ?? 'savepoint_objects';
  const sql = storeSql(schema, table);
  const maxValueBytes = positiveInt(options.maxValueBytes, 'maxValueBytes', POSTGRES_MAX_VALUE_BYTES, POSTGRES_DEFAULT_MAX_VALUE_BYTES);
  const poolSize = positiveInt(options.poolSize, 'poolSize', 1000, 10);
  const connectionTimeoutMs = positiveInt(options.connectionTimeoutMs, 'connectionTimeoutMs', 3_600_000, 10_000);
  const statementTimeoutMs = positiveInt(options.statementTimeoutMs, 'statementTimeoutMs', 3_600_000, 30_000);
  const pageSize = positiveInt(options.listPageSize, 'listPageSize', 100_000, 1000);
  if (options.autoMigrate !== undefined && typeof options.autoMigrate !== 'boolean')
    throw config('autoMigrate must be a boolean', 'autoMigrate');
  const autoMigrate = options.autoMigrate ?? true;
  return {
    givenPool,
    connectionString,
    schema,
    table,
    sql,
    maxValueBytes,
    poolSize,
    connectionTimeoutMs,
    statementTimeoutMs,
    pageSize,
    autoMigrate,
  };
}
