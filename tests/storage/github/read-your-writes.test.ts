/**
 * Read-your-writes meets a second writer: an adapter shows its own fresh write while the
 * branch may lag behind it, but a newer file another writer put there is what reads show,
 * whether a lost condition taught the adapter so or not. Without that, a saver replica read
 * its own older head for a minute, continued from its own older checkpoint, and the turn
 * another replica had made was left out of the state.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchOperation, StorageEntry } from 'savepoint';
import { gitBlobShaOf } from 'savepoint/testing';
import { judgeOwnWrite, type BranchComparison } from '../../../src/storage/github/branch-comparison.js';
import { envPerTest, startEnv, str, text } from '../../support/github.js';

const env = envPerTest({ storage: { minWriteIntervalMs: 0 } });

describe('githubStorage: a file another writer replaced', () => {
  it('a batch whose condition lost to another writer: get() returns their bytes, and a retry on their version holds', async () => {
    const e = await env();
    const other = e.another();
    const ours = (await e.storage.batch([{ type: 'put', key: 'run/head.json', bytes: text('ours 1') }]))[0]!;
    const theirs = await other.put('run/head.json', text('theirs 2'), { ifVersion: ours.type === 'put' ? ours.version : '' });
    const claim: BatchOperation = {
      type: 'put',
      key: 'run/head.json',
      bytes: text('ours 2'),
      ifVersion: ours.type === 'put' ? ours.version : '',
    };
    await expect(e.storage.batch([claim])).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    const seen = await e.storage.get('run/head.json');
    expect(str(seen?.bytes)).toBe('theirs 2');
    expect(seen?.version).toBe(theirs.version);
    await e.storage.batch([{ ...claim, ifVersion: seen!.version }]);
    expect(str(e.gh.state.readFile('run/head.json'))).toBe('ours 2');
  });

  it('a single put whose condition lost to another writer: get() returns their bytes', async () => {
    const e = await env();
    const other = e.another();
    const ours = await e.storage.put('run/head.json', text('ours 1'));
    const theirs = await other.put('run/head.json', text('theirs 2'), { ifVersion: ours.version });
    await expect(e.storage.put('run/head.json', text('ours 2'), { ifVersion: ours.version })).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
    });
    const seen = await e.storage.get('run/head.json');
    expect(str(seen?.bytes)).toBe('theirs 2');
    expect(seen?.version).toBe(theirs.version);
  });

  it('without a lost condition, its own fresh write is still what it reads', async () => {
    const e = await env();
    await e.storage.put('run/head.json', text('ours 1'));
    expect(str((await e.storage.get('run/head.json'))?.bytes)).toBe('ours 1');
  });
});

async function listed(storage: { list(prefix: string): AsyncIterable<StorageEntry> }, prefix: string): Promise<StorageEntry[]> {
  const out: StorageEntry[] = [];
  for await (const entry of storage.list(prefix)) out.push(entry);
  return out;
}

describe('githubStorage: a newer file from another writer, no lost condition to learn from', () => {
  it('get() and list() show their file, written unconditionally after ours', async () => {
    const e = await env();
    const other = e.another();
    await e.storage.put('run/head.json', text('ours 1'));
    const theirs = await other.put('run/head.json', text('theirs 2'));
    const seen = await e.storage.get('run/head.json');
    expect(str(seen?.bytes)).toBe('theirs 2');
    expect(seen?.version).toBe(theirs.version);
    expect((await listed(e.storage, 'run/')).map((x) => x.version)).toEqual([theirs.version]);
  });

  it('list() first: the listing shows their file, then get() does too', async () => {
    const e = await env();
    const other = e.another();
    await e.storage.put('run/head.json', text('ours 1'));
    await e.storage.put('run/other.json', text('ours too'));
    const theirs = await other.put('run/head.json', text('theirs 2'));
    const entries = await listed(e.storage, 'run/');
    expect(entries.map((x) => [x.key, x.version, x.size])).toEqual([
      ['run/head.json', theirs.version, 8],
      ['run/other.json', gitBlobShaOf(text('ours too')), 8],
    ]);
    expect(str((await e.storage.get('run/head.json'))?.bytes)).toBe('theirs 2');
  });

  it('their delete after our write: get() finds nothing and list() leaves it out', async () => {
    const e = await env();
    const other = e.another();
    await e.storage.put('run/head.json', text('ours 1'));
    await other.delete('run/head.json');
    expect(await e.storage.get('run/head.json')).toBeUndefined();
    expect(await listed(e.storage, 'run/')).toEqual([]);
  });

  it('a branch rewritten without our commit: the file the branch holds, not ours', async () => {
    const e = await env();
    const before = e.gh.state.commitFiles({ 'run/head.json': 'base' });
    await e.storage.put('run/head.json', text('ours 1'));
    e.gh.state.store.refs.set('main', before);
    e.gh.state.commitFiles({ 'run/head.json': 'rewritten' });
    expect(str((await e.storage.get('run/head.json'))?.bytes)).toBe('rewritten');
  });
});

describe('githubStorage: a lagging branch still shows our own write', () => {
  it('every branch-named read lags behind our commit (contents, tree and compare): get() and list() show ours', async () => {
    const e = await env();
    await e.storage.put('s/a.json', text('old'));
    const ours = await e.storage.put('s/a.json', text('new'));
    e.gh.faults.add({
      operation: ['repos/get-content', 'git/get-tree', 'git/get-ref', 'repos/get-commit', 'repos/compare-commits-with-basehead'],
      times: 20,
      fault: { kind: 'stale-read', commitsBack: 1 },
    });
    expect(str((await e.storage.get('s/a.json'))?.bytes)).toBe('new');
    expect((await listed(e.storage, 's/')).map((x) => x.version)).toEqual([ours.version]);
    expect(e.gh.requestLog.some((r) => r.operation === 'repos/compare-commits-with-basehead')).toBe(true);
    expect(e.gh.schemaViolations).toEqual([]);
  });

  it('a read that lags behind their newer commit while the compare does not: their blob, read by sha', async () => {
    const e = await env();
    const other = e.another();
    await other.put('s/a.json', text('older'));
    await e.storage.put('s/a.json', text('ours'));
    const theirs = await other.put('s/a.json', text('theirs'));
    e.gh.faults.add({ operation: 'repos/get-content', times: 5, fault: { kind: 'stale-read', commitsBack: 2 } });
    const seen = await e.storage.get('s/a.json');
    expect([str(seen?.bytes), seen?.version]).toEqual(['theirs', theirs.version]);
  });

  it('property: with content reads lagging any number of commits and a fresh compare, get() answers what the branch holds, or a lagged file no older than our write', async () => {
    const step = fc.constantFrom('ours', 'theirs', 'theirs-delete', 'theirs-elsewhere');
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), fc.nat({ max: 4 }), async (steps, lag) => {
        fc.pre(steps.includes('ours'));
        const e = await startEnv({ storage: { minWriteIntervalMs: 0 } });
        try {
          const other = e.another();
          let ownCommit = '';
          for (const [i, s] of steps.entries()) {
            if (s === 'ours') {
              await e.storage.put('k/head.json', text(`ours ${i}`));
              ownCommit = e.gh.state.head()!;
            } else if (s === 'theirs') await other.put('k/head.json', text(`theirs ${i}`));
            else if (s === 'theirs-delete') await other.delete('k/head.json');
            else await other.put(`k/elsewhere-${i}.json`, text(`elsewhere ${i}`));
          }
          const log = e.gh.state.log().map((c) => c.sha);
          const truth = str(e.gh.state.readFile('k/head.json'));
          const laggedAt = Math.min(lag, log.length - 1);
          // A read lagging to a commit at or after our write is a plain stale read: the adapter may answer it.
          const allowed = laggedAt <= log.indexOf(ownCommit) ? [truth, str(e.gh.state.readFile('k/head.json', log[laggedAt]))] : [truth];
          if (lag > 0) e.gh.faults.add({ operation: 'repos/get-content', times: 10, fault: { kind: 'stale-read', commitsBack: lag } });
          expect(allowed).toContain(str((await e.storage.get('k/head.json'))?.bytes));
        } finally {
          await e.close();
        }
      }),
      { numRuns: 30 },
    );
  });
});

describe('githubStorage: a key below a file it wrote', () => {
  it('put() and batch() refuse it cleanly, and the file above stays on the branch after the read-your-writes minute', async () => {
    const e = await env();
    await e.storage.put('nest/a', text('parent'));
    await expect(e.storage.put('nest/a/b', text('child'))).rejects.toMatchObject({ reasonCode: 'checkpoint_unsupported' });
    await expect(e.storage.batch([{ type: 'put', key: 'nest/a/b/c', bytes: text('grandchild') }])).rejects.toMatchObject({
      reasonCode: 'checkpoint_unsupported',
    });
    await e.clock.advance(61_000);
    expect(str(e.gh.state.readFile('nest/a'))).toBe('parent');
    expect(str((await e.storage.get('nest/a'))?.bytes)).toBe('parent');
  });
});

describe('judgeOwnWrite: what a read answers at a path this adapter wrote, the branch showing another blob', () => {
  const cmp = (relation: BranchComparison['relation'], changed: [string, string | null][] = [], complete = true): BranchComparison => ({
    relation,
    changed: new Map(changed),
    complete,
  });
  it('lagging: ours; rewritten: the branch; containing ours and the path untouched since: ours, unless the file list was cut short', () => {
    expect(judgeOwnWrite(cmp('lags', [['p', 'x']]), 'p', 'x')).toEqual({ kind: 'ours' });
    expect(judgeOwnWrite(cmp('rewritten'), 'p', null)).toEqual({ kind: 'branch' });
    expect(judgeOwnWrite(cmp('contains', [['q', 'y']]), 'p', 'old')).toEqual({ kind: 'ours' });
    expect(judgeOwnWrite(cmp('contains', [['q', 'y']], false), 'p', 'old')).toEqual({ kind: 'branch' });
  });
  it('containing ours and the path changed since: the branch when its read shows that blob, else that blob (or nothing, when removed)', () => {
    expect(judgeOwnWrite(cmp('contains', [['p', 'new']]), 'p', 'new')).toEqual({ kind: 'branch' });
    expect(judgeOwnWrite(cmp('contains', [['p', 'new']]), 'p', 'old')).toEqual({ kind: 'blob', sha: 'new' });
    expect(judgeOwnWrite(cmp('contains', [['p', null]]), 'p', 'old')).toEqual({ kind: 'blob', sha: null });
    expect(judgeOwnWrite(cmp('contains', [['p', null]]), 'p', null)).toEqual({ kind: 'branch' });
  });
});
