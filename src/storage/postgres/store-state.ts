import { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { createScrubber, type Scrubber } from '../github/secrets.js';
import { createOwnPool, type PostgresPool, type PostgresQueryResult } from './driver.js';
import { toStoreError } from './errors.js';
import { promiseOf } from '../promise-of.js';
import { queryNamed } from './named-statement.js';
import type { PostgresSettings } from './options.js';
import type { PutSql } from './sql.js';

/** A caller's batch checked and ready for a statement (see batch.ts): its operations and their parameters. */
export interface PlannedBatch {
  readonly operations: readonly BatchOperation[];
  readonly versions: readonly (string | null)[];
  readonly values: readonly (Buffer | null)[];
}

/** A batch waiting for its statement while every write slot is taken: the batch and its promise's ends. */
export interface QueuedBatch extends PlannedBatch {
  readonly resolve: (outcomes: BatchOutcome[]) => void;
  readonly reject: (err: unknown) => void;
}

/** Everything one postgresStorage instance keeps between calls. */
export interface PostgresStoreState {
  /** The checked options, defaults filled in. */
  readonly settings: PostgresSettings;
  /** Removes the connection string and its password from every error the store raises. */
  readonly scrubber: Scrubber;
  /** `close()` was called: every new call is refused with `checkpoint_closed`. */
  closed: boolean;
  /** Statements sent to the server so far (`stats()`). */
  roundTrips: number;
  /** The pool (the caller's, or the store's own once made); made at first use. */
  poolPromise: Promise<PostgresPool> | undefined;
  /** The pool once the table is known to be at the current layout; reset when that setup fails, so the next call tries again. */
  ready: Promise<PostgresPool> | undefined;
  /** The pool once that check passed: a call after it needs no promise to reach the pool. */
  checkedPool: PostgresPool | undefined;
  /** What that check found once it passed: the table at the current layout, or one it created or upgraded (reads made beside it then run again: migrate.ts, `readChecked`). */
  checked: 'current' | 'migrated' | undefined;
  /**
   * The statements that write values, by the table's layout: those that send each value's metadata
   * where the metadata column is written by them, else those that leave it to the server (a table
   * an older version made, and this store may not migrate). Set by the first-use check.
   */
  puts: PutSql;
  /** Calls in flight: `close()` lets them finish before it ends the pool. */
  readonly inflight: Set<Promise<unknown>>;
  /** Batches waiting for a statement, oldest first (see batch.ts). */
  readonly batchQueue: QueuedBatch[];
  /** Write statements (puts and batches) sent and not answered yet. */
  writeStatements: number;
  /** Write statements kept in flight at once before callers' writes wait and go together (see batch.ts). */
  readonly writeSlots: number;
}

/** node-postgres's default pool size, assumed for a caller's pool that does not say its own. */
const DEFAULT_POOL_MAX = 10;

/**
 * Write statements one store keeps in flight: as many as its pool has connections, less two
 * left for reads, and at least two. Below that a write is sent at once (it would find a
 * connection free, and PostgreSQL merges the WAL flushes of commits that wait together); beyond
 * it a write would wait for a connection anyway, so it waits in the store's queue instead and
 * goes with the others waiting, in one statement.
 */
function writeSlotsOf(settings: PostgresSettings): number {
  const given = (settings.givenPool as { options?: { max?: unknown } } | undefined)?.options?.max;
  const max =
    settings.givenPool === undefined
      ? settings.poolSize
      : Number.isInteger(given) && (given as number) > 0
        ? (given as number)
        : DEFAULT_POOL_MAX;
  return Math.max(2, max - 2);
}

/** A scrubber that knows the connection string and its password. */
function secretScrubber(connectionString: string | undefined): Scrubber {
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
  return scrubber;
}

/** The state of a store that has not reached its server yet. */
export function newStoreState(settings: PostgresSettings): PostgresStoreState {
  return {
    settings,
    scrubber: secretScrubber(settings.connectionString),
    closed: false,
    roundTrips: 0,
    poolPromise: undefined,
    ready: undefined,
    checked: undefined,
    checkedPool: undefined,
    puts: settings.sql.puts,
    inflight: new Set(),
    batchQueue: [],
    writeStatements: 0,
    writeSlots: writeSlotsOf(settings),
  };
}

export function closedError(state: PostgresStoreState): CheckpointError {
  return new CheckpointError('checkpoint_closed', `postgres storage ${state.settings.sql.table} is closed`);
}

/** The caller's pool, or the store's own (made once, at first use). */
export function getPool(state: PostgresStoreState): Promise<PostgresPool> {
  const s = state.settings;
  return (state.poolPromise ??= s.givenPool
    ? Promise.resolve(s.givenPool)
    : createOwnPool({
        connectionString: s.connectionString!,
        max: s.poolSize,
        connectionTimeoutMillis: s.connectionTimeoutMs,
        statementTimeoutMs: s.statementTimeoutMs,
      }));
}

/** One statement (one round trip, by name: see named-statement.ts), its failure as the store's error. */
export function run<R>(
  state: PostgresStoreState,
  p: PostgresPool,
  text: string,
  values: unknown[],
  during: string,
  key?: string,
): Promise<PostgresQueryResult<R>> {
  state.roundTrips++;
  return asStoreErrors(state, () => queryNamed<R>(state, p, text, values), during, key);
}

/**
 * One statement sent unnamed, so planned for its own values each time: a range of keys. Sent by
 * name, PostgreSQL switches such a statement to a generic plan after five calls, one that
 * cannot see how narrow the range is; on a table holding long threads that plan read and sorted
 * far more rows than a page, and 64 threads' supersteps waited up to a second behind it.
 */
export function runPlannedEach<R>(
  state: PostgresStoreState,
  p: PostgresPool,
  text: string,
  values: unknown[],
  during: string,
): Promise<PostgresQueryResult<R>> {
  state.roundTrips++;
  return asStoreErrors(state, () => p.query<R>(text, values), during);
}

/**
 * What `send` answers, its failure (thrown or rejected) as the store's error. A `then` on the
 * driver's promise rather than an async function around it: one promise a statement, not two.
 */
function asStoreErrors<R>(
  state: PostgresStoreState,
  send: () => Promise<PostgresQueryResult<R>>,
  during: string,
  key?: string,
): Promise<PostgresQueryResult<R>> {
  return promiseOf(send).then(undefined, (err: unknown) => {
    throw toStoreError(err, during, state.scrubber, key === undefined ? {} : { key });
  });
}

/**
 * Runs one public call: refuses it after close(), and tracks it so that close() lets calls
 * already in flight finish before it ends the pool.
 */
export function guard<T>(state: PostgresStoreState, body: () => Promise<T>): Promise<T> {
  if (state.closed) return Promise.reject(closedError(state));
  let p: Promise<T>;
  try {
    p = body();
  } catch (err) {
    return Promise.reject(err); // a call refused before it reached the server: never in flight
  }
  state.inflight.add(p);
  const forget = (): void => void state.inflight.delete(p);
  p.then(forget, forget);
  return p;
}

/** Refuses new calls, lets those in flight finish, and ends the pool if the store made it. */
export async function closeStore(state: PostgresStoreState): Promise<void> {
  if (state.closed) return;
  state.closed = true;
  await Promise.allSettled([...state.inflight]);
  if (!state.settings.givenPool && state.poolPromise) {
    const p = await state.poolPromise.catch(() => undefined);
    await p?.end().catch(() => undefined);
  }
}
