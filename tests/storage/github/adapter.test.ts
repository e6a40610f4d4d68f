import { describe, expect, it } from 'vitest';
import { gzip } from 'savepoint/toolkit';
import { listAll } from 'savepoint';
import { gitBlobSha, GITHUB_MAX_FILE_BYTES } from 'savepoint/github';
import { envPerTest, str, text, type Env } from '../../support/github.js';

const env = envPerTest();
const ops = (e: Env, from = 0): string[] => e.gh.requestLog.slice(from).map((r) => r.operation);

describe('single-file operations (contents API)', () => {
  it('stores bytes under basePath with git blob shas as versions, and reads them back', async () => {
    const e = await env({ storage: { basePath: 'store' } });
    const bytes = text('{"a":1}');
    const { version, pending } = await e.storage.put('checkpoints/r1/latest.json', bytes);
    expect(pending).toBeUndefined();
    expect(version).toBe(await gitBlobSha(bytes));
    expect(str(e.gh.state.readFile('store/checkpoints/r1/latest.json'))).toBe('{"a":1}');
    const got = await e.storage.get('checkpoints/r1/latest.json');
    expect(got).toEqual({ bytes, version });
    expect(await e.storage.get('checkpoints/r1/missing.json')).toBeUndefined();
    expect(await e.storage.delete('checkpoints/r1/latest.json')).toBe(true);
    expect(await e.storage.delete('checkpoints/r1/latest.json')).toBe(false);
    expect(e.gh.state.readFile('store/checkpoints/r1/latest.json')).toBeUndefined();
    expect(e.gh.schemaViolations).toEqual([]);
  });

  it('one put is one PUT plus one read-back by commit sha (never download_url)', async () => {
    const e = await env();
    const from = e.gh.requestLog.length;
    await e.storage.put('k.json', text('1'));
    expect(ops(e, from)).toEqual(['repos/create-or-update-file-contents', 'repos/get-content']);
    expect(e.gh.requestLog.at(-1)!.path).toMatch(/\?ref=[0-9a-f]{40}$/);
  });

  it('ifAbsent and ifVersion hold: checkpoint_conflict, nothing written', async () => {
    const e = await env();
    const v1 = (await e.storage.put('c.json', text('1'), { ifAbsent: true })).version;
    await expect(e.storage.put('c.json', text('2'), { ifAbsent: true })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    const v2 = (await e.storage.put('c.json', text('2'), { ifVersion: v1 })).version;
    await expect(e.storage.put('c.json', text('3'), { ifVersion: v1 })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    await expect(e.storage.delete('c.json', { ifVersion: v1 })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(str(e.gh.state.readFile('c.json'))).toBe('2');
    expect(await e.storage.delete('c.json', { ifVersion: v2 })).toBe(true);
  });

  it('ifVersion on a key that is gone is a conflict, although GitHub answers 201 for a new path even with a sha', async () => {
    const e = await env();
    const v = (await e.storage.put('g.json', text('1'))).version;
    e.gh.state.commitFiles({ 'g.json': null });
    await expect(e.storage.put('g.json', text('2'), { ifVersion: v })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(e.gh.state.readFile('g.json')).toBeUndefined();
    expect(e.gh.requestLog.some((r) => r.operation === 'repos/create-or-update-file-contents' && r.status === 201)).toBe(true);
  });

  it('an unconditional put over a file written elsewhere re-reads the sha (422 "sha wasn\'t supplied" / 409)', async () => {
    const e = await env();
    e.gh.state.commitFiles({ 'u.json': 'theirs' });
    await e.storage.put('u.json', text('ours'));
    expect(str(e.gh.state.readFile('u.json'))).toBe('ours');
    const other = e.another();
    await other.put('u.json', text('other'));
    await e.storage.put('u.json', text('ours again')); // its known sha is stale now: 409, re-read, retry
    expect(str(e.gh.state.readFile('u.json'))).toBe('ours again');
  });

  it('files over 1 MB are written as blobs and read through the raw blob endpoint', async () => {
    const e = await env();
    const big = new Uint8Array(1024 * 1024 + 100).map((_, i) => i % 251);
    const { version } = await e.storage.put('big.bin', big);
    expect(version).toBe(await gitBlobSha(big));
    const got = await e.storage.get('big.bin');
    // Compared by hash: a deep equality of two megabyte arrays is slow in the test runner.
    expect(await gitBlobSha(got!.bytes)).toBe(version);
    expect(got!.bytes.length).toBe(big.length);
    expect(ops(e)).toContain('git/create-blob');
    expect(e.gh.requestLog.filter((r) => r.operation === 'git/get-blob').length).toBeGreaterThan(0);
  });

  it('rejects values over GitHub’s 100 MB file limit, invalid keys, and calls after close', async () => {
    const e = await env();
    await expect(e.storage.put('huge.bin', new Uint8Array(GITHUB_MAX_FILE_BYTES + 1))).rejects.toMatchObject({
      reasonCode: 'checkpoint_too_large',
    });
    expect(() => e.another({ maxValueBytes: GITHUB_MAX_FILE_BYTES + 1 })).toThrow(
      expect.objectContaining({ reasonCode: 'checkpoint_config_invalid' }),
    );
    const small = e.another({ maxValueBytes: 10 });
    expect(small.capabilities.maxValueBytes).toBe(10);
    await expect(small.put('eleven', new Uint8Array(11))).rejects.toMatchObject({ reasonCode: 'checkpoint_too_large' });
    for (const bad of [{ owner: '' }, { repo: 'a b' }, { token: '' }, { branch: 'a..b' }, { basePath: '../up' }]) {
      expect(() => e.another(bad as never)).toThrow(expect.objectContaining({ reasonCode: 'checkpoint_config_invalid' }));
    }
    await expect(e.storage.put('../escape', text('x'))).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    await expect(e.storage.get('/abs')).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    await e.storage.close();
    await e.storage.close();
    await expect(e.storage.get('k')).rejects.toMatchObject({ reasonCode: 'checkpoint_closed' });
    expect(e.gh.requestLog).toHaveLength(0);
  });
});

describe('batch: one atomic commit through the Git Data API', () => {
  const checkpoint = (n: number, index: string, indexCond: { ifVersion?: string; ifAbsent?: boolean }) => [
    { type: 'put' as const, key: `checkpoints/r1/cp_${String(n).padStart(3, '0')}_manual.json`, bytes: text(`{"n":${n}}`), ifAbsent: true },
    { type: 'put' as const, key: 'checkpoints/r1/latest.json', bytes: text(`{"n":${n}}`) },
    { type: 'put' as const, key: 'checkpoints/r1/index.json', bytes: text(index), ...indexCond },
  ];

  it('commits history, latest and index together: 4 requests with a cached head, 6 cold, 3 with verify "sha"', async () => {
    const e = await env();
    let from = e.gh.requestLog.length;
    const commitsBefore = e.gh.state.log().length;
    const out = await e.storage.batch(checkpoint(1, 'i1', { ifAbsent: true }));
    expect(ops(e, from)).toEqual([
      'repos/get-commit',
      'repos/get-content',
      'git/create-tree',
      'git/create-commit',
      'git/update-ref',
      'repos/get-commit',
    ]);
    expect(e.gh.state.log().length).toBe(commitsBefore + 1);
    from = e.gh.requestLog.length;
    await e.storage.batch(checkpoint(2, 'i2', { ifVersion: out[2]!.type === 'put' ? out[2]!.version : '' }));
    expect(ops(e, from)).toEqual(['git/create-tree', 'git/create-commit', 'git/update-ref', 'repos/get-commit']);
    expect(e.gh.state.log().length).toBe(commitsBefore + 2);
    expect(str(e.gh.state.readFile('checkpoints/r1/index.json'))).toBe('i2');

    const fast = e.another({ verify: 'sha' });
    await fast.get('checkpoints/r1/latest.json'); // no head cached yet
    const v = await gitBlobSha(text('i2'));
    await fast.batch(checkpoint(3, 'i3', { ifVersion: v }));
    from = e.gh.requestLog.length;
    await fast.batch(checkpoint(4, 'i4', { ifVersion: await gitBlobSha(text('i3')) }));
    expect(ops(e, from)).toEqual(['git/create-tree', 'git/create-commit', 'git/update-ref']);
  });

  it('applies all or nothing: one failed condition leaves the branch untouched', async () => {
    const e = await env();
    await e.storage.put('a.json', text('a'));
    const head = e.gh.state.head();
    await expect(
      e.storage.batch([
        { type: 'put', key: 'b.json', bytes: text('b') },
        { type: 'put', key: 'a.json', bytes: text('a2'), ifAbsent: true },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(e.gh.state.head()).toBe(head);
    expect(e.gh.state.readFile('b.json')).toBeUndefined();
    await expect(
      e.storage.batch([
        { type: 'put', key: 'x', bytes: text('1') },
        { type: 'delete', key: 'x' },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(await e.storage.batch([])).toEqual([]);
  });

  it('deletes in a batch report whether the key existed; unchanged files cost no commit', async () => {
    const e = await env();
    await e.storage.put('d/1', text('1'));
    const out = await e.storage.batch([
      { type: 'delete', key: 'd/1' },
      { type: 'delete', key: 'd/2' },
      { type: 'put', key: 'd/3', bytes: text('3') },
    ]);
    expect(out).toEqual([
      { type: 'delete', key: 'd/1', existed: true },
      { type: 'delete', key: 'd/2', existed: false },
      { type: 'put', key: 'd/3', version: await gitBlobSha(text('3')) },
    ]);
    const commits = e.gh.state.log().length;
    await e.storage.batch([{ type: 'put', key: 'd/3', bytes: text('3') }]);
    expect(e.gh.state.log().length).toBe(commits);
  });

  it('binary values (gzip history) go as base64 blobs and come back byte for byte', async () => {
    const e = await env();
    const gz = gzip(text('{"compressed":true}'));
    const out = await e.storage.batch([{ type: 'put', key: 'h/1.json.gz', bytes: gz }]);
    expect(out[0]).toMatchObject({ version: await gitBlobSha(gz) });
    expect((await e.storage.get('h/1.json.gz'))?.bytes).toEqual(gz);
    expect(ops(e)).toContain('git/create-blob');
  });

  it('the first commit of an empty repository goes through the contents API', async () => {
    const single = await env({ emulator: { empty: true } });
    await single.storage.put('first.json', text('1'));
    expect(single.gh.state.listFiles().map((f) => f.path)).toEqual(['first.json']);

    const multi = await env({ emulator: { empty: true } });
    await multi.storage.batch([
      { type: 'put', key: 'r/a', bytes: text('a') },
      { type: 'put', key: 'r/b', bytes: text('b') },
    ]);
    expect(multi.gh.requestLog.find((r) => r.operation === 'repos/create-or-update-file-contents')).toBeDefined();
    expect(multi.gh.state.log()[0]!.tree).toBe(multi.gh.state.log()[0]!.tree);
    // The batch itself is one commit on top of the first one.
    expect(multi.gh.state.log()).toHaveLength(2);
    expect((await listAll(multi.storage, '')).map((x) => x.key)).toEqual(['r/a', 'r/b']);
  });

  it('checks conditions in directories larger than the contents API lists (1,000) through the trees API', async () => {
    const e = await env();
    e.gh.state.commitFiles(Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`big/f${String(i).padStart(4, '0')}`, String(i)])));
    // f1000 is past the first 1,000 entries the contents API lists.
    await expect(e.storage.batch([{ type: 'put', key: 'big/f1000', bytes: text('x'), ifAbsent: true }])).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
    });
    expect(e.gh.requestLog.some((r) => r.operation === 'git/get-tree')).toBe(true);
    await e.storage.batch([{ type: 'put', key: 'big/f1001', bytes: text('6'), ifAbsent: true }]);
    expect(str(e.gh.state.readFile('big/f1001'))).toBe('6');
  });
});

describe('list (recursive trees API)', () => {
  it('lists keys under a prefix in code-unit order with versions and sizes, within basePath only', async () => {
    const e = await env({ storage: { basePath: 'data' } });
    e.gh.state.commitFiles({ 'elsewhere/x.json': 'x', 'data/b/2': '22', 'data/b/1': '1', 'data/B/0': '0', 'data/bc': 'c' });
    const all = await listAll(e.storage, '');
    expect(all.map((x) => x.key)).toEqual(['B/0', 'b/1', 'b/2', 'bc']);
    expect(all[2]).toEqual({ key: 'b/2', version: await gitBlobSha(text('22')), size: 2 });
    expect((await listAll(e.storage, 'b/')).map((x) => x.key)).toEqual(['b/1', 'b/2']);
    expect((await listAll(e.storage, 'b')).map((x) => x.key)).toEqual(['b/1', 'b/2', 'bc']);
  });

  it('walks sub-trees when GitHub truncates the recursive listing', async () => {
    const e = await env({ emulator: { treeEntryLimit: 4 } });
    const files = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`runs/r${i % 3}/f${i}.json`, String(i)]));
    e.gh.state.commitFiles(files);
    const keys = (await listAll(e.storage, 'runs/')).map((x) => x.key);
    expect(keys).toEqual(Object.keys(files).sort());
  });

  it('an empty repository lists nothing and reads nothing', async () => {
    const e = await env({ emulator: { empty: true } });
    expect(await listAll(e.storage, '')).toEqual([]);
    expect(await e.storage.get('x')).toBeUndefined();
    expect(await e.storage.delete('x')).toBe(false);
  });
});

describe('consistency', () => {
  it('reads its own writes although the branch answers from a lagging replica (stale reads)', async () => {
    const e = await env();
    await e.storage.put('s/a.json', text('old'));
    await e.storage.put('s/a.json', text('new'));
    e.gh.faults.add({ operation: ['repos/get-content', 'git/get-tree'], times: 4, fault: { kind: 'stale-read', commitsBack: 1 } });
    expect(str((await e.storage.get('s/a.json'))?.bytes)).toBe('new');
    const listed = await listAll(e.storage, 's/');
    expect(listed.map((x) => x.version)).toEqual([await gitBlobSha(text('new'))]);
    // Once the replicas caught up, a new process sees it too.
    e.gh.faults.clear();
    const fresh = e.another();
    expect(str((await fresh.get('s/a.json'))?.bytes)).toBe('new');
  });

  it('paces content-generating requests at least a second apart by default', async () => {
    const e = await env();
    await e.storage.batch([{ type: 'put', key: 'p/1', bytes: text('1') }]);
    await e.storage.put('p/2', text('2'));
    const writes = e.gh.requestLog.filter((r) => r.contentCreating).map((r) => r.atMs);
    expect(writes.length).toBeGreaterThanOrEqual(4);
    for (let i = 1; i < writes.length; i++) expect(writes[i]! - writes[i - 1]!).toBeGreaterThanOrEqual(1000);
  });

  it('serializes writes to one branch across adapters of this realm', async () => {
    const e = await env({ storage: { serializeWrites: 'branch' } });
    const twin = e.another({ serializeWrites: 'branch' });
    let inFlight = 0;
    let max = 0;
    const track = (p: Promise<unknown>) => {
      inFlight++;
      max = Math.max(max, inFlight);
      return p.finally(() => inFlight--);
    };
    await Promise.all([
      track(e.storage.batch([{ type: 'put', key: 'w/a', bytes: text('a') }])),
      track(twin.batch([{ type: 'put', key: 'w/b', bytes: text('b') }])),
      track(e.storage.put('w/c', text('c'))),
    ]);
    // All three landed without a single lost race: they never overlapped on the wire.
    expect(e.gh.requestLog.filter((r) => r.operation === 'git/update-ref' && r.status === 422)).toHaveLength(0);
    expect(e.gh.state.listFiles().map((f) => f.path)).toEqual(expect.arrayContaining(['w/a', 'w/b', 'w/c']));
    expect(max).toBe(3);
  });
});

describe('write-then-verify (spec atomic_write: read back, compare, up to 3 attempts)', () => {
  it('rewrites what GitHub stored wrongly, even when it is mangled the same way twice', async () => {
    const e = await env();
    await e.storage.put('v/latest.json', text('{"n":0}'));
    e.gh.faults.add({ operation: 'git/create-tree', times: 2, fault: { kind: 'corrupt-write' } });
    await e.storage.batch([
      { type: 'put', key: 'v/cp_1.json', bytes: text('{"n":1}'), ifAbsent: true },
      { type: 'put', key: 'v/latest.json', bytes: text('{"n":1}') },
    ]);
    expect(str(e.gh.state.readFile('v/cp_1.json'))).toBe('{"n":1}');
    expect(str(e.gh.state.readFile('v/latest.json'))).toBe('{"n":1}');
    expect(e.events.filter((ev) => ev.type === 'verify_retry')).toHaveLength(2);
  });

  it('after 3 failed attempts it fails with checkpoint_atomic_write_failed and puts the previous content back', async () => {
    const e = await env();
    await e.storage.put('v/latest.json', text('{"n":0}'));
    e.gh.faults.add({ operation: 'git/create-tree', times: 3, fault: { kind: 'corrupt-write' } });
    await expect(
      e.storage.batch([
        { type: 'put', key: 'v/cp_1.json', bytes: text('{"n":1}'), ifAbsent: true },
        { type: 'put', key: 'v/latest.json', bytes: text('{"n":1}') },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_atomic_write_failed', details: { restored: true } });
    expect(str(e.gh.state.readFile('v/latest.json'))).toBe('{"n":0}');
    expect(e.gh.state.readFile('v/cp_1.json')).toBeUndefined();

    // Reads see the restored content, not what this process tried to write.
    expect(str((await e.storage.get('v/latest.json'))?.bytes)).toBe('{"n":0}');

    // (A refused request — 422 for a missing sha — also uses up a fault, hence 5.)
    e.gh.faults.add({ operation: 'repos/create-or-update-file-contents', times: 5, fault: { kind: 'corrupt-write' } });
    await expect(e.storage.put('v/latest.json', text('{"n":2}'))).rejects.toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
      details: { restored: true },
    });
    expect(str(e.gh.state.readFile('v/latest.json'))).toBe('{"n":0}');
    expect(str((await e.storage.get('v/latest.json'))?.bytes)).toBe('{"n":0}');
    e.gh.faults.clear();
    e.gh.faults.add({ operation: 'repos/create-or-update-file-contents', times: 3, fault: { kind: 'corrupt-write' } });
    await expect(e.storage.put('v/new.json', text('{"n":3}'), { ifAbsent: true })).rejects.toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
    });
    expect(e.gh.state.readFile('v/new.json')).toBeUndefined();
  });
});
