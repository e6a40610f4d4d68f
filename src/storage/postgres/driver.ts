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

/** `pg` as loaded, shared by every store of this process; reset when loading failed, so a later store tries again. */
let loadingPg: Promise<PgModule> | undefined;

/**
 * Loads `pg` (an optional peer dependency of `savepoint/postgres`), once per process. Dynamic,
 * so importing the subpath never fails and a store on the caller's pool needs nothing.
 */
function loadPg(): Promise<PgModule> {
  loadingPg ??= import('pg').then(
    (loaded) => {
      const mod = loaded as unknown as PgModule & { default?: PgModule };
      return mod.Pool ? mod : (mod.default as PgModule);
    },
    (err: unknown) => {
      loadingPg = undefined;
      throw err;
    },
  );
  return loadingPg;
}

/**
 * Starts loading `pg` when a store that will make its own pool is created, rather than at its
 * first call: a service's first request does not wait for the module (nor a fresh replica's
 * first turn). A failure is not reported here: the first call reports it ({@link createOwnPool}).
 */
export function preloadPg(): void {
  loadPg().catch(() => undefined);
}

/** Makes the store's own pool; `checkpoint_config_invalid` saying `npm i pg` when `pg` cannot be loaded. */
export async function createOwnPool(settings: OwnPoolSettings): Promise<PostgresPool> {
  let mod: PgModule;
  try {
    mod = await loadPg();
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
