import { describe, expect, it } from 'vitest';
import { listAll, memoryStorage } from 'savepoint';
import { gitBlobSha } from 'savepoint/github';
import { envPerTest, str, text } from '../../support/github.js';

// The storage contract's `check` operation on GitHub: a batch (one git-data commit) applies
// only if the checked path still has that blob sha (or is absent) in the commit the batch is
// built on — re-checked whenever the head moved and the commit is rebuilt. Writers fence
// their checkpoints with the lease key this way (DESIGN invariant 7).
const env = envPerTest({ storage: { minWriteIntervalMs: 0, emergencyQueue: 'memory' } });

describe('batch check operations on githubStorage', () => {
  it('a check that holds lets the batch apply, writes nothing to the checked key, and is reported in order', async () => {
    const e = await env();
    const lease = await e.storage.put('run/lease', text('holder A'));
    const commitsBefore = e.gh.state.log().length;
    const out = await e.storage.batch([
      { type: 'check', key: 'run/lease', ifVersion: lease.version },
      { type: 'put', key: 'run/cp_1.json', bytes: text('cp 1') },
      { type: 'check', key: 'run/unborn', ifAbsent: true },
    ]);
    expect(out).toEqual([
      { type: 'check', key: 'run/lease' },
      { type: 'put', key: 'run/cp_1.json', version: await gitBlobSha(text('cp 1')) },
      { type: 'check', key: 'run/unborn' },
    ]);
    expect(e.gh.state.log().length).toBe(commitsBefore + 1);
    expect(str(e.gh.state.readFile('run/lease'))).toBe('holder A');
    expect(e.gh.state.readFile('run/unborn')).toBeUndefined();
  });

  it("a lease taken by another process (behind this adapter's cached head) fences the batch: nothing is written", async () => {
    const e = await env();
    const lease = await e.storage.put('run/lease', text('holder A'));
    e.gh.state.commitFiles({ 'run/lease': 'holder B' }); // another process took over
    const head = e.gh.state.log()[0]!.sha;
    await expect(
      e.storage.batch([
        { type: 'check', key: 'run/lease', ifVersion: lease.version },
        { type: 'put', key: 'run/cp_2.json', bytes: text('cp 2') },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict', details: { key: 'run/lease' } });
    expect(e.gh.state.log()[0]!.sha).toBe(head);
    expect(e.gh.state.readFile('run/cp_2.json')).toBeUndefined();
    await expect(
      e.storage.batch([
        { type: 'check', key: 'run/lease', ifAbsent: true },
        { type: 'delete', key: 'run/lease' },
      ]),
    ).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
    });
    expect(str(e.gh.state.readFile('run/lease'))).toBe('holder B');
  });

  it('when the head moves between building the commit and the ref update, the check is made again on the new base', async () => {
    const e = await env();
    const lease = await e.storage.put('run/lease', text('holder A'));
    // The ref update finds the branch moved: another process rewrote the lease meanwhile.
    e.gh.faults.add({ operation: 'git/update-ref', times: 1, fault: { kind: 'move-head', path: 'run/lease' } });
    await expect(
      e.storage.batch([
        { type: 'check', key: 'run/lease', ifVersion: lease.version },
        { type: 'put', key: 'run/cp_3.json', bytes: text('cp 3') },
      ]),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict', details: { key: 'run/lease' } });
    expect(e.gh.state.readFile('run/cp_3.json')).toBeUndefined();
    expect(e.gh.faults.history.map((h) => h.kind)).toEqual(['move-head']);
    // A move that leaves the lease alone: rebuilt on the new head, the batch applies.
    e.gh.faults.add({ operation: 'git/update-ref', times: 1, fault: { kind: 'move-head', path: 'run/other.txt' } });
    const now = await gitBlobSha(e.gh.state.readFile('run/lease')!);
    const out = await e.storage.batch([
      { type: 'check', key: 'run/lease', ifVersion: now },
      { type: 'put', key: 'run/cp_3.json', bytes: text('cp 3') },
    ]);
    expect(out[0]).toEqual({ type: 'check', key: 'run/lease' });
    expect(str(e.gh.state.readFile('run/cp_3.json'))).toBe('cp 3');
    expect(e.gh.state.readFile('run/other.txt')).toBeDefined();
  });

  it('a check-only batch commits nothing', async () => {
    const e = await env();
    const lease = await e.storage.put('run/lease', text('holder A'));
    const commits = e.gh.state.log().length;
    expect(await e.storage.batch([{ type: 'check', key: 'run/lease', ifVersion: lease.version }])).toEqual([
      { type: 'check', key: 'run/lease' },
    ]);
    expect(e.gh.state.log().length).toBe(commits);
  });
});

describe('check operations in the emergency queue', () => {
  it('are spilled as checks (never as deletes) and, when they still hold at flush time, the batch applies', async () => {
    const e = await env();
    const spill = memoryStorage();
    const s = e.another({ emergencyQueue: { storage: spill }, minWriteIntervalMs: 0 });
    const lease = await s.put('run/lease', text('holder A'));
    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    const out = await s.batch([
      { type: 'check', key: 'run/lease', ifVersion: lease.version },
      { type: 'put', key: 'run/cp_1.json', bytes: text('cp 1') },
    ]);
    expect(out).toEqual([
      { type: 'check', key: 'run/lease' },
      { type: 'put', key: 'run/cp_1.json', version: await gitBlobSha(text('cp 1')), pending: true },
    ]);
    expect(str((await s.get('run/cp_1.json'))?.bytes)).toBe('cp 1');
    const [entry] = await listAll(spill, '');
    const doc = JSON.parse(str((await spill.get(entry!.key))!.bytes)!) as {
      operations: { type: string; key: string; ifVersion?: string }[];
    };
    expect(doc.operations[0]).toEqual({ type: 'check', key: 'run/lease', ifVersion: lease.version });
    e.clock.auto = true;
    await s.flush();
    expect(str(e.gh.state.readFile('run/cp_1.json'))).toBe('cp 1');
    expect(str(e.gh.state.readFile('run/lease'))).toBe('holder A');
  });

  it('a queued batch whose check fails at flush time is never applied: flush reports checkpoint_conflict and keeps it until discarded', async () => {
    const e = await env();
    const lease = await e.storage.put('run/lease', text('holder A'));
    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    expect(
      await e.storage.batch([
        { type: 'check', key: 'run/lease', ifVersion: lease.version },
        { type: 'put', key: 'run/cp_9.json', bytes: text('cp 9') },
      ]),
    ).toHaveLength(2);
    e.gh.state.commitFiles({ 'run/lease': 'holder B' }); // the lease moved on while the write waited
    e.clock.auto = true;
    await expect(e.storage.flush()).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect(e.gh.state.readFile('run/cp_9.json')).toBeUndefined();
    const [stuck] = e.storage.pendingWrites();
    expect(stuck?.keys).toEqual(['run/lease', 'run/cp_9.json']);
    expect(e.events.some((ev) => ev.type === 'queue_flush_failed' && ev.reasonCode === 'checkpoint_conflict')).toBe(true);
    expect(await e.storage.discardPendingWrite(stuck!.seq)).toBe(true);
    await e.storage.flush();
    expect(e.gh.state.readFile('run/cp_9.json')).toBeUndefined();
  });
});
