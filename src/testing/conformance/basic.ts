import { listAll } from '../../contract/storage.js';
import { asCheckpointError, equal, equalJson, ok, rejects, sameBytes, utf8 } from './check.js';
import type { SuiteContext } from './context.js';

/** get / put / delete, versions, copies, binary safety, size limits, capabilities. */
export function basicTests(ctx: SuiteContext): void {
  ctx.group('basics', () => {
    getPutTests(ctx);
    valueTests(ctx);
    deleteAndKeyTests(ctx);
  });
}

/** Capabilities, get of a missing key, put then get, a new version on every write. */
function getPutTests(ctx: SuiteContext): void {
  ctx.test('declares its name and capabilities consistently', async (s) => {
    ok(typeof s.name === 'string' && s.name.length > 0, 'name must be a non-empty string');
    const caps = s.capabilities;
    ok(caps && typeof caps === 'object', 'capabilities must be an object');
    equal(typeof caps.atomicBatch, 'boolean', 'capabilities.atomicBatch type');
    equal(typeof caps.crossProcessConditional, 'boolean', 'capabilities.crossProcessConditional type');
    equal(typeof s.batch === 'function', caps.atomicBatch, 'batch() is present exactly when capabilities.atomicBatch is true');
    if (caps.maxValueBytes !== undefined)
      ok(Number.isInteger(caps.maxValueBytes) && caps.maxValueBytes > 0, 'capabilities.maxValueBytes must be a positive integer');
    const expected = ctx.options.capabilities ?? {};
    for (const field of ['atomicBatch', 'crossProcessConditional', 'maxValueBytes'] as const) {
      if (field in expected) equal(caps[field], expected[field], `capabilities.${field} (as the test options expect)`);
    }
  });

  ctx.test('get of a missing key resolves undefined', async (s) => {
    equal(await s.get('missing/key.json'), undefined, 'get(missing)');
    equal(await s.get('missing'), undefined, 'get(missing)');
  });

  ctx.test('put then get returns the same bytes and the version put returned', async (s) => {
    const bytes = utf8('{"hello":"world"}');
    const put = await s.put('checkpoints/run-1/latest.json', bytes);
    ok(typeof put.version === 'string' && put.version.length > 0, 'put must resolve a non-empty version string');
    const got = await s.get('checkpoints/run-1/latest.json');
    ok(got, 'get after put must find the key');
    sameBytes(got.bytes, bytes, 'get after put');
    equal(got.version, put.version, 'version from get vs version from put');
  });

  // (With versions: 'content', the same test checks that a version follows the bytes instead.)
  ctx.test('put replaces, and the version changes on every write, even of the same bytes', async (s) => {
    const versions: string[] = [];
    const byContent = new Map<string, string>();
    const values = ['one', 'two', 'two', 'two', 'three', '', 'one'];
    for (const v of values) {
      const { version } = await s.put('k.json', utf8(v));
      if (ctx.contentVersions) {
        const known = byContent.get(v);
        if (known !== undefined) equal(version, known, `version of ${JSON.stringify(v)} written again (versions: 'content')`);
        else ok(![...byContent.values()].includes(version), `version ${version} names other bytes too`);
        byContent.set(v, version);
      } else {
        ok(!versions.includes(version), `version ${version} was returned by an earlier write of the key`);
      }
      versions.push(version);
      const got = await s.get('k.json');
      sameBytes(got?.bytes, utf8(v), `get after writing ${JSON.stringify(v)}`);
      equal(got?.version, version, 'version from get vs version from the last put');
    }
  });
}

/** Binary-safe values, and private copies of the bytes put and got. */
function valueTests(ctx: SuiteContext): void {
  ctx.test('values are binary-safe: all 256 byte values, an empty value, a large value', async (s) => {
    const all = Uint8Array.from({ length: 512 }, (_, i) => (i * 7 + (i >> 8)) & 0xff);
    ok(new Set(all).size === 256, 'fixture holds every byte value');
    await s.put('bin/all-bytes', all);
    sameBytes((await s.get('bin/all-bytes'))?.bytes, all, 'all 256 byte values');

    const { version } = await s.put('bin/empty', new Uint8Array(0));
    const empty = await s.get('bin/empty');
    ok(empty !== undefined, 'an empty value is a value: get must not resolve undefined');
    sameBytes(empty.bytes, new Uint8Array(0), 'empty value');
    equal(empty.version, version, 'version of the empty value');
    equal((await listAll(s, 'bin/')).find((e) => e.key === 'bin/empty')?.size, 0, 'list size of the empty value');

    const limit = s.capabilities.maxValueBytes;
    const size = Math.min(ctx.options.largeValueBytes ?? 256 * 1024, limit ?? Infinity);
    let x = 0x9e3779b9;
    const large = Uint8Array.from({ length: size }, () => ((x = (x * 1103515245 + 12345) >>> 0) >>> 24) & 0xff);
    await s.put('bin/large', large);
    sameBytes((await s.get('bin/large'))?.bytes, large, `large value (${size} bytes)`);
    equal((await listAll(s, 'bin/large')).at(0)?.size, size, 'list size of the large value');
  });

  ctx.test('put copies its input when called; get returns a private copy', async (s) => {
    const input = utf8('original');
    const pending = s.put('copy/a', input);
    input.fill(0x21); // the caller reuses its buffer before the write resolves
    await pending;
    sameBytes((await s.get('copy/a'))?.bytes, utf8('original'), 'stored bytes after the caller mutated its input');

    const backing = utf8('xxxxVIEWyyyy');
    await s.put('copy/view', backing.subarray(4, 8));
    sameBytes((await s.get('copy/view'))?.bytes, utf8('VIEW'), 'a subarray view stores exactly the view');

    const first = await s.get('copy/a');
    const second = await s.get('copy/a');
    ok(first && second, 'get finds the key');
    ok(first.bytes !== second.bytes, 'two gets must not return the same buffer');
    first.bytes.fill(0);
    sameBytes(second.bytes, utf8('original'), 'a second get after the first result was mutated');
    sameBytes((await s.get('copy/a'))?.bytes, utf8('original'), 'stored bytes after a get result was mutated');
  });
}

/** Deletes, independent keys, a key below a key, the declared size limit. */
function deleteAndKeyTests(ctx: SuiteContext): void {
  ctx.test('delete removes a key and resolves whether it existed', async (s) => {
    await s.put('del/a', utf8('a'));
    equal(await s.delete('del/a'), true, 'delete of an existing key');
    equal(await s.get('del/a'), undefined, 'get after delete');
    equalJson(await listAll(s, ''), [], 'list after delete');
    equal(await s.delete('del/a'), false, 'delete of a deleted key');
    equal(await s.delete('never/written'), false, 'delete of a key never written');
  });

  ctx.test('keys are independent: writing or deleting one never changes another', async (s) => {
    const b = await s.put('ind/b', utf8('b'));
    const c = await s.put('ind-c', utf8('c'));
    await s.put('ind/a', utf8('a1'));
    await s.put('ind/a', utf8('a2'));
    await s.delete('ind/a');
    const gotB = await s.get('ind/b');
    const gotC = await s.get('ind-c');
    sameBytes(gotB?.bytes, utf8('b'), 'untouched key ind/b');
    equal(gotB?.version, b.version, 'version of untouched key ind/b');
    sameBytes(gotC?.bytes, utf8('c'), 'untouched key ind-c');
    equal(gotC?.version, c.version, 'version of untouched key ind-c');
  });

  ctx.test('a key and a key below it: both kept, or refused cleanly', async (s) => {
    await s.put('nest/a', utf8('parent'));
    let childStored = false;
    try {
      await s.put('nest/a/b', utf8('child'));
      childStored = true;
    } catch (err) {
      ok(!ctx.nestedKeys, `nestedKeys is true but put(nest/a/b) next to nest/a failed: ${String(err)}`);
      ok(asCheckpointError(err), `put(nest/a/b) next to nest/a must fail with a CheckpointError, got ${String(err)}`);
    }
    sameBytes((await s.get('nest/a'))?.bytes, utf8('parent'), 'nest/a after putting nest/a/b');
    if (childStored) {
      sameBytes((await s.get('nest/a/b'))?.bytes, utf8('child'), 'nest/a/b');
      equalJson(
        (await listAll(s, 'nest/')).map((e) => e.key),
        ['nest/a', 'nest/a/b'],
        'list of nested keys',
      );
    } else {
      equalJson(
        (await listAll(s, 'nest/')).map((e) => e.key),
        ['nest/a'],
        'list after a refused nested put',
      );
    }
  });

  ctx.test('respects its declared size limit', async (s) => {
    const limit = s.capabilities.maxValueBytes;
    if (limit === undefined) {
      // Nothing declared: nothing to hold the adapter to. The large-value test covers big values.
      return;
    }
    await s.put('limit/at', new Uint8Array(limit));
    equal((await s.get('limit/at'))?.bytes.length, limit, 'a value of exactly maxValueBytes');
    await rejects(() => s.put('limit/over', new Uint8Array(limit + 1)), 'checkpoint_too_large', `put of ${limit + 1} bytes`);
    equal(await s.get('limit/over'), undefined, 'an oversize put must store nothing');
  });
}
