/**
 * postgresStorage's group commit: batches that arrive while its batch statements are out go
 * together in the next statement (one transaction, one WAL flush), each applied or refused on
 * its own, as if sent alone.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, type BatchOperation } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
let pool: pg.Pool;
beforeAll(() => {
  if (hasPostgres) pool = makePool(server().url, { max: 4 });
});
afterAll(async () => {
  await pool?.end();
});

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

/** One caller's batch: a create of its own key plus a write of a shared key that may fail its condition. */
interface Caller {
  readonly own: string;
  /** The condition on `taken` (stored before): none, ifAbsent (fails), or a version (stale fails, current holds). */
  readonly on: 'none' | 'absent' | 'stale' | 'current' | 'check-stale';
}

const caller = fc.constantFrom<Caller['on']>('none', 'absent', 'stale', 'current', 'check-stale');

(hasPostgres ? describe : describe.skip)('postgresStorage group commit', () => {
  it('property: concurrent batches sent together are each applied whole or refused whole, with the conflict naming their own key', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(caller, { minLength: 4, maxLength: 40 }), async (conditions) => {
        const storage = postgresStorage({ pool, table: freshTable('group') });
        try {
          const callers = conditions.map((on, i): Caller => ({ own: `own/${i}`, on }));
          // One shared key per caller, stored first: its version is the "current" one.
          const versions = await Promise.all(callers.map((_, i) => storage.put(`taken/${i}`, utf8('before'))));
          const before = storage.stats().roundTrips;
          const results = await Promise.allSettled(
            callers.map((c, i) => {
              const ops: BatchOperation[] = [{ type: 'put', key: c.own, bytes: utf8(`mine ${i}`), ifAbsent: true }];
              const taken = `taken/${i}`;
              if (c.on === 'none') ops.push({ type: 'put', key: taken, bytes: utf8(`after ${i}`) });
              if (c.on === 'absent') ops.push({ type: 'put', key: taken, bytes: utf8(`after ${i}`), ifAbsent: true });
              if (c.on === 'stale') ops.push({ type: 'put', key: taken, bytes: utf8(`after ${i}`), ifVersion: '9000000000' });
              if (c.on === 'current') ops.push({ type: 'put', key: taken, bytes: utf8(`after ${i}`), ifVersion: versions[i]!.version });
              if (c.on === 'check-stale') ops.push({ type: 'check', key: taken, ifVersion: '9000000000' });
              return storage.batch(ops);
            }),
          );
          // Fewer statements than batches: those that waited went together.
          expect(storage.stats().roundTrips - before).toBeLessThan(callers.length);
          for (const [i, c] of callers.entries()) {
            const result = results[i]!;
            const fails = c.on === 'absent' || c.on === 'stale' || c.on === 'check-stale';
            const own = await storage.get(c.own);
            const taken = await storage.get(`taken/${i}`);
            if (fails) {
              expect(result.status).toBe('rejected');
              const reason = (result as PromiseRejectedResult).reason as unknown;
              expect(isCheckpointError(reason, 'checkpoint_conflict')).toBe(true);
              expect((reason as { details?: { key?: string } }).details?.key).toBe(`taken/${i}`);
              expect(own).toBeUndefined();
              expect(text(taken?.bytes)).toBe('before');
            } else {
              expect(result.status).toBe('fulfilled');
              const outcomes = (result as PromiseFulfilledResult<Awaited<ReturnType<typeof storage.batch>>>).value;
              expect(outcomes.map((o) => o.key)).toEqual([c.own, `taken/${i}`]);
              expect(text(own?.bytes)).toBe(`mine ${i}`);
              expect(own?.version).toBe((outcomes[0] as { version: string }).version);
              expect(text(taken?.bytes)).toBe(`after ${i}`);
            }
          }
        } finally {
          await storage.close();
        }
      }),
      { numRuns: 15 },
    );
  });

  it('a lone batch is sent at once, in one statement', async () => {
    const storage = postgresStorage({ pool, table: freshTable('lone') });
    try {
      await storage.get('warm'); // the first call checks the table
      const before = storage.stats().roundTrips;
      await storage.batch([{ type: 'put', key: 'a', bytes: utf8('a') }]);
      await storage.batch([{ type: 'put', key: 'b', bytes: utf8('b') }]);
      expect(storage.stats().roundTrips - before).toBe(2);
    } finally {
      await storage.close();
    }
  });
});
