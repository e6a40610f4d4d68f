import { CheckpointError } from '../../contract/errors.js';

/** A query result as node-postgres returns it. */
export interface PostgresQueryResult<R> {
  readonly rows: R[];
  readonly rowCount: number | null;
}

/** A connection checked out of a pool (node-postgres `PoolClient`). */
export interface PostgresClient {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PostgresQueryResult<R>>;
  release(err?: Error | boolean): void;
}

/**
 * The part of a node-postgres `Pool` the store uses. A `pg.Pool` fits; so does any pool
 * with the same `query`/`connect` shape. Typed structurally so that `savepoint/postgres`'s
 * types do not need `@types/pg`.
 */
export interface PostgresPool {
  query<R = Record<string, unknown>>(text: string, values?: unknown[]): Promise<PostgresQueryResult<R>>;
  connect(): Promise<PostgresClient>;
  end(): Promise<void>;
}

/** Pool settings used when the store makes its own pool from a connection string. */
export interface OwnPoolSettings {
  readonly connectionString: string;
  readonly max: number;
  readonly connectionTimeoutMillis: number;
  readonly statementTimeoutMs: number;
}

interface PgModule {
  Pool: new (config: Record<string, unknown>) => PostgresPool & { on(event: 'error', listener: (err: Error) => void): unknown };
}

/**
 * Loads `pg` (an optional peer dependency of `savepoint/postgres`) only when a store makes
 * its own pool, so importing the subpath never fails and a caller-made pool needs nothing.
 */
export async function createOwnPool(settings: OwnPoolSettings): Promise<PostgresPool> {
  let mod: PgModule;
  try {
    const loaded = (await import('pg')) as unknown as PgModule & { default?: PgModule };
    mod = loaded.Pool ? loaded : (loaded.default as PgModule);
  } catch {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      'postgresStorage({ connectionString }) needs the "pg" package: run `npm i pg` (or pass your own pool)',
      {
        details: { missing: 'pg' },
      },
    );
  }
  const pool = new mod.Pool({
    connectionString: settings.connectionString,
    max: settings.max,
    connectionTimeoutMillis: settings.connectionTimeoutMillis,
    statement_timeout: settings.statementTimeoutMs,
    keepAlive: true,
    application_name: 'savepoint',
  });
  // An idle connection the server drops (restart, failover) emits 'error' on the pool; without
  // a listener Node would crash the process. The next query reports the outage instead.
  pool.on('error', () => undefined);
  return pool;
}
