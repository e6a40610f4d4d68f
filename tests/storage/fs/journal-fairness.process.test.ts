/**
 * Every process on a journaled directory makes progress: two and eight real processes, each
 * checkpointing its own run with a few milliseconds between steps, share the journal lock.
 * Measured by counts, not time: once the busiest process has acknowledged TARGET steps,
 * every other must have acknowledged a fair part of that, and none may have been refused
 * (regression: one process acknowledged thousands, the other none — its lock wait ran out
 * while the first took the lock back at once after each release).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildChildModule, spawnChild, type ChildModule, type LineChild } from './child.js';

let module: ChildModule;
const root = mkdtempSync(join(tmpdir(), 'savepoint-fs-fair-'));
beforeAll(async () => {
  module = await buildChildModule();
});
afterAll(() => {
  module?.dispose();
  rmSync(root, { recursive: true, force: true });
});

/** Runs `count` workers until one has acknowledged `target` steps; each one's acks and fails. */
export async function share(dir: string, count: number, target: number): Promise<{ acks: number; fails: number; failures: string[] }[]> {
  const workers: LineChild[] = Array.from({ length: count }, (_, i) => spawnChild(module, 'journal-share-worker.mjs', [dir, `run-${i}`]));
  try {
    await Promise.all(workers.map((w) => w.waitFor((l) => l === 'ready')));
    for (const w of workers) w.send('go');
    await Promise.race(workers.map((w) => w.waitFor((l) => l.startsWith(`ack ${target} `), 120_000)));
    for (const w of workers) w.send('stop');
    const done = await Promise.all(workers.map((w) => w.waitFor((l) => l.startsWith('done '), 60_000)));
    return done.map((line, i) => {
      const [, acks, fails] = line.split(' ');
      return { acks: Number(acks), fails: Number(fails), failures: workers[i]!.lines.filter((l) => l.startsWith('fail ')).slice(0, 3) };
    });
  } finally {
    for (const w of workers) w.proc.kill('SIGKILL');
  }
}

describe('the journal lock is shared fairly between processes', () => {
  it.each([
    [2, 300, 4],
    [8, 120, 8],
  ])(
    '%i processes: each acknowledges a fair share, none is refused',
    async (count, target, fraction) => {
      const dir = join(root, `p${count}`);
      const results = await share(dir, count, target);
      for (const r of results) {
        expect(r.failures).toEqual([]);
        expect(r.fails).toBe(0);
        // The busiest reached `target`; every other has at least target / fraction.
        expect(r.acks).toBeGreaterThanOrEqual(Math.floor(target / fraction));
      }
    },
    240_000,
  );
});
