import { describe, expect, it } from 'vitest';
import { postgresStorage, type PostgresPool, type PostgresQueryResult } from '../../../src/storage/postgres/index.js';
import { METADATA_FUNCTION_MARKER } from '../../../src/storage/postgres/metadata-index.js';
import { SCHEMA_MARKER } from '../../../src/storage/postgres/sql.js';
import { promisesMadeBy } from '../../support/promises.js';

// What a superstep's two calls (a lone put, a two-put batch) cost the client between the driver
// and the caller, checked without a server: a pool of node-postgres's shape that answers at once.
// The caller resumes a fixed, small number of promises after the driver answers.

/** What each statement the store sends answers, by its text. */
function answer(text: string): Record<string, unknown>[] {
  if (text.includes('obj_description'))
    return [
      {
        marker: SCHEMA_MARKER,
        function_marker: METADATA_FUNCTION_MARKER,
        metadata_written: true,
        old_server: false,
        conflict_function: true,
      },
    ];
  if (text.includes(' AS first, s.version::text AS version'))
    return [
      { first: true, version: '11' },
      { first: false, version: '12' },
    ];
  return [{ version: '10' }];
}

/** A pool of node-postgres's shape (it has a client class) that answers every statement at once. */
function fakePool(sent: unknown[]): PostgresPool & { Client: unknown } {
  return {
    Client: class {},
    query: <R>(statement: unknown): Promise<PostgresQueryResult<R>> => {
      sent.push(statement);
      const text = typeof statement === 'string' ? statement : (statement as { text: string }).text;
      return Promise.resolve({ rows: answer(text) as R[], rowCount: 1 });
    },
    connect: () => Promise.reject(new Error('no connections')),
    end: async () => undefined,
  };
}

const bytes = new TextEncoder().encode('{"a":1}');

describe('postgresStorage statement cost on the client', () => {
  it('sends each named statement as a named query config', async () => {
    const sent: unknown[] = [];
    const storage = postgresStorage({ pool: fakePool(sent), table: 'cost' });
    await storage.put('t/w.json', bytes, { ifAbsent: true });
    await storage.batch([
      { type: 'put', key: 't/head.json', bytes, ifVersion: '10' },
      { type: 'put', key: 't/cp.json', bytes },
    ]);
    expect(sent).toHaveLength(3); // the first-use check, the put, the pair
    for (const s of sent) {
      expect(Object.getPrototypeOf(s)).toBe(Object.prototype);
      expect((s as { name?: string }).name).toMatch(/^savepoint_[0-9a-f]{24}$/);
    }
    await storage.close();
  });

  it('makes few promises for a lone put and a pair batch: no async layer around a statement, no queue entry for a batch sent at once', async () => {
    const storage = postgresStorage({ pool: fakePool([]), table: 'cost' });
    await storage.put('t/first.json', bytes); // the first-use check, once
    const put = await promisesMadeBy(() => storage.put('t/w.json', bytes, { ifAbsent: true }));
    const pair = await promisesMadeBy(() =>
      storage.batch([
        { type: 'put', key: 't/head.json', bytes, ifVersion: '10' },
        { type: 'put', key: 't/cp.json', bytes },
      ]),
    );
    // Counted with the fake driver's own promise and the count's `await`.
    expect(put).toBeLessThanOrEqual(8);
    expect(pair).toBeLessThanOrEqual(8);
    await storage.close();
  });
});
