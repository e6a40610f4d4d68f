import { listAll } from '../../contract/storage.js';
import { equal, equalJson, ok, rejects, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

/** Ascending UTF-16 code-unit order, the order `list()` promises (what `Array#sort` does on strings). */
export function codeUnitCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Keys chosen so that file-system order, byte order and code-point order would all
 * disagree with code-unit order somewhere: `.`/`-` sort before `/`, upper case before
 * lower, U+FF5E after the surrogate pair of an emoji, `run-1/` against `run-10/`.
 * No key is a path prefix of another, and no two differ only in case, so file-like
 * stores (also case-insensitive ones) can hold them all.
 */
export const LIST_KEYS: readonly string[] = [
  'a-b',
  'a.b',
  'a/x',
  'a0',
  'aB',
  'M',
  'b/c/d',
  'b/c-d',
  'b/c.d',
  'run-1/latest.json',
  'run-1/history/cp_1.json',
  'run-10/latest.json',
  'run-1x',
  'z/\uff5e',
  'z/\u{1f600}',
  'z/é',
  'N',
  '~',
  'é',
];

const PREFIXES = [
  '',
  'a',
  'a/',
  'a-',
  'M',
  'b/',
  'b/c',
  'b/c/',
  'b/c/d',
  'run-1',
  'run-1/',
  'run-1/history/',
  'run-10/',
  'z/',
  'é',
  'q',
  'q/',
];

/** Listing: order, prefixes, versions and sizes, invalid prefixes. */
export function listingTests(ctx: SuiteContext): void {
  ctx.group('list', () => {
    listOrderTests(ctx);
    listEntryTests(ctx);
  });
}

/** What list() yields: every key once, in code-unit order, exactly those under the prefix. */
function listOrderTests(ctx: SuiteContext): void {
  ctx.test('an empty store lists nothing', async (s) => {
    equalJson(await listAll(s, ''), [], "list('') of an empty store");
    equalJson(await listAll(s, 'a/'), [], "list('a/') of an empty store");
  });

  ctx.test("list('') yields every key once, in ascending code-unit order", async (s) => {
    // Written in a scrambled order so insertion order cannot pass for sorted order.
    for (const key of [...LIST_KEYS].reverse()) await s.put(key, utf8(key));
    const expected = [...LIST_KEYS].sort(codeUnitCompare);
    equalJson(
      (await listAll(s, '')).map((e) => e.key),
      expected,
      "keys of list('')",
    );
  });

  ctx.test('list(prefix) yields exactly the keys that start with the prefix', async (s) => {
    for (const key of LIST_KEYS) await s.put(key, utf8(key));
    for (const prefix of PREFIXES) {
      const expected = LIST_KEYS.filter((k) => k.startsWith(prefix)).sort(codeUnitCompare);
      equalJson(
        (await listAll(s, prefix)).map((e) => e.key),
        expected,
        `keys of list(${JSON.stringify(prefix)})`,
      );
    }
  });
}

/** Versions and sizes of entries, deleted keys, abandoned listings, invalid prefixes. */
function listEntryTests(ctx: SuiteContext): void {
  ctx.test('entries carry the version and size that get sees', async (s) => {
    const sizes = new Map([
      ['ls/empty', 0],
      ['ls/one', 1],
      ['ls/big', Math.min(5000, s.capabilities.maxValueBytes ?? Infinity)],
    ]);
    for (const [key, size] of sizes) await s.put(key, new Uint8Array(size).fill(7));
    await s.put('ls/one', utf8('x')); // a replaced key lists its new version
    const entries = await listAll(s, 'ls/');
    equal(entries.length, sizes.size, 'number of entries');
    for (const entry of entries) {
      const got = await s.get(entry.key);
      ok(got, `listed key ${entry.key} must be readable`);
      equal(entry.version, got.version, `version of ${entry.key} in list vs get`);
      equal(entry.size, got.bytes.length, `size of ${entry.key} in list vs get`);
      equal(entry.size, sizes.get(entry.key), `size of ${entry.key}`);
    }
  });

  ctx.test('deleted keys leave the listing; their emptied parents are not keys', async (s) => {
    await s.put('gone/deep/a', utf8('a'));
    await s.put('gone/deep/b', utf8('b'));
    await s.put('kept', utf8('k'));
    await s.delete('gone/deep/a');
    equalJson(
      (await listAll(s, '')).map((e) => e.key),
      ['gone/deep/b', 'kept'],
      'after deleting one key',
    );
    await s.delete('gone/deep/b');
    equalJson(
      (await listAll(s, '')).map((e) => e.key),
      ['kept'],
      'after deleting every key under gone/',
    );
    equalJson(await listAll(s, 'gone/'), [], "list('gone/') after deleting everything under it");
    await s.put('gone/deep/c', utf8('c'));
    equalJson(
      (await listAll(s, 'gone/')).map((e) => e.key),
      ['gone/deep/c'],
      'writing under an emptied prefix again',
    );
  });

  ctx.test('a listing abandoned early does not disturb later calls', async (s) => {
    for (const key of ['p/1', 'p/2', 'p/3']) await s.put(key, utf8(key));
    for await (const entry of s.list('p/')) {
      equal(entry.key, 'p/1', 'first entry');
      break;
    }
    await s.put('p/4', utf8('4'));
    equalJson(
      (await listAll(s, 'p/')).map((e) => e.key),
      ['p/1', 'p/2', 'p/3', 'p/4'],
      'a later full listing',
    );
  });

  ctx.test('an invalid prefix rejects with checkpoint_key_invalid', async (s) => {
    await s.put('a/b', utf8('x'));
    for (const prefix of ['/', '/a', '../', '..', 'a//', 'a/../', './', 'a\\b', 'C:/', 'a\u0000']) {
      await rejects(() => listAll(s, prefix), 'checkpoint_key_invalid', `list(${JSON.stringify(prefix)})`);
    }
  });
}
