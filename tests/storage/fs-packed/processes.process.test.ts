/**
 * The packed store between real processes (tests/fixtures/storage/packed-worker.mjs): conditional
 * writes decided against every process's acknowledged writes, reads seeing them at once, a writer
 * killed mid-group, a stopped holder of the lock broken after its lease.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPackedFsStorage, type PackedFsOptions } from '../../../src/storage/fs-packed/index.js';
import { LOCK_NAME } from '../../../src/storage/fs-packed/lock.js';
import { buildChildModule, spawnChild, type ChildModule, type LineChild } from '../fs/child.js';
import { lockHeldBy } from '../../support/lock-holder.js';

interface Reply {
  id?: number;
  ok?: boolean;
  version?: string;
  value?: string;
  code?: string;
  reason?: string;
  ack?: string;
  n?: number;
  acked?: string;
  refused?: string;
}

let module: ChildModule;
const root = mkdtempSync(join(tmpdir(), 'savepoint-fs-packed-xproc-'));
beforeAll(async () => {
  module = await buildChildModule('src/storage/fs-packed/index.ts');
});
afterAll(() => {
  module?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);
const replies = (w: LineChild): Reply[] => w.lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Reply);

async function worker(dir: string, options: Omit<PackedFsOptions, 'dir'> = {}): Promise<LineChild> {
  const w = spawnChild(module, 'packed-worker.mjs', [dir, JSON.stringify(options)]);
  await w.waitFor((l) => l === 'ready');
  return w;
}

let nextId = 0;
/** Sends `cmd` and resolves its answer (the line with its id). */
async function ask(w: LineChild, cmd: Record<string, unknown>, timeoutMs = 60_000): Promise<Reply> {
  const id = nextId++;
  w.send(JSON.stringify({ id, ...cmd }));
  return JSON.parse(await w.waitFor((l) => l.startsWith(`{"id":${id},`), timeoutMs)) as Reply;
}

async function stopAll(workers: readonly LineChild[]): Promise<void> {
  for (const w of workers) {
    if (w.proc.exitCode === null && w.proc.signalCode === null) w.send(JSON.stringify({ exit: true }));
  }
  await Promise.all(workers.map((w) => w.exited));
}

describe('the packed store between processes', () => {
  it('conditional increments from three processes lose no update; versions never repeat; every process reads the last', async () => {
    const dir = join(root, 'count');
    const workers = await Promise.all([0, 1, 2].map(() => worker(dir)));
    try {
      const times = 40;
      const done = await Promise.all(workers.map((w) => ask(w, { op: 'count', key: 'counter', times })));
      expect(done.every((r) => r.ok)).toBe(true);
      const acks = workers.flatMap((w) => replies(w).filter((r) => r.ack === 'counter'));
      expect(acks).toHaveLength(times * workers.length);
      // Each value 1..120 acknowledged once: no two processes incremented from the same value.
      expect(new Set(acks.map((a) => a.n)).size).toBe(times * workers.length);
      expect(new Set(acks.map((a) => a.version)).size).toBe(times * workers.length);
      const last = acks.find((a) => a.n === times * workers.length)!;
      for (const w of workers) expect(await ask(w, { op: 'get', key: 'counter' })).toMatchObject({ value: '120', version: last.version });
    } finally {
      await stopAll(workers);
    }
    for (const w of workers) expect(w.stderr()).toBe('');
  });

  it('two processes racing conditional writes on one key: exactly one wins every race', async () => {
    const dir = join(root, 'race');
    const workers = await Promise.all([0, 1].map(() => worker(dir)));
    try {
      for (let round = 0; round < 15; round++) {
        const key = `race-${round}`;
        const at = Date.now() + 40;
        const created = await Promise.all(workers.map((w, i) => ask(w, { op: 'put', key, value: `created by ${i}`, ifAbsent: true, at })));
        expect(
          created.filter((r) => r.ok),
          JSON.stringify(created),
        ).toHaveLength(1);
        expect(created.find((r) => !r.ok)!.code).toBe('checkpoint_conflict');
        const version = created.find((r) => r.ok)!.version;
        const at2 = Date.now() + 40;
        const replaced = await Promise.all(
          workers.map((w, i) => ask(w, { op: 'put', key, value: `replaced by ${i}`, ifVersion: version, at: at2 })),
        );
        expect(
          replaced.filter((r) => r.ok),
          JSON.stringify(replaced),
        ).toHaveLength(1);
        const winner = replaced.findIndex((r) => r.ok);
        for (const w of workers)
          expect(await ask(w, { op: 'get', key })).toMatchObject({ value: `replaced by ${winner}`, version: replaced[winner]!.version });
      }
    } finally {
      await stopAll(workers);
    }
  });

  it('a write acknowledged in one process is read at once in another', async () => {
    const dir = join(root, 'read');
    const workers = await Promise.all([0, 1].map(() => worker(dir)));
    try {
      for (let i = 0; i < 30; i++) {
        const [writer, reader] = i % 2 ? workers : [workers[1]!, workers[0]!];
        const put = await ask(writer!, { op: 'put', key: `k/${i % 4}`, value: `v${i}` });
        expect(put.ok).toBe(true);
        expect(await ask(reader!, { op: 'get', key: `k/${i % 4}` })).toMatchObject({ value: `v${i}`, version: put.version });
      }
    } finally {
      await stopAll(workers);
    }
  });

  it('two processes writing flat out both make progress', async () => {
    const dir = join(root, 'share');
    const workers = await Promise.all([0, 1].map(() => worker(dir)));
    try {
      const floods = workers.map((w, i) => ask(w, { op: 'flood', prefix: `w${i}`, chains: 4 }));
      await sleep(3000);
      for (const w of workers) w.send(JSON.stringify({ op: 'stop' }));
      const done = await Promise.all(floods);
      const acks = done.map((d) => (d as Reply & { acks: number }).acks);
      // Each hold lasts a second at most; then the other process gets the lock.
      expect(Math.min(...acks), JSON.stringify(acks)).toBeGreaterThan(0);
      expect(done.every((d) => (d as Reply & { refusals: number }).refusals === 0)).toBe(true);
    } finally {
      await stopAll(workers);
    }
  });

  // Four chains: groups of several calls, written on the pool; one chain: lone calls, written on the event loop.
  it.each([4, 1])('a writer killed mid-group (%i chains): the others go on, nothing it acknowledged is lost', async (chains) => {
    const dir = join(root, `kill-${chains}`);
    const victim = await worker(dir);
    const other = await worker(dir);
    try {
      victim.send(JSON.stringify({ id: nextId++, op: 'flood', prefix: 'victim', chains }));
      await victim.waitFor((l) => l.includes('"acked"'));
      const counting = ask(other, { op: 'count', key: 'counter', times: 60 });
      await sleep(30 + Math.random() * 150);
      victim.proc.kill('SIGKILL');
      await victim.exited;
      expect((await counting).ok).toBe(true);
    } finally {
      await stopAll([victim, other]);
    }
    const acked = replies(victim).filter((r) => r.acked);
    expect(acked.length).toBeGreaterThan(0);
    const store = createPackedFsStorage({ dir });
    try {
      for (const a of acked) expect(await store.get(a.acked!)).toEqual({ bytes: expect.anything(), version: a.version });
      expect(text((await store.get('counter'))?.bytes)).toBe('60');
      // The store takes writes again (the dead holder's lock, if any, broken).
      await store.put('after', new Uint8Array([1]));
    } finally {
      await store.close();
    }
    // The killed writer's lock token is removed by the next holder.
    expect(readdirSync(dir).filter((name) => name.startsWith(`.sp\\tmp-`) && name.split('-')[2] === String(victim.proc.pid))).toEqual([]);
  });

  it('a holder stopped (SIGSTOP) is broken after its lease; thawed, its late write is not acknowledged and nothing acknowledged is lost', async () => {
    const dir = join(root, 'stop');
    const options = { leaseMs: 600, lockTimeoutMs: 20_000 };
    const stopped = await worker(dir, options);
    let other: LineChild | undefined;
    try {
      stopped.send(JSON.stringify({ id: nextId++, op: 'flood', prefix: 'stopped', chains: 4 }));
      await stopped.waitFor((l) => l.includes('"acked"'));
      let frozen = false;
      for (let i = 0; i < 500 && !frozen; i++) {
        stopped.proc.kill('SIGSTOP');
        await sleep(2);
        frozen = lockHeldBy(dir, join(dir, LOCK_NAME), stopped.proc.pid!);
        if (!frozen) {
          stopped.proc.kill('SIGCONT');
          await sleep(1 + Math.random() * 4);
        }
      }
      expect(frozen).toBe(true);
      other = await worker(dir, options);
      const started = Date.now();
      const counted = await ask(other, { op: 'count', key: 'counter', times: 30 });
      expect(counted.ok).toBe(true);
      // It waited for the lease at most (and a little for the break), not for the stopped process.
      expect(Date.now() - started).toBeLessThan(15_000);
      stopped.proc.kill('SIGCONT');
      const seen = replies(stopped).filter((r) => r.acked).length;
      await stopped.waitFor((l) => replies(stopped).filter((r) => r.acked).length > seen + 20 || l === '', 30_000);
      stopped.send(JSON.stringify({ op: 'stop' }));
      await stopped.waitFor((l) => l.includes('"ok":true'), 30_000);
      for (const r of replies(stopped).filter((x) => x.refused)) expect(r.reason).toMatch(/packed_lease_lost|lock_timeout/);
    } finally {
      stopped.proc.kill('SIGCONT');
      await stopAll(other ? [stopped, other] : [stopped]);
    }
    const store = createPackedFsStorage({ dir });
    try {
      for (const a of replies(stopped).filter((r) => r.acked))
        expect(await store.get(a.acked!), a.acked).toEqual({ bytes: expect.anything(), version: a.version });
      const counterAcks = replies(other!).filter((r) => r.ack === 'counter');
      expect(counterAcks).toHaveLength(30);
      const got = await store.get('counter');
      expect(text(got?.bytes)).toBe('30');
      expect(got?.version).toBe(counterAcks.find((a) => a.n === 30)!.version);
    } finally {
      await store.close();
    }
  }, 120_000);
});
