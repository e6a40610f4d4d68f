/**
 * postgresStorage's group commit: writes (batches and lone puts) that arrive while all its write
 * slots are taken go together in the next statement (one transaction, one WAL flush), each
 * applied or refused on its own, as if sent alone. While a slot is free, a write is sent at once.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, type BatchOperation } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
let pool: pg.Pool;
/** node-postgres's default size: eight write slots. */
let wide: pg.Pool;
beforeAll(() => {
  if (hasPostgres) pool = makePool(server().url, { max: 4 });
  if (hasPostgres) wide = makePool(server().url, { max: 10 });
});
afterAll(async () => {
  await pool?.end();
  await wide?.end();
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

  it('while write slots are free (a pool of 10: 8 slots), concurrent batches are each sent at once, none held back', async () => {
    const storage = postgresStorage({ pool: wide, table: freshTable('slots') });
    try {
      await storage.get('warm'); // the first call checks the table
      const before = storage.stats().roundTrips;
      await Promise.all(Array.from({ length: 8 }, (_, i) => storage.batch([{ type: 'put', key: `k/${i}`, bytes: utf8(`${i}`) }])));
      expect(storage.stats().roundTrips - before).toBe(8);
      // Beyond the slots, the writes waiting go together.
      const next = storage.stats().roundTrips;
      await Promise.all(Array.from({ length: 20 }, (_, i) => storage.batch([{ type: 'put', key: `m/${i}`, bytes: utf8(`${i}`) }])));
      expect(storage.stats().roundTrips - next).toBeLessThan(20);
    } finally {
      await storage.close();
    }
  });

  it('property: concurrent lone puts beyond the slots go with the waiting writes, each answered as if sent alone', async () => {
    type On = 'plain' | 'absent-new' | 'absent-taken' | 'current' | 'stale';
    const on = fc.constantFrom<On>('plain', 'absent-new', 'absent-taken', 'current', 'stale');
    await fc.assert(
      fc.asyncProperty(fc.array(on, { minLength: 4, maxLength: 30 }), async (conditions) => {
        const storage = postgresStorage({ pool, table: freshTable('puts') });
        try {
          const versions = await Promise.all(conditions.map((_, i) => storage.put(`taken/${i}`, utf8('before'))));
          const put = (c: On, i: number) => {
            const key = c === 'absent-new' ? `new/${i}` : `taken/${i}`;
            const bytes = utf8(`after ${i}`);
            if (c === 'plain') return storage.put(key, bytes);
            if (c === 'absent-new' || c === 'absent-taken') return storage.put(key, bytes, { ifAbsent: true });
            return storage.put(key, bytes, { ifVersion: c === 'current' ? versions[i]!.version : '9000000000' });
          };
          const before = storage.stats().roundTrips;
          const results = await Promise.allSettled(conditions.map(put));
          // Two slots on a pool of four: the puts beyond them waited, and went together.
          expect(storage.stats().roundTrips - before).toBeLessThan(conditions.length);
          for (const [i, c] of conditions.entries()) {
            const key = c === 'absent-new' ? `new/${i}` : `taken/${i}`;
            const stored = await storage.get(key);
            const result = results[i]!;
            if (c === 'absent-taken' || c === 'stale') {
              expect(result.status).toBe('rejected');
              const reason = (result as PromiseRejectedResult).reason as { message: string; details?: { key?: string } };
              expect(isCheckpointError(reason, 'checkpoint_conflict')).toBe(true);
              expect(reason.details?.key).toBe(key);
              // The same words as the same put sent alone.
              const alone = await put(c, i).then(
                () => undefined,
                (err: unknown) => err as { message: string },
              );
              expect(reason.message).toBe(alone?.message);
              expect(text(stored?.bytes)).toBe('before');
            } else {
              expect(result.status).toBe('fulfilled');
              expect((result as PromiseFulfilledResult<{ version: string }>).value.version).toBe(stored?.version);
              expect(text(stored?.bytes)).toBe(`after ${i}`);
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
