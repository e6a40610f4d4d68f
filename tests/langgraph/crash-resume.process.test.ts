/**
 * A real LangGraph graph (examples/langgraph.ts) in real processes on the real file system:
 * SIGKILL it mid-graph, resume the thread in a new process from the same fsStorage store, and
 * reach the same final state as a run that was never interrupted.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fsStorage } from 'savepoint/fs';
import { runCli } from '../../src/cli/run.js';
import { listAll } from '../../src/contract/storage.js';
import { runToEnd } from '../../examples/langgraph.js';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { ROOT } from '../support/build.js';

const bundled = bundledChildPerFile(join(ROOT, 'tests/langgraph/graph-child.ts'), 'savepoint-lg-crash-');

/** Nodes of one full run: plan, five (agent, tools) rounds, the final agent turn, summarize. */
const ALL_NODES = 13;

function start(args: string[]): {
  kill: () => void;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, [bundled.bundle, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal, stdout, stderr })),
  );
  return { kill: () => child.kill('SIGKILL'), done };
}

const nodesRun = (marker: string): string[] => (existsSync(marker) ? readFileSync(marker, 'utf8').split('\n').filter(Boolean) : []);

async function finalState(args: string[]): Promise<unknown> {
  const r = await start(args).done;
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout);
}

/** How many checkpoints of thread order-42 the store in `dir` holds (opened as the resumed run opens it). */
async function storedCheckpoints(dir: string): Promise<number> {
  const storage = fsStorage({ dir, create: false });
  try {
    return (await listAll(storage, 'langgraph/order-42/history/')).length;
  } finally {
    await storage.close();
  }
}

function silentIo() {
  let out = '';
  return {
    io: { stdout: { write: (t: string) => (out += t) }, stderr: { write: (t: string) => (out += t) }, readStdin: async () => '', env: {} },
    out: () => out,
  };
}

describe('examples/langgraph.ts under SIGKILL', () => {
  it('killed mid-graph and resumed in a new process, it ends in the state of an uninterrupted run', async () => {
    const uninterrupted = await finalState(['--dir', join(bundled.work, 'clean'), '--thread', 'order-42']);
    expect(uninterrupted).toMatchObject({ report: '5 items, total 30 EUR', total: 30 });

    for (const killAfter of [2, 7, 11]) {
      const dir = join(bundled.work, `crash-${killAfter}`);
      const marker = `${dir}.marker`;
      // The file layout: the test watches the history files appear.
      const run = start(['--dir', dir, '--layout', 'files', '--thread', 'order-42', '--delay', '150', '--marker', marker]);
      // LangGraph runs the next node without waiting for the last checkpoint to be stored, and on
      // a busy disk a durable write can take longer than a node: kill once `killAfter` nodes ran
      // and the checkpoint before the last of them is in its file (so stored), not earlier.
      const history = join(dir, 'langgraph', 'order-42', 'history');
      const inFiles = (): number => (existsSync(history) ? readdirSync(history).length : 0);
      const deadline = Date.now() + 60_000;
      const readyToKill = (): boolean => {
        const ran = nodesRun(marker).length;
        return ran >= killAfter && inFiles() >= ran + 1;
      };
      while (!readyToKill() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      run.kill();
      const killed = await run.done;
      expect(killed.signal).toBe('SIGKILL');
      const before = nodesRun(marker).length;
      expect(before).toBeGreaterThanOrEqual(killAfter);
      expect(before).toBeLessThan(ALL_NODES);
      // Nodes whose checkpoint the store holds: the input's and the first step's, then one after each node.
      const stored = await storedCheckpoints(dir);
      const done = stored - 2;
      expect(done).toBeGreaterThanOrEqual(killAfter - 1);

      const resumedMarker = `${dir}.resumed`;
      expect(await finalState(['--dir', dir, '--thread', 'order-42', '--marker', resumedMarker])).toEqual(uninterrupted);
      // It resumed from a checkpoint: it did not start over with the planner, and ran only what no stored checkpoint covers.
      const resumed = nodesRun(resumedMarker);
      expect(resumed[0]).not.toBe('plan');
      expect(resumed.length).toBeLessThanOrEqual(ALL_NODES - done);

      // The store the saver left behind (after a SIGKILL) verifies clean.
      const storage = fsStorage({ dir, create: false });
      const io = silentIo();
      expect(await runCli(['verify', '--profile', 'langgraph'], io.io, { storage })).toBe(0);
      await storage.close();
    }
  });

  it("resumed from any point a crash can leave (a task's writes saved, the next checkpoint not), it ends in the state of an uninterrupted run", async () => {
    // LangGraph saves a task's writes before the checkpoint after that task, and does not wait
    // for that checkpoint before running on. A store cut after checkpoint k and its task's
    // writes is what a SIGKILL between the two leaves; the example once read LangGraph's empty
    // `next` there as a finished thread and started it over (CI saw '0 items, total 26 EUR').
    const clean = join(bundled.work, 'cut-clean');
    const uninterrupted = await runToEnd(clean, 'order-42', {}, 'files');
    const run = join('langgraph', 'order-42');
    const ids = readdirSync(join(clean, run, 'history')).sort();
    expect(ids.length).toBe(ALL_NODES + 2); // the input's checkpoint, the first step's, one after each node
    for (let k = 1; k < ids.length; k++) {
      for (const withWrites of [true, false]) {
        const dir = join(bundled.work, `cut-${k}-${withWrites}`);
        mkdirSync(join(dir, run, 'history'), { recursive: true });
        for (const id of ids.slice(0, k)) cpSync(join(clean, run, 'history', id), join(dir, run, 'history', id));
        for (let sequence = 1; sequence <= (withWrites ? k : k - 1); sequence++) {
          const parts = join(clean, run, 'parts', String(sequence));
          if (existsSync(parts)) cpSync(parts, join(dir, run, 'parts', String(sequence)), { recursive: true });
        }
        const resumed = await runToEnd(dir, 'order-42');
        expect({ k, withWrites, resumed }).toEqual({ k, withWrites, resumed: uninterrupted });
      }
    }
  });
});
