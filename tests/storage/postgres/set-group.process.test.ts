/**
 * postgresStorage's set group: lone puts and pairs (a LangGraph task's writes, its checkpoints)
 * that wait for a write slot go together as one plain statement, not through the batches
 * function, each applied or refused on its own as if sent alone; a key named twice among the
 * waiting writes never goes twice in one statement.
 */
import fc from 'fast-check';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isCheckpointError, type BatchOperation, type BatchOutcome } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';
import { freshTable, hasPostgres, makePool, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();
/** Four connections: two write slots, so that most of a burst waits and goes together. */
let pool: pg.Pool;
/** The SQL texts the pool was sent. */
const sent: string[] = [];
beforeAll(() => {
  if (!hasPostgres) return;
  pool = makePool(server().url, { max: 4 });
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  (pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const first = args[0];
    sent.push(typeof first === 'string' ? first : String((first as { text?: unknown }).text));
    return query(...args);
  };
});
afterAll(async () => {
  await pool?.end();
});

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);
const isSetGroup = (sql: string): boolean => sql.startsWith('WITH p(i, op, cond');
const isBatchesFunction = (sql: string): boolean => sql.includes('_batches_meta(');

/** The first put's condition against its key: none, ifAbsent of a new or a stored key, a current or a stale version. */
type On = 'none' | 'absent-new' | 'absent-taken' | 'current' | 'stale';

interface Caller {
  readonly on: On;
  /** A lone put (`put`, or a one-operation `batch`), or a pair with deletes of stored and of absent keys. */
  readonly shape: 'put' | 'batch' | 'pair';
  readonly deletes: readonly boolean[];
}

const callers = fc.array(
  fc.record<Caller>({
    on: fc.constantFrom<On>('none', 'absent-new', 'absent-taken', 'current', 'stale'),
    shape: fc.constantFrom<Caller['shape']>('put', 'batch', 'pair'),
    deletes: fc.array(fc.boolean(), { maxLength: 3 }),
  }),
  { minLength: 4, maxLength: 40 },
);

const holds = (on: On): boolean => on !== 'absent-taken' && on !== 'stale';

(hasPostgres ? describe : describe.skip)('postgresStorage set group', () => {
  it('property: waiting lone puts and pairs go as set statements, each applied whole or refused whole as if sent alone', async () => {
    await fc.assert(
      fc.asyncProperty(callers, async (list) => {
        const storage = postgresStorage({ pool, table: freshTable('set') });
        try {
          const firstKey = (c: Caller, i: number): string => (c.on === 'absent-new' ? `new/${i}` : `taken/${i}`);
          const versions = await Promise.all(list.map((_, i) => storage.put(`taken/${i}`, utf8('before'))));
          await Promise.all(
            list.flatMap((c, i) => c.deletes.map((stored, j) => (stored ? storage.put(`gone/${i}/${j}`, utf8('old')) : undefined))),
          );
          const firstOp = (c: Caller, i: number): BatchOperation & { type: 'put' } => {
            const put = { type: 'put' as const, key: firstKey(c, i), bytes: utf8(`after ${i}`) };
            if (c.on === 'absent-new' || c.on === 'absent-taken') return { ...put, ifAbsent: true };
            if (c.on === 'current') return { ...put, ifVersion: versions[i]!.version };
            if (c.on === 'stale') return { ...put, ifVersion: '9000000000' };
            return put;
          };
          const operations = (c: Caller, i: number): BatchOperation[] =>
            c.shape !== 'pair'
              ? [firstOp(c, i)]
              : [
                  firstOp(c, i),
                  { type: 'put', key: `doc/${i}`, bytes: utf8(`doc ${i}`) },
                  ...c.deletes.map((_, j): BatchOperation => ({ type: 'delete', key: `gone/${i}/${j}` })),
                ];
          const send = (c: Caller, i: number): Promise<readonly BatchOutcome[]> => {
            if (c.shape !== 'put') return storage.batch(operations(c, i));
            const { key, bytes, ...options } = firstOp(c, i);
            return storage.put(key, bytes, options).then((r): BatchOutcome[] => [{ type: 'put', key, version: r.version }]);
          };
          const from = sent.length;
          const results = await Promise.allSettled(list.map(send));
          const statements = sent.slice(from);
          // Beyond the two slots the writes waited; lone puts and pairs never reach the batches function.
          expect(statements.filter(isBatchesFunction)).toEqual([]);
          if (list.length >= 4) expect(statements.some(isSetGroup)).toBe(true);
          for (const [i, c] of list.entries()) {
            const result = results[i]!;
            const first = await storage.get(firstKey(c, i));
            const doc = await storage.get(`doc/${i}`);
            const gone = await Promise.all(c.deletes.map((_, j) => storage.get(`gone/${i}/${j}`)));
            if (!holds(c.on)) {
              expect(result.status).toBe('rejected');
              const reason = (result as PromiseRejectedResult).reason as { message: string; details?: { key?: string } };
              expect(isCheckpointError(reason, 'checkpoint_conflict')).toBe(true);
              expect(reason.details?.key).toBe(firstKey(c, i));
              // The same words as the same batch sent alone.
              const alone = await storage.batch(operations(c, i)).then(
                () => undefined,
                (err: unknown) => err as { message: string },
              );
              expect(reason.message).toBe(alone?.message);
              expect(text(first?.bytes)).toBe('before');
              expect(doc).toBeUndefined();
              gone.forEach((g, j) => expect(g !== undefined).toBe(c.deletes[j]));
              continue;
            }
            expect(result.status).toBe('fulfilled');
            const outcomes = (result as PromiseFulfilledResult<readonly BatchOutcome[]>).value;
            expect(text(first?.bytes)).toBe(`after ${i}`);
            expect(outcomes[0]).toEqual({ type: 'put', key: firstKey(c, i), version: first?.version });
            if (c.shape !== 'pair') continue;
            expect(text(doc?.bytes)).toBe(`doc ${i}`);
            expect(outcomes[1]).toEqual({ type: 'put', key: `doc/${i}`, version: doc?.version });
            expect(outcomes.slice(2)).toEqual(c.deletes.map((stored, j) => ({ type: 'delete', key: `gone/${i}/${j}`, existed: stored })));
            expect(gone.every((g) => g === undefined)).toBe(true);
          }
        } finally {
          await storage.close();
        }
      }),
      { numRuns: 15 },
    );
  });

  it('a key that waiting writes name twice is never written twice by one statement: each put lands, the last answered holds', async () => {
    const storage = postgresStorage({ pool, table: freshTable('twice') });
    try {
      await storage.get('warm'); // the first call checks the table
      const from = sent.length;
      // Twenty puts of one key among others, all at once: most wait, and a set group may take each key once.
      const results = await Promise.all(
        Array.from({ length: 40 }, (_, i) => storage.put(i % 2 === 0 ? 'shared' : `own/${i}`, utf8(`${i}`)).then((r) => ({ i, ...r }))),
      );
      expect(sent.slice(from).some(isSetGroup)).toBe(true);
      const stored = await storage.get('shared');
      const shared = results.filter((r) => r.i % 2 === 0);
      // Versions are drawn in commit order: the stored one is the greatest answered.
      const newest = shared.reduce((a, b) => (BigInt(a.version) > BigInt(b.version) ? a : b));
      expect(stored?.version).toBe(newest.version);
      expect(text(stored?.bytes)).toBe(`${newest.i}`);
      for (const r of results.filter((x) => x.i % 2 === 1)) expect((await storage.get(`own/${r.i}`))?.version).toBe(r.version);
    } finally {
      await storage.close();
    }
  });

  it('a checkpoint of many tasks deletes more keys than one set statement takes: it is applied whole all the same', async () => {
    const storage = postgresStorage({ pool, table: freshTable('wide') });
    try {
      const old = Array.from({ length: 70 }, (_, j) => `gone/${j}`);
      await Promise.all(old.map((key) => storage.put(key, utf8('old'))));
      const from = sent.length;
      const wide: BatchOperation[] = [
        { type: 'put', key: 'head', bytes: utf8('head') },
        { type: 'put', key: 'doc', bytes: utf8('doc') },
        ...old.map((key): BatchOperation => ({ type: 'delete', key })),
      ];
      const [outcomes] = await Promise.all([
        storage.batch(wide),
        ...Array.from({ length: 12 }, (_, i) => storage.put(`k/${i}`, utf8(`${i}`))),
      ]);
      expect(outcomes.slice(2).every((o) => o.type === 'delete' && o.existed)).toBe(true);
      for (const key of old) expect(await storage.get(key)).toBeUndefined();
      expect(text((await storage.get('doc'))?.bytes)).toBe('doc');
      expect(sent.slice(from).some(isSetGroup)).toBe(true);
    } finally {
      await storage.close();
    }
  });
});
