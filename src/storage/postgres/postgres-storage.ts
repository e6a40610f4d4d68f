import { CheckpointError } from '../../model/errors.js';
import type { BatchOperation, BatchOutcome, DeleteOptions, PutOptions, PutResult, StorageAdapter, StorageEntry, StoredObject } from '../adapter.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey, assertPrefix } from '../keys.js';
import { createScrubber } from '../github/secrets.js';
import { createOwnPool, type PostgresPool, type PostgresQueryResult } from './driver.js';
import { toStoreError } from './errors.js';
import { keyOf, orderKey, prefixRange } from './order-key.js';
import { CONFLICT_SQLSTATE, SCHEMA_MARKER, storeSql } from './sql.js';

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

/** Counters of a {@link PostgresStorage}. */
export interface PostgresStorageStats {
  /** Statements sent to the server, setup included: one per get, put, delete and batch, one per list page. */
  readonly roundTrips: number;
}

/** A {@link StorageAdapter} over one PostgreSQL table. */
export interface PostgresStorage extends StorageAdapter {
  readonly schema: string;
  readonly table: string;
  /** Creates or upgrades the table, its version sequence and its batch function. Idempotent; safe to run from many processes at once. */
  migrate(): Promise<void>;
  /** The DDL `migrate()` runs, in order (for DBAs who apply schema changes themselves). */
  migrationSql(): readonly string[];
  stats(): PostgresStorageStats;
  /** Always present: every batch is one transaction in one round trip. */
  batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]>;
}

interface ObjectRow {
  value: Buffer;
  version: string;
}
interface ListRow {
  key_order: Buffer;
  version: string;
  size: number;
}
interface BatchRow {
  op: number;
  version: string | null;
  existed: boolean | null;
}

const MAX_BIGINT = 9223372036854775807n;
/** A version this store could have issued (a positive bigint in canonical form), or undefined: then no stored row can have it. */
function versionParam(version: string): string | undefined {
  if (!/^[1-9][0-9]{0,18}$/.test(version) || BigInt(version) > MAX_BIGINT) return undefined;
  return version;
}

const conflict = (key: string, why: string): CheckpointError =>
  new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });

function config(message: string, option: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', message, { details: { option } });
}

function positiveInt(value: unknown, name: string, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) throw config(`${name} must be an integer from 1 to ${max}`, name);
  return value;
}

/**
 * A store in one PostgreSQL table: keys and bytes, a version from a sequence on every write,
 * listing in code-unit order from the primary-key index, conditional writes checked in the
 * statement that writes, and atomic batches in one round trip (a PL/pgSQL function, one
 * transaction). Conditions hold across processes and machines (`crossProcessConditional`),
 * so the writer's run lock works between hosts.
 *
 * @example
 * ```ts
 * import { createWriter } from 'savepoint';
 * import { postgresStorage } from 'savepoint/postgres';
 *
 * const storage = postgresStorage({ connectionString: process.env.DATABASE_URL! });
 * const writer = createWriter({ storage, profile, runId: 'run-1' });
 * ```
 */
export function postgresStorage(options: PostgresStorageOptions): PostgresStorage {
  if (!options || typeof options !== 'object') throw config('postgresStorage needs options: { pool } or { connectionString }', 'options');
  const { pool: givenPool, connectionString } = options;
  if ((givenPool === undefined) === (connectionString === undefined)) throw config('postgresStorage needs exactly one of pool and connectionString', 'pool');
  if (givenPool !== undefined && (typeof givenPool !== 'object' || typeof givenPool.query !== 'function' || typeof givenPool.connect !== 'function')) {
    throw config('pool must be a node-postgres Pool (with query() and connect())', 'pool');
  }
  if (connectionString !== undefined && (typeof connectionString !== 'string' || connectionString === '')) throw config('connectionString must be a non-empty string', 'connectionString');
  const schema = options.schema ?? 'public';
  const table = options.table ?? 'savepoint_objects';
  const sql = storeSql(schema, table);
  const maxValueBytes = positiveInt(options.maxValueBytes, 'maxValueBytes', POSTGRES_MAX_VALUE_BYTES, POSTGRES_DEFAULT_MAX_VALUE_BYTES);
  const poolSize = positiveInt(options.poolSize, 'poolSize', 1000, 10);
  const connectionTimeoutMs = positiveInt(options.connectionTimeoutMs, 'connectionTimeoutMs', 3_600_000, 10_000);
  const statementTimeoutMs = positiveInt(options.statementTimeoutMs, 'statementTimeoutMs', 3_600_000, 30_000);
  const pageSize = positiveInt(options.listPageSize, 'listPageSize', 100_000, 1000);
  if (options.autoMigrate !== undefined && typeof options.autoMigrate !== 'boolean') throw config('autoMigrate must be a boolean', 'autoMigrate');
  const autoMigrate = options.autoMigrate ?? true;

  const scrubber = createScrubber();
  if (connectionString) {
    scrubber.remember(connectionString);
    try {
      const password = decodeURIComponent(new URL(connectionString).password);
      if (password) scrubber.remember(password);
    } catch {
      // not a URL (key=value form): the whole string is remembered above
    }
  }

  let closed = false;
  let roundTrips = 0;
  let poolPromise: Promise<PostgresPool> | undefined;
  let ready: Promise<PostgresPool> | undefined;

  const getPool = (): Promise<PostgresPool> =>
    (poolPromise ??= givenPool
      ? Promise.resolve(givenPool)
      : createOwnPool({ connectionString: connectionString!, max: poolSize, connectionTimeoutMillis: connectionTimeoutMs, statementTimeoutMs }));

  const run = async <R>(p: PostgresPool, text: string, values: unknown[], during: string, key?: string): Promise<PostgresQueryResult<R>> => {
    roundTrips++;
    try {
      return await p.query<R>(text, values);
    } catch (err) {
      throw toStoreError(err, during, scrubber, key === undefined ? {} : { key });
    }
  };

  const migrateNow = async (): Promise<void> => {
    const p = await getPool();
    let client;
    try {
      client = await p.connect();
    } catch (err) {
      throw toStoreError(err, 'migrate', scrubber);
    }
    let failed: unknown;
    try {
      roundTrips++;
      await client.query('BEGIN');
      // One lock for every savepoint store: concurrent first uses (even of different tables in
      // one schema) would otherwise race in CREATE SCHEMA / CREATE TABLE IF NOT EXISTS.
      roundTrips++;
      await client.query("SELECT pg_advisory_xact_lock(hashtext('savepoint.migrate'))");
      for (const statement of sql.migrate) {
        roundTrips++;
        await client.query(statement);
      }
      roundTrips++;
      await client.query('COMMIT');
    } catch (err) {
      failed = err;
      await client.query('ROLLBACK').catch(() => undefined);
      throw toStoreError(err, 'migrate', scrubber);
    } finally {
      client.release(failed instanceof Error ? failed : undefined);
    }
  };

  /**
   * Runs one public call: refuses it after close(), and tracks it so that close() lets calls
   * already in flight finish before it ends the pool.
   */
  const inflight = new Set<Promise<unknown>>();
  const guard = <T>(body: () => Promise<T>): Promise<T> => {
    if (closed) return Promise.reject(new CheckpointError('checkpoint_closed', `postgres storage ${sql.table} is closed`));
    const p = body();
    inflight.add(p);
    const forget = (): void => void inflight.delete(p);
    p.then(forget, forget);
    return p;
  };

  /** The pool, once the table is known to exist at the current layout (checked once per store). */
  const pool = (): Promise<PostgresPool> => {
    ready ??= (async () => {
      const p = await getPool();
      const marker = await run<{ marker: string | null }>(p, sql.readMarker, [sql.table], 'setup');
      if (marker.rows[0]?.marker !== SCHEMA_MARKER) {
        if (!autoMigrate) throw config(`table ${sql.table} is missing or at another layout: run migrate() (autoMigrate is false)`, 'autoMigrate');
        await migrateNow();
      }
      return p;
    })().catch((err: unknown) => {
      ready = undefined; // a failed setup (server down) is tried again by the next call
      throw err;
    });
    return ready;
  };

  const checkSize = (key: string, bytes: unknown): void => {
    if (!(bytes instanceof Uint8Array)) throw new CheckpointError('checkpoint_config_invalid', `value of ${key} must be a Uint8Array`, { details: { key } });
    if (bytes.length > maxValueBytes) {
      throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${maxValueBytes}-byte limit`, {
        details: { key, size: bytes.length, limit: maxValueBytes },
      });
    }
  };

  return {
    name: 'postgres',
    schema,
    table,
    capabilities: { atomicBatch: true, crossProcessConditional: true, maxValueBytes },
    migrate: () => guard(migrateNow),
    migrationSql: () => [...sql.migrate],
    stats: () => ({ roundTrips }),

    get: (key: string): Promise<StoredObject | undefined> => guard(async () => {
      assertKey(key);
      const res = await run<ObjectRow>(await pool(), sql.get, [orderKey(key)], 'get', key);
      const row = res.rows[0];
      return row ? { bytes: new Uint8Array(row.value), version: row.version } : undefined;
    }),

    put: (key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> => guard(async () => {
      assertKey(key);
      checkSize(key, bytes);
      const params = [orderKey(key), key, Buffer.from(bytes)]; // copied now: the caller may reuse its buffer
      const p = await pool();
      if (opts.ifVersion !== undefined) {
        const v = typeof opts.ifVersion === 'string' && !opts.ifAbsent ? versionParam(opts.ifVersion) : undefined;
        if (v === undefined) throw conflict(key, 'version does not match');
        const res = await run<{ version: string }>(p, sql.putIfVersion, [...params, v], 'put', key);
        if (!res.rows[0]) throw conflict(key, 'version changed or key is gone');
        return { version: res.rows[0].version };
      }
      if (opts.ifAbsent) {
        const res = await run<{ version: string }>(p, sql.putIfAbsent, params, 'put', key);
        if (!res.rows[0]) throw conflict(key, 'key exists');
        return { version: res.rows[0].version };
      }
      const res = await run<{ version: string }>(p, sql.putAny, params, 'put', key);
      return { version: res.rows[0]!.version };
    }),

    delete: (key: string, opts: DeleteOptions = {}): Promise<boolean> => guard(async () => {
      assertKey(key);
      const p = await pool();
      if (opts.ifVersion !== undefined) {
        const v = typeof opts.ifVersion === 'string' ? versionParam(opts.ifVersion) : undefined;
        if (v === undefined) throw conflict(key, 'version does not match');
        const res = await run(p, sql.deleteIfVersion, [orderKey(key), v], 'delete', key);
        if (res.rows.length === 0) throw conflict(key, 'version changed or key is gone');
        return true;
      }
      const res = await run(p, sql.deleteAny, [orderKey(key)], 'delete', key);
      return res.rows.length > 0;
    }),

    async *list(prefix: string): AsyncIterable<StorageEntry> {
      if (closed) throw new CheckpointError('checkpoint_closed', `postgres storage ${sql.table} is closed`);
      assertPrefix(prefix);
      const p = await guard(pool);
      const { lower, upper } = prefixRange(prefix);
      let from = lower;
      for (;;) {
        if (closed) throw new CheckpointError('checkpoint_closed', `postgres storage ${sql.table} is closed`);
        const res = upper
          ? await run<ListRow>(p, sql.listRange, [from, upper, pageSize], 'list')
          : await run<ListRow>(p, sql.listFrom, [from, pageSize], 'list');
        for (const row of res.rows) yield { key: keyOf(row.key_order), version: row.version, size: Number(row.size) };
        if (res.rows.length < pageSize) return;
        // The smallest stored form after the last row's: it, followed by a zero byte.
        from = Buffer.concat([res.rows[res.rows.length - 1]!.key_order, Buffer.of(0)]);
      }
    },

    batch: (operations: readonly BatchOperation[]): Promise<BatchOutcome[]> => guard(async () => {
      assertBatchOperations(operations, (op) => {
        if (op.type === 'put') checkSize(op.key, op.bytes);
      });
      if (operations.length === 0) return [];
      const ifAbsentOf = (op: BatchOperation): boolean => op.type !== 'delete' && op.ifAbsent === true;
      const versions: (string | null)[] = [];
      for (const op of operations) {
        if (op.ifVersion === undefined) {
          versions.push(null);
          continue;
        }
        const v = typeof op.ifVersion === 'string' && !ifAbsentOf(op) ? versionParam(op.ifVersion) : undefined;
        // A version this store never issued cannot match: the batch fails before reaching the server.
        if (v === undefined) throw conflict(op.key, 'version does not match');
        versions.push(v);
      }
      // Copied now, before any await: the caller may reuse its buffers.
      const values = operations.map((op) => (op.type === 'put' ? Buffer.from(op.bytes) : null));
      const p = await pool();
      let res: PostgresQueryResult<BatchRow>;
      roundTrips++;
      try {
        res = await p.query<BatchRow>(sql.batch, [
          operations.map((op) => op.type),
          operations.map((op) => orderKey(op.key)),
          operations.map((op) => op.key),
          values,
          versions,
          operations.map(ifAbsentOf),
        ]);
      } catch (err) {
        const e = err as { code?: unknown; message?: unknown };
        if (e?.code === CONFLICT_SQLSTATE) {
          const op = operations[Number(e.message) - 1];
          if (op) throw conflict(op.key, op.type === 'check' ? 'checked condition does not hold' : 'key exists, or its version changed');
        }
        throw toStoreError(err, 'batch', scrubber);
      }
      const rows = [...res.rows].sort((a, b) => a.op - b.op);
      return operations.map((op, i): BatchOutcome => {
        const row = rows[i];
        if (op.type === 'put') return { type: 'put', key: op.key, version: row!.version! };
        if (op.type === 'delete') return { type: 'delete', key: op.key, existed: row!.existed === true };
        return { type: 'check', key: op.key };
      });
    }),

    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...inflight]);
      if (!givenPool && poolPromise) {
        const p = await poolPromise.catch(() => undefined);
        await p?.end().catch(() => undefined);
      }
    },
  };
}
