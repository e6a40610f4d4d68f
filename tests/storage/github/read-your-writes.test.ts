/**
 * Read-your-writes meets a second writer: an adapter shows its own fresh write while the
 * branch may lag behind it, but once one of its conditional writes learns that another writer
 * replaced that file, reads show the other writer's file. Without that, a saver replica kept
 * reading its own stale head for a minute and lost every claim it retried on it.
 */
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from 'savepoint';
import { envPerTest, str, text } from '../../support/github.js';

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
