/**
 * Runs aimed at the fs journal and at power loss: `journal-fairness` (two and eight writer
 * processes on one journaled directory: each must acknowledge a fair share and none be
 * refused), `erofs` (a store on a read-only mount, in both fs modes: reads answer, writes
 * fail with a CheckpointError, nothing acknowledged is lost) and `power-loss` (every crash
 * state a power cut can leave, see tests/support/power-loss/: without the journal, with it, and
 * as `fsStorage({ dir })` comes).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fsStorage } from '../../src/entries/fs.js';
import { planResume } from '../../src/index.js';
import { powerLossSweep } from '../../tests/support/power-loss/scenario.js';
import { watchLines, type LineChild } from '../../tests/support/line-child.js';
import { describe, profile, record, result, tempDir, writer, type CampaignRun, type RunResult } from './shared.js';

const SHARE = join(fileURLToPath(new URL('.', import.meta.url)), 'share-writer.ts');

/** `count` writer processes on one journaled directory until the busiest acknowledged `target`: each one's acks and refusals. */
async function share(dir: string, count: number, target: number): Promise<{ acks: number; fails: number; first?: string }[]> {
  const children: LineChild[] = Array.from({ length: count }, (_, i) =>
    watchLines(spawn(process.execPath, ['--import', 'tsx', SHARE, dir, `run-${i}`], { stdio: ['pipe', 'pipe', 'pipe'] })),
  );
  try {
    await Promise.all(children.map((c) => c.waitFor((l) => l === 'ready', 60_000)));
    for (const c of children) c.send('go');
    await Promise.race(children.map((c) => c.waitFor((l) => l === `ack ${target}`, 300_000)));
    for (const c of children) c.send('stop');
    const done = await Promise.all(children.map((c) => c.waitFor((l) => l.startsWith('done '), 60_000)));
    return done.map((line, i) => {
      const [, acks, fails] = line.split(' ');
      const first = children[i]!.lines.find((l) => l.startsWith('fail '));
      return { acks: Number(acks), fails: Number(fails), ...(first ? { first } : {}) };
    });
  } finally {
    for (const c of children) c.proc.kill('SIGKILL');
  }
}

export const journalFairnessRun: CampaignRun = {
  name: 'journal-fairness',
  what: 'two and eight writer processes checkpointing their own runs on one journaled directory; each must acknowledge at least a quarter of the busiest one’s count, none refused',
  async run(quick) {
    const r = result();
    const tmp = tempDir('fair');
    try {
      for (const [count, target] of quick
        ? [
            [2, 150],
            [8, 60],
          ]
        : [
            [2, 1000],
            [8, 300],
          ]) {
        const dir = join(tmp.dir, `p${count}`);
        mkdirSync(dir);
        const got = await share(dir, count!, target!);
        r.notes.push(
          `${count} processes: acknowledged ${got.map((g) => g.acks).join(' / ')}, refused ${got.map((g) => g.fails).join(' / ')}`,
        );
        for (const g of got) {
          record(
            r,
            g.fails > 0
              ? `${count} processes: ${g.fails} refused (${g.first})`
              : g.acks < target! / 4
                ? `${count} processes: one acknowledged ${g.acks} of ${target}`
                : undefined,
          );
        }
      }
    } finally {
      tmp.dispose();
    }
    return r;
  },
};

/** One read-only trial of `journal` mode: what went wrong, if anything. */
async function readOnlyTrial(dir: string, ro: string, journal: boolean): Promise<string | undefined> {
  const rw = fsStorage({ dir, cleanupOnOpen: false, journal });
  let last = 0;
  const w = writer(rw, 'run-ro');
  for (let i = 0; i < 5; i++) {
    const c = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
    if (c.ok) last = c.snapshot.sequence;
  }
  await w.close();
  await rw.close();
  execFileSync('mount', ['--bind', dir, ro], { stdio: 'ignore' });
  try {
    execFileSync('mount', ['-o', 'remount,bind,ro', ro], { stdio: 'ignore' });
    const store = fsStorage({ dir: ro, cleanupOnOpen: false, journal });
    try {
      const plan = await planResume({ storage: store, profile, runId: 'run-ro' }).catch((err: unknown) => err);
      if (!(plan && typeof plan === 'object' && 'snapshot' in plan)) return `planResume on the read-only disk: ${describe(plan)}`;
      if ((plan as { snapshot: { sequence: number } }).snapshot.sequence < last) return 'planResume on the read-only disk lost a snapshot';
      const w2 = writer(store, 'run-ro');
      const c = await w2.checkpoint({ source: 'manual', status: 'in_progress', payload: { ro: true } });
      await w2.close().catch(() => undefined);
      if (c.ok) return 'a checkpoint on a read-only disk was acknowledged';
      if (describe(c.error).startsWith('raw')) return `untyped failure: ${describe(c.error)}`;
    } finally {
      await store.close().catch(() => undefined);
    }
  } finally {
    execFileSync('umount', [ro], { stdio: 'ignore' });
  }
  const again = fsStorage({ dir, cleanupOnOpen: false, journal });
  try {
    const plan = await planResume({ storage: again, profile, runId: 'run-ro' });
    return plan.snapshot.sequence >= last
      ? undefined
      : `resumed ${plan.snapshot.sequence} after the disk was writable again, acknowledged ${last}`;
  } finally {
    await again.close();
  }
}

export const erofsRun: CampaignRun = {
  name: 'erofs',
  what: 'a store opened on a read-only mount of its directory, direct and journal: reads answer the last acknowledged snapshot, writes fail with a CheckpointError, nothing is lost',
  async run(quick) {
    const r = result();
    if (process.platform !== 'linux' || process.getuid?.() !== 0)
      return { ...r, skipped: 'needs root on Linux for a read-only bind mount' };
    const rounds = quick ? 1 : 4;
    for (let i = 0; i < rounds; i++) {
      for (const journal of [false, true]) {
        const tmp = tempDir('erofs');
        const dir = join(tmp.dir, 'store');
        const ro = join(tmp.dir, 'ro');
        mkdirSync(dir);
        mkdirSync(ro);
        try {
          const problem = await readOnlyTrial(dir, ro, journal).catch((err: unknown) => `threw ${describe(err)}`);
          record(r, problem === undefined ? undefined : `${journal ? 'journal' : 'direct'}: ${problem}`);
        } catch {
          return { ...r, skipped: 'mount --bind failed here (no privilege in this container)' };
        } finally {
          tmp.dispose();
        }
      }
    }
    return r;
  },
};

export const powerLossRun: CampaignRun = {
  name: 'power-loss',
  what: 'every on-disk state a power cut can leave during a writer’s life (POSIX rules: unsynced writes and renames lost in any subset, torn writes), resumed from, direct, journal and the default',
  async run(quick) {
    const r: RunResult = result();
    for (const mode of ['direct', 'journal', 'default'] as const) {
      const got = await powerLossSweep(mode, { randomPerPoint: quick ? 0 : 4 });
      r.tried += got.states;
      r.failed += got.failed;
      r.notes.push(`${mode}: ${got.calls} calls recorded, ${got.states} crash states, ${got.failed} failed`);
      for (const p of got.problems) if (r.notes.length < 8) r.notes.push(p);
    }
    return r;
  },
};
