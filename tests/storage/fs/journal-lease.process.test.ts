/**
 * The journal lock has a lease (DESIGN invariant 7): a writer process frozen with SIGSTOP
 * while it holds the lock blocks the other processes on the directory for one lease at
 * most, and once thawed its own later commits neither corrupt nor interleave with what the
 * others committed meanwhile (regression: a paused holder counted as alive, and every other
 * process's writes failed with a lock timeout for as long as it stayed paused).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsStorage } from 'savepoint/fs';
import { utf8Decode } from '../../../src/codec/utf8.js';
import { buildChildModule, spawnChild, type ChildModule, type LineChild } from './child.js';
import { lockHeldBy } from '../../support/lock-holder.js';

let module: ChildModule;
const root = mkdtempSync(join(tmpdir(), 'savepoint-fs-jlease-'));
beforeAll(async () => {
  module = await buildChildModule();
});
afterAll(() => {
  module?.dispose();
  rmSync(root, { recursive: true, force: true });
});

const LOCK = '.sp\\lock-\\journal';

/** The steps a worker's output says were acknowledged. */
const acked = (w: LineChild): number[] => w.lines.filter((l) => l.startsWith('ack ')).map((l) => Number(l.split(' ')[2]));

describe('the journal lock lease', () => {
  it('a holder frozen with SIGSTOP blocks the others one lease at most; thawed, it corrupts nothing', async () => {
    const dir = join(root, 'stop');
    const a = spawnChild(module, 'journal-share-worker.mjs', [dir, 'run-a']);
    let b: LineChild | undefined;
    try {
      await a.waitFor((l) => l === 'ready');
      a.send('go');
      await a.waitFor((l) => l.startsWith('ack 20 '));
      // Freeze A at a moment it holds the lock.
      let frozen = false;
      for (let i = 0; i < 500 && !frozen; i++) {
        a.proc.kill('SIGSTOP');
        await sleep(5);
        frozen = lockHeldBy(dir, join(dir, LOCK), a.proc.pid!);
        if (!frozen) {
          a.proc.kill('SIGCONT');
          await sleep(1 + Math.random() * 4);
        }
      }
      expect(frozen).toBe(true);
      b = spawnChild(module, 'journal-share-worker.mjs', [dir, 'run-b']);
      await b.waitFor((l) => l === 'ready');
      b.send('go');
      await b.waitFor((l) => l.startsWith('ack 50 '), 60_000);
      expect(b.lines.filter((l) => l.startsWith('fail '))).toEqual([]);
      // Thawed: A goes on (its commit under way, if any, is refused: its lease ran out).
      a.proc.kill('SIGCONT');
      const seen = acked(a).length;
      await a.waitFor((l) => l.startsWith(`ack ${seen + 20} `), 60_000);
      for (const w of [a, b]) w.send('stop');
      await Promise.all([a, b].map((w) => w.waitFor((l) => l.startsWith('done '), 60_000)));
      const refusals = a.lines.filter((l) => l.startsWith('fail '));
      for (const line of refusals) expect(line).toMatch(/journal_lease_lost|lock_timeout/);
      expect(b.lines.filter((l) => l.startsWith('fail '))).toEqual([]);
    } finally {
      a.proc.kill('SIGKILL');
      b?.proc.kill('SIGKILL');
      await a.exited;
      await b?.exited;
    }
    // Everything acknowledged is there, and each run's latest holds its last acknowledged step or a later one.
    const store = fsStorage({ dir, journal: true });
    try {
      for (const [run, w] of [
        ['run-a', a],
        ['run-b', b!],
      ] as const) {
        const steps = acked(w);
        for (const n of steps) {
          const got = await store.get(`checkpoints/${run}/history/cp_${String(n).padStart(6, '0')}.json`);
          expect(got && (JSON.parse(utf8Decode(got.bytes)) as { n: number }).n).toBe(n);
        }
        const latest = await store.get(`checkpoints/${run}/latest.json`);
        expect((JSON.parse(utf8Decode(latest!.bytes)) as { n: number }).n).toBeGreaterThanOrEqual(Math.max(...steps));
      }
    } finally {
      await store.close();
    }
  }, 180_000);
});
