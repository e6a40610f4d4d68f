/**
 * Runs with real processes: `crash` (a writer killed with SIGKILL at a random moment, then
 * resumed) and `lease-pause` (a writer frozen with SIGSTOP while another takes the run,
 * then thawed). Invariants 1 and 7: no acknowledged snapshot is lost, and no sequence is
 * acknowledged to two writers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fsStorage } from '../../src/entries/fs.js';
import { planResume } from '../../src/index.js';
import { journalOptions, type JournalMode } from './journal-mode.js';
import { budget, describe, profile, record, result, sleep, tempDir, writer, type CampaignRun } from './shared.js';

const CHILD = join(fileURLToPath(new URL('.', import.meta.url)), 'child-writer.ts');

interface Child {
  proc: ChildProcess;
  acks: Map<number, string>;
  ready: Promise<void>;
  exited: Promise<void>;
}

function startChild(dir: string, runId: string, mode?: JournalMode): Child {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD, dir, runId, ...(mode ? [mode] : [])], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const acks = new Map<number, string>();
  let buffer = '';
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  proc.stdout!.on('data', (chunk: Buffer) => {
    buffer += chunk.toString('utf8');
    let nl;
    while ((nl = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (line === 'ready') onReady();
      const m = /^ack (\d+) (\S+)$/.exec(line);
      if (m) acks.set(Number(m[1]), m[2]!);
    }
  });
  proc.stderr!.resume();
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return { proc, acks, ready, exited };
}

export const crashRun: CampaignRun = {
  name: 'crash',
  what: 'a writer process killed with SIGKILL at a random moment; planResume must return the last acknowledged snapshot or a newer one',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 4, full: 25 }, { quick: 30, full: 240 });
    while (more()) {
      const tmp = tempDir('crash');
      try {
        const child = startChild(tmp.dir, 'run-crash');
        await Promise.race([child.ready, sleep(20_000)]);
        await sleep(50 + Math.random() * 400);
        child.proc.kill('SIGKILL');
        await child.exited;
        const lastAck = Math.max(0, ...child.acks.keys());
        const storage = fsStorage({ dir: tmp.dir, cleanupOnOpen: false });
        try {
          if (lastAck === 0) record(r, undefined);
          else {
            const plan = await planResume({ storage, profile, runId: 'run-crash' });
            record(r, plan.snapshot.sequence >= lastAck ? undefined : `resumed ${plan.snapshot.sequence}, acknowledged ${lastAck}`);
          }
        } catch (err) {
          record(r, `planResume threw ${describe(err)} after ${lastAck} acks`);
        } finally {
          await storage.close();
        }
      } finally {
        tmp.dispose();
      }
    }
    return r;
  },
};

/** The spec files under `dir` that do not parse as JSON (a torn file), by path relative to it. */
function tornFiles(dir: string): string[] {
  const torn: string[] = [];
  for (const rel of readdirSync(dir, { recursive: true }).map(String)) {
    if (!rel.endsWith('.json') || rel.includes('.sp\\')) continue;
    try {
      JSON.parse(readFileSync(join(dir, rel), 'utf8'));
    } catch {
      torn.push(rel);
    }
  }
  return torn;
}

/**
 * The journal's campaign: a journaled writer (in `journal` or `journal-rotating`
 * mode, alternately) killed with SIGKILL at a random moment — mid-commit, mid-apply or while
 * the journal is emptied. Before any reopen, every spec file must parse (a reader that is not
 * savepoint never sees a torn file); after reopening (replay), planResume must return the
 * last acknowledged snapshot or a newer one.
 */
export const crashJournalRun: CampaignRun = {
  name: 'crash-journal',
  what: 'a journaled writer killed with SIGKILL at a random moment (also mid-apply and mid-rotation); no torn spec file, no acknowledged snapshot lost',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 6, full: 200 }, { quick: 60, full: 900 });
    for (let trial = 0; more(); trial++) {
      const mode: JournalMode = trial % 2 === 0 ? 'journal' : 'journal-rotating';
      const tmp = tempDir('crash-journal');
      try {
        const child = startChild(tmp.dir, 'run-crash', mode);
        await Promise.race([child.ready, sleep(20_000)]);
        await sleep(30 + Math.random() * 400);
        child.proc.kill('SIGKILL');
        await child.exited;
        const lastAck = Math.max(0, ...child.acks.keys());
        const torn = tornFiles(tmp.dir);
        if (torn.length > 0) {
          record(r, `${mode}: torn spec file(s) after the kill: ${torn.join(', ')}`);
          continue;
        }
        const storage = fsStorage({ dir: tmp.dir, cleanupOnOpen: false, ...journalOptions(mode) });
        try {
          if (lastAck === 0) record(r, undefined);
          else {
            const plan = await planResume({ storage, profile, runId: 'run-crash' });
            record(
              r,
              plan.snapshot.sequence >= lastAck ? undefined : `${mode}: resumed ${plan.snapshot.sequence}, acknowledged ${lastAck}`,
            );
          }
        } catch (err) {
          record(r, `${mode}: planResume threw ${describe(err)} after ${lastAck} acks`);
        } finally {
          await storage.close();
        }
      } finally {
        tmp.dispose();
      }
    }
    return r;
  },
};

export const leasePauseRun: CampaignRun = {
  name: 'lease-pause',
  what: 'a writer frozen with SIGSTOP while another writer takes the run, then thawed; no sequence may be acknowledged to both',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 2, full: 10 }, { quick: 40, full: 240 });
    while (more()) {
      const tmp = tempDir('lease');
      const child = startChild(tmp.dir, 'run-lease');
      try {
        await Promise.race([child.ready, sleep(20_000)]);
        await sleep(200);
        child.proc.kill('SIGSTOP');
        const storage = fsStorage({ dir: tmp.dir, cleanupOnOpen: false });
        const mine = new Map<number, string>();
        try {
          const w = writer(storage, 'run-lease');
          for (let i = 0; i < 5; i++) {
            const c = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { other: i } });
            if (c.ok) mine.set(c.snapshot.sequence, c.snapshot.id);
          }
          child.proc.kill('SIGCONT');
          await sleep(500);
          child.proc.kill('SIGKILL');
          await child.exited;
          await w.close().catch(() => undefined);
        } finally {
          await storage.close();
        }
        const both = [...mine].filter(([seq, id]) => child.acks.has(seq) && child.acks.get(seq) !== id).map(([seq]) => seq);
        record(r, both.length === 0 ? undefined : `sequences acknowledged to both writers: ${both.slice(0, 5).join(', ')}`);
      } catch (err) {
        record(r, `threw ${describe(err)}`);
      } finally {
        child.proc.kill('SIGKILL');
        tmp.dispose();
      }
    }
    return r;
  },
};
