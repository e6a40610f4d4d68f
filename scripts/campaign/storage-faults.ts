/**
 * Runs against the file system itself: `enospc` (a full tmpfs), `damaged-file` (every kind
 * of damage to a stored file) and `symlink-race` (a run folder swapped for a symbolic link
 * to the outside while the writer writes).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fsStorage } from '../../src/entries/fs.js';
import { listAll, planResume } from '../../src/index.js';
import { gzip } from '../../src/entries/toolkit.js';
import { journalOptions, type JournalMode } from './journal-mode.js';
import { budget, describe, profile, record, result, sleep, tempDir, writer, type CampaignRun } from './shared.js';

/** A run of `mode` (direct, or journal: its two preallocated files must fit in the tmpfs too). */
function enospc(mode: JournalMode | undefined): CampaignRun {
  const journal = mode !== undefined;
  return {
    name: journal ? `enospc-${mode}` : 'enospc',
    what: `a writer${journal ? ' through the journal' : ''} filling a small tmpfs until writes fail; the run must resume from its last acknowledged snapshot and every failure be a CheckpointError`,
    async run(quick) {
      const r = result();
      if (process.platform !== 'linux' || process.getuid?.() !== 0) return { ...r, skipped: 'needs root on Linux to mount a tmpfs' };
      const more = budget(quick, { quick: 2, full: 8 }, { quick: 30, full: 180 });
      while (more()) {
        const tmp = tempDir('enospc');
        try {
          execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${journal ? 320 : 256}k`, 'tmpfs', tmp.dir], { stdio: 'ignore' });
        } catch {
          tmp.dispose();
          return { ...r, skipped: 'mount -t tmpfs failed here (no privilege in this container)' };
        }
        try {
          record(r, await fillUp(tmp.dir, mode));
        } finally {
          execFileSync('umount', [tmp.dir], { stdio: 'ignore' });
          tmp.dispose();
        }
      }
      return r;
    },
  };
}

/** Checkpoints into `dir` until writes fail, then resumes (the store opened again): what went wrong, if anything. */
async function fillUp(dir: string, mode: JournalMode | undefined): Promise<string | undefined> {
  const options = { dir, cleanupOnOpen: false, ...journalOptions(mode === 'journal' ? 'journal-small' : mode) };
  const storage = fsStorage(options);
  let last = 0;
  let failures = 0;
  const raw: string[] = [];
  try {
    const w = writer(storage, 'run-full');
    for (let i = 0; i < 400 && failures < 5; i++) {
      const c = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i, pad: 'x'.repeat(2000) } });
      if (c.ok) last = c.snapshot.sequence;
      else {
        failures++;
        if (describe(c.error).startsWith('raw')) raw.push(describe(c.error));
      }
    }
    await w.close().catch(() => undefined);
  } catch (err) {
    return `threw ${describe(err)}`;
  } finally {
    await storage.close().catch(() => undefined);
  }
  if (failures === 0) return 'the tmpfs never filled up';
  if (raw.length > 0) return `untyped failure: ${raw[0]}`;
  const again = fsStorage(options);
  try {
    const plan = await planResume({ storage: again, profile, runId: 'run-full' });
    return plan.snapshot.sequence >= last ? undefined : `resumed ${plan.snapshot.sequence}, acknowledged ${last}`;
  } catch (err) {
    return last === 0 ? undefined : `resume threw ${describe(err)} with ${last} acknowledged`;
  } finally {
    await again.close().catch(() => undefined);
  }
}

export const enospcRun = enospc(undefined);
export const enospcJournalRun = enospc('journal');

/** Ways to damage a stored file: each returns the new content. */
const DAMAGE: readonly [string, (bytes: Buffer) => Buffer | Uint8Array][] = [
  [
    'flip a byte',
    (b) => {
      const c = Buffer.from(b);
      c[Math.floor(Math.random() * c.length)]! ^= 1 << Math.floor(Math.random() * 8);
      return c;
    },
  ],
  ['truncate', (b) => b.subarray(0, Math.floor(Math.random() * b.length))],
  ['empty', () => Buffer.alloc(0)],
  ['garbage', (b) => Buffer.from(Array.from({ length: b.length }, () => Math.floor(Math.random() * 256)))],
  ['valid JSON, wrong document', () => Buffer.from('{"checkpoint_id":"x","sequence":99}')],
  ['gzip of garbage', (b) => gzip(new Uint8Array(b.reverse()))],
  ['gzip bomb', () => gzip(new Uint8Array(64 * 1024 * 1024))],
];

export const damagedFileRun: CampaignRun = {
  name: 'damaged-file',
  what: 'one stored file of a run damaged in one of 7 ways; planResume must return a valid snapshot or a reason code, never a raw error',
  async run(quick) {
    const r = result();
    const more = budget(quick, { quick: 14, full: 140 }, { quick: 30, full: 180 });
    const tmp = tempDir('damage');
    try {
      for (let trial = 0; more(); trial++) {
        const dir = join(tmp.dir, String(trial));
        mkdirSync(dir);
        const storage = fsStorage({ dir, cleanupOnOpen: false });
        try {
          const w = writer(storage, 'run-d');
          for (let i = 0; i < 4; i++) await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
          await w.close();
          const files = (await listAll(storage, 'checkpoints/run-d/')).map((e) => e.key);
          const key = files[Math.floor(Math.random() * files.length)]!;
          const [how, damage] = DAMAGE[trial % DAMAGE.length]!;
          writeFileSync(join(dir, key), damage(readFileSync(join(dir, key))));
          try {
            const plan = await planResume({ storage, profile, runId: 'run-d' });
            record(r, plan.snapshot.runId === 'run-d' ? undefined : `${how} ${key}: resumed another run's snapshot`);
          } catch (err) {
            record(r, describe(err).startsWith('raw') ? `${how} ${key}: ${describe(err)}` : undefined);
          }
        } finally {
          await storage.close();
        }
      }
    } finally {
      tmp.dispose();
    }
    return r;
  },
};

export const symlinkRaceRun = symlinkRace(undefined);
export const symlinkRaceJournalRun = symlinkRace('journal');

function symlinkRace(mode: JournalMode | undefined): CampaignRun {
  return {
    name: mode ? `symlink-race-${mode}` : 'symlink-race',
    what: `a run's history folder swapped for a symbolic link to an outside folder while the writer writes${mode ? ' through the journal' : ''}; nothing may be written outside the store`,
    async run(quick) {
      const r = result();
      const more = budget(quick, { quick: 3, full: 20 }, { quick: 30, full: 180 });
      while (more()) {
        const tmp = tempDir('symlink');
        const store = join(tmp.dir, 'store');
        const outside = join(tmp.dir, 'outside');
        mkdirSync(store);
        mkdirSync(outside);
        const storage = fsStorage({ dir: store, cleanupOnOpen: false, ...journalOptions(mode) });
        try {
          const w = writer(storage, 'run-s');
          await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i: 0 } });
          const history = join(store, 'checkpoints/run-s/history');
          let swapping = true;
          const swapper = (async () => {
            while (swapping) {
              try {
                renameSync(history, `${history}.real`);
                symlinkSync(outside, history);
                await sleep(1);
                rmSync(history);
                renameSync(`${history}.real`, history);
              } catch {
                // the writer may be creating the folder at this moment: try again
              }
              await sleep(1);
            }
          })();
          for (let i = 1; i < 30; i++) await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
          swapping = false;
          await swapper;
          await w.close().catch(() => undefined);
          const escaped = existsSync(outside) ? readdirSync(outside) : [];
          record(r, escaped.length === 0 ? undefined : `${escaped.length} file(s) written outside the store`);
        } catch (err) {
          record(r, `threw ${describe(err)}`);
        } finally {
          await storage.close();
          tmp.dispose();
        }
      }
      return r;
    },
  };
}
