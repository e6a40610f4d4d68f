import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresQueryResult } from './driver.js';
import type { PostgresStoreState } from './store-state.js';

/*
 * A statement sent by name (a prepared statement): each connection parses and plans it once and
 * keeps it, where an unnamed statement is parsed again on every call. The store's point
 * statements go this way (the linked read's parse cost a few times its execution); its range
 * listings do not (store-state.ts, `runPlannedEach`: a prepared range scan turns generic).
 */

/**
 * node-postgres's `query` with a query config: `name` makes the connection keep the statement.
 * A config, not a `Query` made here: pg copies a config on every call (~2 µs), but a `Query`
 * handed to a pool is answered only by pg 8.19 and later (older clients, and pg-native's, drop
 * the pool's callback for it: the statement never settles and its connection is never released).
 */
interface NamingPool {
  query<R>(config: { name: string; text: string; values: unknown[] }): Promise<PostgresQueryResult<R>>;
}

/** Stores that stopped naming statements: their server refused one (PgBouncer in transaction mode, before 1.21). */
const unnamed = new WeakSet<PostgresStoreState>();
/** Statement names by text: the table is in the text, so two stores' statements never share a name. */
const names = new Map<string, string>();

/** SQLSTATEs of a prepared statement the server does not hold or already holds: a pooler between us and it. */
const LOST_STATEMENT = new Set(['26000', '42P05']);

/**
 * Whether the store sends named statements: on its own pool, or a caller's node-postgres pool
 * (it has pg's `Client`); another pool of the same shape may take only `(text, values)`.
 */
function sendsNamed(state: PostgresStoreState): boolean {
  if (unnamed.has(state)) return false;
  const given = state.settings.givenPool as (PostgresPool & { Client?: unknown }) | undefined;
  return given === undefined || typeof given.Client === 'function';
}

function nameOf(text: string): string {
  let name = names.get(text);
  if (name === undefined) {
    name = `savepoint_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * Runs `text` by name when the pool can (see {@link sendsNamed}), else as an unnamed statement. A
 * server that loses named statements (a transaction-mode pooler) makes this store send them
 * unnamed from then on. Errors are the driver's: the caller maps them.
 */
export function queryNamed<R>(
  state: PostgresStoreState,
  p: PostgresPool,
  text: string,
  values: unknown[],
): Promise<PostgresQueryResult<R>> {
  if (!sendsNamed(state)) return p.query<R>(text, values);
  return (p as unknown as NamingPool).query<R>({ name: nameOf(text), text, values }).then(undefined, (err: unknown) => {
    const code = (err as { code?: unknown })?.code;
    if (typeof code !== 'string' || !LOST_STATEMENT.has(code)) throw err;
    unnamed.add(state);
    return p.query<R>(text, values);
  });
}
