import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listAll, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { gitBlobSha } from 'savepoint/github';
import { envPerTest, str, text, virtualClock, type Env } from '../../support/github.js';

// phased-workflow-github.md emergency_fallback: rate limit exhausted and a checkpoint must
// be saved → keep it locally, continue, warn, and write it when the limit resets.
const env = envPerTest({ storage: { minWriteIntervalMs: 0 } });
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const commitsTouching = (e: Env, path: string): number =>
  e.gh.state.log().filter((c) => {
    const obj = e.gh.state.store.get(c.sha);
    if (obj?.type !== 'commit') return false;
    const here = e.gh.state.store.entryAt(c.tree, path)?.sha;
    const parent = obj.commit.parents[0];
    const before = parent
      ? e.gh.state.store.entryAt((e.gh.state.store.get(parent) as { commit: { tree: string } }).commit.tree, path)?.sha
      : undefined;
    return here !== before;
  }).length;

describe('emergency queue', () => {
  it('accepts writes while the limit is exhausted (pending), warns, serves reads from the queue, and pushes them in order when the limit resets', async () => {
    const e = await env();
    await e.storage.put('q/a', text('a0'));
    await e.storage.put('q/old', text('old'));
    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    const before = e.gh.requestLog.length;

    const r1 = await e.storage.put('q/a', text('a1'));
    expect(r1).toEqual({ version: await gitBlobSha(text('a1')), pending: true });
    const r2 = await e.storage.batch([
      { type: 'put', key: 'q/b', bytes: text('b1'), ifAbsent: true },
      { type: 'put', key: 'q/a', bytes: text('a2'), ifVersion: r1.version },
    ]);
    expect(r2).toEqual([
      { type: 'put', key: 'q/b', version: await gitBlobSha(text('b1')), pending: true },
      { type: 'put', key: 'q/a', version: await gitBlobSha(text('a2')), pending: true },
    ]);
    expect(await e.storage.delete('q/old')).toBe(true);

    // The workflow continues: one refused request, then nothing is sent until the reset.
    expect(e.gh.requestLog.slice(before).map((r) => r.status)).toEqual([403]);
    const queued = e.events.filter((ev) => ev.type === 'write_queued');
    expect(queued).toHaveLength(3);
    expect(queued[0]).toMatchObject({ level: 'warn', keys: ['q/a'], pending: 1 });
    expect(queued[0]!.type === 'write_queued' && queued[0]!.message).toMatch(/delayed persistence/);
    expect(e.storage.stats().queued).toBe(3);
    expect(e.storage.pendingWrites().map((w) => w.keys)).toEqual([['q/a'], ['q/b', 'q/a'], ['q/old']]);

    // Reads see the queue.
    expect(str((await e.storage.get('q/a'))?.bytes)).toBe('a2');
    expect(await e.storage.get('q/old')).toBeUndefined();
    expect(str(e.gh.state.readFile('q/a'))).toBe('a0');
    // A listing needs GitHub for everything else, so it waits for the limit like any read.
    await expect(listAll(e.storage, 'q/')).rejects.toMatchObject({ reasonCode: 'checkpoint_rate_limited' });

    // The limit resets: the queue is pushed in order by its own timer.
    e.clock.auto = true;
    await e.clock.advance(3_600_000 + 10_000);
    await vi.waitFor(() => expect(e.storage.stats().queued).toBe(0), { timeout: 10_000 });
    expect(str(e.gh.state.readFile('q/a'))).toBe('a2');
    expect(str(e.gh.state.readFile('q/b'))).toBe('b1');
    expect(e.gh.state.readFile('q/old')).toBeUndefined();
    expect((await listAll(e.storage, 'q/')).map((x) => [x.key, x.version])).toEqual([
      ['q/a', await gitBlobSha(text('a2'))],
      ['q/b', await gitBlobSha(text('b1'))],
    ]);
    // The three queued writes reach GitHub as ONE commit with their end state (a queue
    // pushed write by write used to spend a commit, and its requests, per write).
    const messages = e.gh.state
      .log()
      .map((c) => c.message)
      .reverse()
      .slice(-3);
    expect(messages).toEqual(['savepoint: put q/a', 'savepoint: put q/old', 'savepoint: batch q/a (+2 more)']);
    expect(e.events.filter((ev) => ev.type === 'queue_flushed').map((ev) => ev.type === 'queue_flushed' && ev.seq)).toEqual([1, 2, 3]);
  });

  it('flush() and close() drain the queue, waiting for the reset however long it is', async () => {
    const e = await env();
    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    expect((await e.storage.put('f/1', text('1'))).pending).toBe(true);
    e.clock.auto = true;
    const t0 = e.clock.now();
    await e.storage.flush();
    expect(e.clock.now() - t0).toBeGreaterThan(3_500_000);
    expect(str(e.gh.state.readFile('f/1'))).toBe('1');

    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    expect((await e.storage.put('f/2', text('2'))).pending).toBe(true);
    e.clock.auto = true;
    await e.storage.close();
    expect(str(e.gh.state.readFile('f/2'))).toBe('2');
    await expect(e.storage.put('f/3', text('3'))).rejects.toMatchObject({ reasonCode: 'checkpoint_closed' });
  });

  it('checks conditions against the queue when it can', async () => {
    const e = await env();
    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    const a = await e.storage.put('c/a', text('1'), { ifAbsent: true });
    await expect(e.storage.put('c/a', text('2'), { ifAbsent: true })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    await expect(e.storage.put('c/a', text('2'), { ifVersion: 'stale' })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    expect((await e.storage.put('c/a', text('2'), { ifVersion: a.version })).pending).toBe(true);
    e.clock.auto = true;
    await e.storage.flush();
    expect(str(e.gh.state.readFile('c/a'))).toBe('2');
  });

  it('with the queue disabled, a rate-limited write fails with checkpoint_rate_limited', async () => {
    const e = await env({ storage: { emergencyQueue: false } });
    e.gh.rateLimit.set({ remaining: 0 });
    await expect(e.storage.put('x', text('1'))).rejects.toMatchObject({ reasonCode: 'checkpoint_rate_limited' });
  });

  it('a write that landed before the limit hit (its answer was lost) is not written twice when the queue is pushed', async () => {
    const e = await env();
    e.gh.faults.add({ operation: 'repos/create-or-update-file-contents', fault: { kind: 'network-error', landed: true } });
    e.gh.faults.add({ operation: 'repos/create-or-update-file-contents', skip: 1, fault: { kind: 'primary-rate-limit' } });
    e.clock.auto = false;
    expect((await e.storage.put('l/once', text('once'))).pending).toBe(true);
    expect(str(e.gh.state.readFile('l/once'))).toBe('once');
    e.clock.auto = true;
    await e.storage.flush();
    expect(commitsTouching(e, 'l/once')).toBe(1);
    expect(e.events.some((ev) => ev.type === 'landed_after_timeout')).toBe(true);
  });

  for (const kind of ['memoryStorage', 'fsStorage'] as const) {
    it(`spills to ${kind} before acknowledging, so a crashed process's queue is pushed by the next one`, async () => {
      const e = await env();
      let spill: StorageAdapter;
      if (kind === 'fsStorage') {
        const dir = mkdtempSync(join(tmpdir(), 'savepoint-queue-'));
        dirs.push(dir);
        spill = fsStorage({ dir });
      } else spill = memoryStorage();
      // The first process runs on a clock that never moves again: it dies with its queue.
      const deadClock = virtualClock(e.clock.now());
      deadClock.auto = false;
      const first = e.another({ clock: deadClock, emergencyQueue: { storage: spill }, minWriteIntervalMs: 0 });
      e.gh.rateLimit.set({ remaining: 0 });
      const acked: string[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await first.batch([
          { type: 'put', key: `s/cp_${i}.json`, bytes: text(`cp ${i}`), ifAbsent: true },
          { type: 'put', key: 's/latest.json', bytes: text(`cp ${i}`) },
        ]);
        expect(r.every((o) => o.type === 'put' && o.pending)).toBe(true);
        acked.push(`s/cp_${i}.json`);
      }
      expect((await listAll(spill, '')).length).toBe(3);

      const second = e.another({ emergencyQueue: { storage: spill }, minWriteIntervalMs: 0 });
      expect(str((await second.get('s/latest.json'))?.bytes)).toBe('cp 2');
      await second.flush();
      for (const key of acked) expect(commitsTouching(e, key)).toBe(1);
      expect(str(e.gh.state.readFile('s/latest.json'))).toBe('cp 2');
      expect(await listAll(spill, '')).toEqual([]);
    });
  }
});

describe('a queued write that can no longer apply', () => {
  it('is never dropped silently: flush reports the conflict and keeps it until it is discarded', async () => {
    const e = await env();
    const v1 = (await e.storage.put('k', text('1'))).version;
    const fresh = e.another({ minWriteIntervalMs: 0 }); // knows nothing about k
    e.clock.auto = false;
    e.gh.rateLimit.set({ remaining: 0 });
    expect((await fresh.put('k', text('mine'), { ifVersion: v1 })).pending).toBe(true);
    e.gh.state.commitFiles({ k: 'someone else' }); // the condition can no longer hold
    e.clock.auto = true;
    await expect(fresh.flush()).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    const [stuck] = fresh.pendingWrites();
    expect(stuck?.keys).toEqual(['k']);
    expect(await fresh.discardPendingWrite(stuck!.seq)).toBe(true);
    expect(await fresh.discardPendingWrite(stuck!.seq)).toBe(false);
    await fresh.flush();
    expect(str(e.gh.state.readFile('k'))).toBe('someone else');
  });
});
