/**
 * Power loss, simulated, for fsStorage in both modes: the calls of a writer's life are
 * recorded — opening the store, checkpoints (in journal mode: commits, applies and journal
 * checkpoints, the journal switching files every few records), a prune, closing — and then
 * of a recovery (a store opened on a state with journal records not applied, resuming the
 * run). Every crash state those calls can leave (crash-states.ts) is written out, the store
 * opened on it and the run resumed: no checkpoint acknowledged before the crash may be
 * lost, and the run must take a new checkpoint.
 */
import { existsSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fsStorage } from '../../../src/entries/fs.js';
import {
  createWriter,
  defaultProfile,
  keepLast,
  planResume,
  runRetention,
  CheckpointError,
  type StorageAdapter,
} from '../../../src/index.js';
import { durableState, forEachCrashState, type CrashState } from './crash-states.js';
import { writeTree, type Op, type Tree } from './model.js';
import { record } from './recorder.js';

/**
 * `direct`: without the journal. `journal`: with it, switching files and checkpointing every
 * kilobyte, so a life crosses several switches. `default`: what `fsStorage({ dir })` does (the
 * journal, a megabyte per file: preallocated files that a life never fills).
 */
export type FsMode = 'direct' | 'journal' | 'default';
const RUN = 'run-p';
const profile = defaultProfile;

const MODE_OPTIONS: Record<FsMode, { journal?: boolean; journalCheckpointBytes?: number }> = {
  direct: { journal: false },
  journal: { journal: true, journalCheckpointBytes: 1024 },
  default: {},
};

const open = (dir: string, mode: FsMode): StorageAdapter => fsStorage({ dir, cleanupOnOpen: true, ...MODE_OPTIONS[mode] });

/** A memory file system when there is one: the states are many and their fsyncs are no part of what is checked. */
const SCRATCH = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

function scratch(label: string): { dir: string; dispose(): void } {
  const dir = realpathSync(mkdtempSync(join(SCRATCH, `savepoint-power-${label}-`)));
  return { dir, dispose: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Records `work` on a store opened over `base`; the calls, in order, with the acknowledgements among them. */
async function recordWork(
  base: Tree,
  mode: FsMode,
  work: (storage: StorageAdapter, ack: (seq: number) => void) => Promise<void>,
): Promise<Op[]> {
  const tmp = scratch('rec');
  try {
    writeTree(base, tmp.dir);
    const rec = record(tmp.dir, base);
    try {
      const storage = open(tmp.dir, mode);
      await work(storage, (seq) => rec.ack(RUN, seq));
      await storage.close();
    } finally {
      rec.stop();
    }
    return rec.ops;
  } finally {
    tmp.dispose();
  }
}

async function checkpoints(storage: StorageAdapter, count: number, ack: (seq: number) => void, takeover?: 'force'): Promise<void> {
  const w = createWriter({
    storage,
    profile,
    runId: RUN,
    heartbeatIntervalMs: false,
    coalesceWindowMs: 0,
    ...(takeover ? { takeover } : {}),
  });
  for (let i = 0; i < count; i++) {
    const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: i, pad: 'p'.repeat(64) } });
    if (r.ok) ack(r.snapshot.sequence);
  }
  await w.close();
}

/** The first life: checkpoints, a prune, more checkpoints, close. */
const firstLife = (storage: StorageAdapter, ack: (seq: number) => void): Promise<void> =>
  (async () => {
    await checkpoints(storage, 4, ack);
    await runRetention({ storage, profile, policy: { rules: [keepLast(2)] }, log: false });
    await checkpoints(storage, 2, ack, 'force');
  })();

/** What is wrong with resuming from `state` (undefined: nothing). */
export async function resumeProblem(state: CrashState, mode: FsMode): Promise<string | undefined> {
  const tmp = scratch('state');
  try {
    writeTree(state.tree, tmp.dir);
    const storage = open(tmp.dir, mode);
    try {
      const acked = Math.max(0, ...state.acked.filter((a) => a.run === RUN).map((a) => a.sequence));
      try {
        const plan = await planResume({ storage, profile, runId: RUN });
        if (plan.snapshot.sequence < acked) return `resumed sequence ${plan.snapshot.sequence}, acknowledged ${acked}`;
      } catch (err) {
        if (acked > 0 || !(err instanceof CheckpointError)) return `planResume threw ${String(err)} with ${acked} acknowledged`;
      }
      const w = createWriter({ storage, profile, runId: RUN, heartbeatIntervalMs: false, coalesceWindowMs: 0, takeover: 'force' });
      const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { resumed: true } });
      await w.close().catch(() => undefined);
      if (!r.ok) return `the run could not checkpoint again: ${r.reasonCode} ${r.error.message}`;
      return undefined;
    } finally {
      await storage.close().catch(() => undefined);
    }
  } catch (err) {
    return `threw ${String(err)}`;
  } finally {
    tmp.dispose();
  }
}

/** What a power-loss sweep found: states checked and the problems (first few). */
export interface PowerLossResult {
  readonly calls: number;
  readonly states: number;
  readonly failed: number;
  readonly problems: string[];
}

/** Records the two lives of `mode` and checks every crash state of each. */
export async function powerLossSweep(mode: FsMode, options: { readonly randomPerPoint?: number } = {}): Promise<PowerLossResult> {
  const empty: Tree = { dirs: new Map([['', new Map()]]), inodes: new Map() };
  const problems: string[] = [];
  let failed = 0;
  let states = 0;
  let calls = 0;
  const check = async (base: Tree, ops: readonly Op[]): Promise<void> => {
    calls += ops.filter((o) => o.t !== 'ack').length;
    states += await forEachCrashState(
      base,
      ops,
      async (state) => {
        const problem = await resumeProblem(state, mode);
        if (problem === undefined) return;
        failed++;
        if (problems.length < 5) problems.push(`${mode}: ${state.label}: ${problem}`);
      },
      options,
    );
  };
  const first = await recordWork(empty, mode, firstLife);
  await check(empty, first);
  // The second life starts from what a power loss right after the first life's last acknowledgement leaves at least: a recovery.
  const base2 = durableState(empty, first.slice(0, first.map((o) => o.t).lastIndexOf('ack') + 1));
  const secondOps = await recordWork(base2, mode, (storage, ack) => checkpoints(storage, 2, ack, 'force'));
  await check(base2, secondOps);
  return { calls, states, failed, problems };
}
