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
