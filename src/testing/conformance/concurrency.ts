import { listAll } from '../../contract/storage.js';
import { asCheckpointError, equal, equalJson, fail, ok, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

const ROUNDS = 4;

/** Splits settled results into winners and losers; every loser must be a checkpoint_conflict. */
function tally<T>(results: readonly PromiseSettledResult<T>[], what: string): { winners: number[]; values: (T | undefined)[] } {
  const winners: number[] = [];
  const values: (T | undefined)[] = [];
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') {
      winners.push(i);
      values.push(r.value);
      return;
    }
    values.push(undefined);
    const ce = asCheckpointError(r.reason);
    if (!ce) fail(`${what}: racer ${i} rejected with ${String(r.reason)}, expected checkpoint_conflict`);
    if (ce.reasonCode !== 'checkpoint_conflict') fail(`${what}: racer ${i} rejected with ${ce.reasonCode}, expected checkpoint_conflict`);
  });
  return { winners, values };
}

/** Racing conditional writes: exactly one winner, the others conflict, nothing torn. */
export function concurrencyTests(ctx: SuiteContext): void {
  const n = ctx.concurrency;
  ctx.group(`concurrency (${n} racers)`, () => {
    racingConditionalTests(ctx, n);
    racingWriteTests(ctx, n);
  });
}

/** N racing conditional writes of one key: exactly one wins. */
function racingConditionalTests(ctx: SuiteContext, n: number): void {
  ctx.test('exactly one of N racing create-only puts wins', async (s) => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = `race/create-${round}`;
      const results = await Promise.allSettled(Array.from({ length: n }, (_, i) => s.put(key, utf8(`racer ${i}`), { ifAbsent: true })));
      const { winners, values } = tally(results, `round ${round}`);
      equal(winners.length, 1, `round ${round}: number of winning create-only puts`);
      const w = winners[0]!;
      const got = await s.get(key);
      sameBytes(got?.bytes, utf8(`racer ${w}`), `round ${round}: stored value is the winner's`);
      equal(got?.version, values[w]?.version, `round ${round}: stored version is the winner's`);
    }
  });

  ctx.test('exactly one of N racing replace-if-version puts wins', async (s) => {
    let { version } = await s.put('race/replace', utf8('base'));
    for (let round = 0; round < ROUNDS; round++) {
      const base = version;
      const results = await Promise.allSettled(
        Array.from({ length: n }, (_, i) => s.put('race/replace', utf8(`round ${round} racer ${i}`), { ifVersion: base })),
      );
      const { winners, values } = tally(results, `round ${round}`);
      equal(winners.length, 1, `round ${round}: number of winning replace-if-version puts`);
      const w = winners[0]!;
      const got = await s.get('race/replace');
      sameBytes(got?.bytes, utf8(`round ${round} racer ${w}`), `round ${round}: stored value is the winner's`);
      equal(got?.version, values[w]?.version, `round ${round}: stored version is the winner's`);
      version = got!.version;
    }
  });

  ctx.test('exactly one of N racing delete-if-version calls wins', async (s) => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = `race/delete-${round}`;
      const { version } = await s.put(key, utf8('doomed'));
      const results = await Promise.allSettled(Array.from({ length: n }, () => s.delete(key, { ifVersion: version })));
      const { winners, values } = tally(results, `round ${round}`);
      equal(winners.length, 1, `round ${round}: number of winning conditional deletes`);
      equal(values[winners[0]!], true, `round ${round}: the winner reports the key existed`);
      equal(await s.get(key), undefined, `round ${round}: key after the race`);
    }
  });

  ctx.test('racing create-only and replace-if-version on one key: at most one write per version', async (s) => {
    for (let round = 0; round < ROUNDS; round++) {
      const key = `race/mixed-${round}`;
      const { version } = await s.put(key, utf8('base'));
      await s.delete(key);
      // The key is gone: every ifVersion racer must lose; exactly one create-only racer wins.
      const results = await Promise.allSettled(
        Array.from({ length: n }, (_, i) =>
          i % 2 ? s.put(key, utf8(`create ${i}`), { ifAbsent: true }) : s.put(key, utf8(`replace ${i}`), { ifVersion: version }),
        ),
      );
      const { winners } = tally(results, `round ${round}`);
      equal(winners.length, 1, `round ${round}: winners`);
      ok(winners[0]! % 2 === 1, `round ${round}: the winner must be a create-only put`);
      sameBytes((await s.get(key))?.bytes, utf8(`create ${winners[0]!}`), `round ${round}: stored value`);
    }
  });
}

/** Racing unconditional writes, and writes and deletes under one prefix: nothing lost. */
function racingWriteTests(ctx: SuiteContext, n: number): void {
  ctx.test('racing unconditional puts of one key all land, one after another', async (s) => {
    const results = await Promise.all(Array.from({ length: n }, (_, i) => s.put('race/blind', utf8(`writer ${i}`))));
    const versions = new Set(results.map((r) => r.version));
    equal(versions.size, n, 'every write gets its own version');
    const got = await s.get('race/blind');
    ok(got, 'the key exists');
    const w = results.findIndex((r) => r.version === got.version);
    ok(w >= 0, `stored version ${got.version} is not one that a put returned`);
    sameBytes(got.bytes, utf8(`writer ${w}`), 'stored value matches the stored version');
  });

  ctx.test('concurrent writes of many keys under a new prefix all land', async (s) => {
    const keys = Array.from({ length: n * 2 }, (_, i) => `fresh/dir/${i % 3}/key-${i}`);
    await Promise.all(keys.map((k, i) => (i % 2 ? s.put(k, utf8(k), { ifAbsent: true }) : s.put(k, utf8(k)))));
    equalJson(
      (await listAll(s, 'fresh/')).map((e) => e.key),
      [...keys].sort(),
      'keys after concurrent writes',
    );
    for (const k of keys) sameBytes((await s.get(k))?.bytes, utf8(k), k);
  });

  ctx.test('deleting the last key of a prefix while another key is written there loses nothing', async (s) => {
    for (let round = 0; round < ROUNDS * 2; round++) {
      const old = `sib/${round}/old`;
      const fresh = `sib/${round}/new`;
      await s.put(old, utf8('old'));
      const [deleted, created] = await Promise.all([
        s.delete(old),
        round % 2 ? s.put(fresh, utf8('new'), { ifAbsent: true }) : s.put(fresh, utf8('new')),
      ]);
      equal(deleted, true, `round ${round}: delete`);
      equal((await s.get(fresh))?.version, created.version, `round ${round}: the concurrent write is stored`);
      equal(await s.get(old), undefined, `round ${round}: the deleted key`);
    }
  });
}
