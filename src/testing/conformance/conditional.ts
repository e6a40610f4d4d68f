import type { StorageAdapter } from '../../contract/storage.js';
import { listAll } from '../../contract/storage.js';
import { equal, equalJson, ok, rejects, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

async function expectUnchanged(s: StorageAdapter, key: string, bytes: Uint8Array, version: string, what: string): Promise<void> {
  const got = await s.get(key);
  sameBytes(got?.bytes, bytes, `${what}: stored bytes`);
  equal(got?.version, version, `${what}: stored version`);
}

/** Create-only puts, replace-if-version, delete-if-version, stale versions. */
export function conditionalTests(ctx: SuiteContext): void {
  ctx.group('conditional writes', () => {
    createOnlyTests(ctx);
    ifVersionTests(ctx);
    staleVersionTests(ctx);
  });
}

/** Create-only puts (ifAbsent). */
function createOnlyTests(ctx: SuiteContext): void {
  ctx.test('ifAbsent creates a missing key', async (s) => {
    const { version } = await s.put('cond/new', utf8('v1'), { ifAbsent: true });
    await expectUnchanged(s, 'cond/new', utf8('v1'), version, 'after a create-only put');
  });

  ctx.test('ifAbsent on an existing key rejects with checkpoint_conflict and changes nothing', async (s) => {
    const { version } = await s.put('cond/k', utf8('first'));
    await rejects(() => s.put('cond/k', utf8('second'), { ifAbsent: true }), 'checkpoint_conflict', 'create-only put of an existing key');
    await expectUnchanged(s, 'cond/k', utf8('first'), version, 'after a refused create-only put');
    const empty = await s.put('cond/empty', new Uint8Array(0));
    await rejects(() => s.put('cond/empty', utf8('x'), { ifAbsent: true }), 'checkpoint_conflict', 'create-only put over an empty value');
    await expectUnchanged(s, 'cond/empty', new Uint8Array(0), empty.version, 'an empty value after a refused create-only put');
  });

  ctx.test('ifAbsent succeeds again once the key is deleted', async (s) => {
    await s.put('cond/k', utf8('first'), { ifAbsent: true });
    await s.delete('cond/k');
    const { version } = await s.put('cond/k', utf8('again'), { ifAbsent: true });
    await expectUnchanged(s, 'cond/k', utf8('again'), version, 'after re-creating a deleted key');
  });
}

/** Replace- and delete-if-version with a current, stale, unknown or missing version. */
function ifVersionTests(ctx: SuiteContext): void {
  ctx.test('ifVersion with the current version replaces, and returns a new version', async (s) => {
    const v1 = await s.put('cond/k', utf8('one'));
    const v2 = await s.put('cond/k', utf8('two'), { ifVersion: v1.version });
    ok(v2.version !== v1.version, 'a conditional replace must return a new version');
    await expectUnchanged(s, 'cond/k', utf8('two'), v2.version, 'after a conditional replace');
    const v3 = await s.put('cond/k', utf8('two'), { ifVersion: v2.version });
    if (ctx.contentVersions) equal(v3.version, v2.version, 'replacing with identical bytes keeps a content version');
    else ok(v3.version !== v2.version, 'replacing with identical bytes must still change the version');
  });

  ctx.test('ifVersion with a stale or unknown version rejects with checkpoint_conflict and changes nothing', async (s) => {
    const v1 = await s.put('cond/k', utf8('one'));
    const v2 = await s.put('cond/k', utf8('two'));
    await rejects(() => s.put('cond/k', utf8('three'), { ifVersion: v1.version }), 'checkpoint_conflict', 'replace with a stale version');
    await rejects(
      () => s.put('cond/k', utf8('three'), { ifVersion: 'no-such-version' }),
      'checkpoint_conflict',
      'replace with a version that never existed',
    );
    await rejects(() => s.put('cond/k', utf8('three'), { ifVersion: '' }), 'checkpoint_conflict', 'replace with an empty version string');
    await expectUnchanged(s, 'cond/k', utf8('two'), v2.version, 'after refused replaces');
  });

  ctx.test('ifVersion on a missing key rejects with checkpoint_conflict and creates nothing', async (s) => {
    const other = await s.put('cond/other', utf8('x'));
    await rejects(() => s.put('cond/missing', utf8('x'), { ifVersion: other.version }), 'checkpoint_conflict', 'replace of a missing key');
    const gone = await s.put('cond/gone', utf8('x'));
    await s.delete('cond/gone');
    await rejects(
      () => s.put('cond/gone', utf8('y'), { ifVersion: gone.version }),
      'checkpoint_conflict',
      'replace of a deleted key with its last version',
    );
    equal(await s.get('cond/missing'), undefined, 'a refused replace must not create the key');
    equal(await s.get('cond/gone'), undefined, 'a refused replace must not re-create a deleted key');
  });

  ctx.test('delete with ifVersion: current deletes, stale or missing rejects with checkpoint_conflict', async (s) => {
    const v1 = await s.put('cond/d', utf8('one'));
    const v2 = await s.put('cond/d', utf8('two'));
    await rejects(() => s.delete('cond/d', { ifVersion: v1.version }), 'checkpoint_conflict', 'delete with a stale version');
    await expectUnchanged(s, 'cond/d', utf8('two'), v2.version, 'after a refused delete');
    equal(await s.delete('cond/d', { ifVersion: v2.version }), true, 'delete with the current version');
    equal(await s.get('cond/d'), undefined, 'get after a conditional delete');
    await rejects(() => s.delete('cond/d', { ifVersion: v2.version }), 'checkpoint_conflict', 'conditional delete of a missing key');
  });
}

/** A replaced version stays stale, even after delete and re-create (the ABA case). */
function staleVersionTests(ctx: SuiteContext): void {
  // (With versions: 'content', the same test checks that only a version naming other bytes is stale.)
  ctx.test('a version is never current again once replaced, even after delete and re-create', async (s) => {
    const seen: string[] = [];
    const record = (v: string): void => {
      if (!ctx.contentVersions) ok(!seen.includes(v), `version ${v} came back for the same key`);
      seen.push(v);
    };
    record((await s.put('cond/aba', utf8('A'))).version);
    record((await s.put('cond/aba', utf8('B'))).version);
    record((await s.put('cond/aba', utf8('A'))).version);
    await s.delete('cond/aba');
    record((await s.put('cond/aba', utf8('A'), { ifAbsent: true })).version);
    record((await s.put('cond/aba', utf8('A'))).version);
    const current = seen.at(-1)!;
    // Content versions: every write of 'A' has the current version; only B's is stale.
    const stale = seen.filter((v) => v !== current);
    if (ctx.contentVersions) equalJson(stale, [seen[1]], "stale versions when versions name the content (only B's)");
    for (const old of stale) {
      await rejects(() => s.put('cond/aba', utf8('Z'), { ifVersion: old }), 'checkpoint_conflict', `replace with stale version ${old}`);
      await rejects(() => s.delete('cond/aba', { ifVersion: old }), 'checkpoint_conflict', `delete with stale version ${old}`);
    }
    await expectUnchanged(s, 'cond/aba', utf8('A'), current, 'after every stale attempt');
    equalJson(
      (await listAll(s, 'cond/')).map((e) => [e.key, e.version]),
      [['cond/aba', current]],
      'list after every stale attempt',
    );
  });
}
