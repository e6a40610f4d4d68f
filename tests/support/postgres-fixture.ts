/**
 * One PostgreSQL server per test file, started in `beforeAll` and removed in `afterAll`, plus
 * helpers to make stores on fresh tables. Importing this file registers those hooks.
 */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { postgresAvailability, startPostgres, type PostgresServer, type StartOptions } from './postgres-server.js';

export const availability = postgresAvailability();
/** `describe` or `describe.skip`, depending on whether PostgreSQL is installed (CI: always there). */
export const hasPostgres = 'bin' in availability;

let current: PostgresServer | undefined;
let tableCounter = 0;

/** Registers the per-file server. Call once at the top level of a test file. */
export function usePostgres(options: StartOptions = {}): { server: () => PostgresServer } {
  beforeAll(async () => {
    if ('bin' in availability) current = await startPostgres(availability.bin, options);
  }, 120_000);
  afterAll(async () => {
    await current?.destroy();
    current = undefined;
  }, 60_000);
  return {
    server: () => {
      if (!current) throw new Error('postgres server not started');
      return current;
    },
  };
}

/** A fresh table name, unique within the process. */
export function freshTable(label = 't'): string {
  return `${label}_${process.pid}_${++tableCounter}`;
}

/** A node-postgres pool on the server, with the 'error' listener every long-lived pool needs. */
export function makePool(url: string, config: pg.PoolConfig = {}): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max: 8, ...config });
  pool.on('error', () => undefined);
  return pool;
}

/** `pool` with the text of every statement it is sent recorded (in `texts`). */
export function recordingPool(pool: pg.Pool): { pool: pg.Pool; texts: string[] } {
  const texts: string[] = [];
  const wrapped = new Proxy(pool, {
    get(target, prop, receiver) {
      if (prop !== 'query') return Reflect.get(target, prop, receiver) as unknown;
      return (config: string | { text: string }, values?: unknown[]) => {
        texts.push(typeof config === 'string' ? config : config.text);
        return (target.query as (c: unknown, v?: unknown[]) => Promise<unknown>)(config, values);
      };
    },
  });
  return { pool: wrapped, texts };
}

/**
 * Fills the store's `table` (in `public`, migrated) with 20,000 rows of other keys and analyzes it:
 * a table of many threads, as a service's is, where the planner's choices show (on a handful of
 * rows any plan is cheap).
 */
export async function fillServiceSized(pool: pg.Pool, table: string): Promise<void> {
  await pool.query(
    `INSERT INTO "public"."${table}" (key_order, key, version, value) SELECT convert_to('other/' || i, 'UTF8'), 'other/' || i, i, '\\x00' FROM generate_series(1, 20000) AS i`,
  );
  await pool.query(`ANALYZE "public"."${table}"`);
}
