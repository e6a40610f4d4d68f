/**
 * Fencing with real processes on the real file system: a writer stops itself with SIGSTOP
 * inside a write, its lease runs out, another process takes the run over and writes, then
 * the first gets SIGCONT. Its in-flight checkpoint must be refused (checkpoint_run_locked),
 * never acknowledged, and history must hold no sequence twice.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { startJsonChild as startChild } from '../support/line-child.js';
import { historyOf } from '../support/runs.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const bundled = bundledChildPerFile(join(root, 'tests/fixtures/writer/lease-child.ts'), 'savepoint-lease-proc-');
const sleepMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const leaseMs = 1500;

describe('a writer process stopped (SIGSTOP) past its lease, woken (SIGCONT) after a takeover', () => {
  it('has its in-flight checkpoint refused with checkpoint_run_locked; the new holder goes on; no duplicate sequence', async () => {
    const dir = join(bundled.work, 'stale');
    const runId = 'lease-run';
    const a = startChild(bundled.bundle, ['stale', dir, runId, String(leaseMs)]);
    const b = startChild(bundled.bundle, ['taker', dir, runId, String(leaseMs)]);
    try {
      expect(await a.waitFor((l) => l.type === 'ack' || l.type === 'fail', 20_000)).toMatchObject({ type: 'ack', sequence: 1 });
      expect(await b.waitFor((l) => l.type === 'ready', 20_000)).toBeDefined();
      a.child.stdin!.write('go\n');
      expect(await a.waitFor((l) => l.type === 'frozen', 20_000)).toBeDefined();
      await sleepMs(leaseMs * 2); // the stopped process renews nothing: its lease runs out

      b.child.stdin!.write('cp\n');
      const bFirst = await b.waitFor((l) => l.type === 'ack' || l.type === 'fail', 20_000);
      expect(bFirst, JSON.stringify(bFirst)).toMatchObject({ type: 'ack' });

      a.child.kill('SIGCONT');
      const results = (): typeof a.lines => a.lines.filter((l) => l.type === 'ack' || l.type === 'fail');
      expect(await a.waitFor(() => results().length >= 2, 20_000)).toBeDefined();
      const woken = results()[1]!;
      expect(woken).toMatchObject({ type: 'fail', reason: 'checkpoint_run_locked' }); // never acknowledged
      expect(woken.message).toMatch(new RegExp(`taken over.*pid ${b.child.pid} on this host`));

      b.child.stdin!.write('cp\n');
      expect(await b.waitFor((l) => l.type === 'ack' && l.sequence === (bFirst!.sequence as number) + 1, 20_000)).toBeDefined();
      b.child.stdin!.write('close\n');
      await b.exited;
      await a.exited;

      const history = await historyOf(fsStorage({ dir, journal: false }), defaultProfile, runId);
      const sequences = history.map((s) => s.sequence);
      expect(new Set(sequences).size).toBe(sequences.length);
      for (const ack of b.lines.filter((l) => l.type === 'ack')) {
        expect(history.filter((s) => s.sequence === ack.sequence).map((s) => s.id)).toEqual([ack.id]);
      }
    } finally {
      a.child.kill('SIGKILL');
      b.child.kill('SIGKILL');
    }
  }, 60_000);
});
