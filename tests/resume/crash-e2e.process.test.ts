/**
 * End to end with real processes on the real file system: a child writes checkpoints
 * with the writer on fsStorage and is killed with SIGKILL mid-run; a new process resumes
 * with planResume and continues writing. Repeated several times per profile, then the
 * whole history is checked: the continued sequence and state are right, and no
 * acknowledged checkpoint was lost (DESIGN.md invariant 1).
 *
 * The child (tests/fixtures/resume/crash-child.ts) is bundled once with esbuild so each
 * start costs one plain `node` start.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { bundledChildPerFile } from '../support/bundle-child.js';
import { describe, expect, it } from 'vitest';
import { hostname } from 'node:os';
import { readFileSync } from 'node:fs';
import { createWriter, listAll, planResume, type Profile } from 'savepoint';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { readSnapshot } from 'savepoint/toolkit';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { fsStorage } from 'savepoint/fs';
import { faultyStorage } from 'savepoint/testing';

const root = fileURLToPath(new URL('../..', import.meta.url));
const fixtures = join(root, 'tests/fixtures/resume');
const bundled = bundledChildPerFile(join(fixtures, 'crash-child.ts'), 'savepoint-resume-e2e-');

interface Line {
  type: string;
  pid: number;
  sequence?: number;
  counter?: number;
  nextSequence?: number;
  origin?: string;
  latest?: string;
  message?: string;
}

/** Runs the child; resolves its JSON lines once it exits (SIGKILLed after `killAfterAcks` acknowledgements, if given). */
function runChild(
  dir: string,
  profile: string,
  runId: string,
  count: number | 'forever',
  killAfterAcks?: number,
): Promise<{ lines: Line[]; signal: NodeJS.Signals | null; code: number | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bundled.bundle, dir, profile, runId, String(count), fixtures], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: Line[] = [];
    let acks = 0;
    createInterface({ input: child.stdout }).on('line', (text) => {
      let line: Line;
      try {
        line = JSON.parse(text) as Line;
      } catch {
        return; // a line cut by SIGKILL cannot be an acknowledgement
      }
      lines.push(line);
      if (line.type === 'ack' && ++acks === killAfterAcks) child.kill('SIGKILL');
    });
    child.once('error', reject);
    child.once('exit', (code, signal) => resolve({ lines, signal, code }));
  });
}

async function crashAndResume(profile: Profile<unknown>, runId: string, counterOf: (payload: unknown) => number): Promise<void> {
  const dir = join(bundled.work, `${profile.name}-store`);
  const acked = new Map<number, number>(); // sequence → counter, of every acknowledged checkpoint
  let lastAcked = 0;
  const rounds = 5;
  for (let round = 0; round < rounds; round++) {
    const killAfter = 1 + Math.floor(Math.random() * 6);
    const { lines, signal } = await runChild(dir, profile.name, runId, 'forever', killAfter);
    expect(signal).toBe('SIGKILL');
    expect(lines.find((l) => l.type === 'error')).toBeUndefined();
    const plan = lines.find((l) => l.type === 'plan' || l.type === 'fresh')!;
    if (round === 0) expect(plan.type).toBe('fresh');
    else {
      // Resumed in a new process: nothing acknowledged is lost, the restored state is that snapshot's.
      expect(plan.type).toBe('plan');
      expect(plan.sequence).toBeGreaterThanOrEqual(lastAcked);
      expect(plan.counter).toBe(plan.sequence);
      expect(plan.nextSequence).toBe(plan.sequence! + 1);
    }
    const acks = lines.filter((l) => l.type === 'ack');
    expect(acks.length).toBeGreaterThanOrEqual(killAfter);
    // The continued sequence follows the restored one, and the state continues from it.
    const first = plan.type === 'plan' ? plan.nextSequence! : 1;
    acks.forEach((a, i) => {
      expect(a.sequence).toBe(first + i);
      expect(a.counter).toBe(a.sequence);
      acked.set(a.sequence!, a.counter!);
    });
    lastAcked = acks.at(-1)!.sequence!;
  }

  // A last process resumes, writes two more and closes cleanly.
  const final = await runChild(dir, profile.name, runId, 2);
  expect(final.code).toBe(0);
  const plan = final.lines.find((l) => l.type === 'plan')!;
  expect(plan.sequence).toBeGreaterThanOrEqual(lastAcked);
  const done = final.lines.filter((l) => l.type === 'ack');
  expect(done.map((a) => a.sequence)).toEqual([plan.sequence! + 1, plan.sequence! + 2]);

  // The whole history, read back in this process: contiguous sequences 1..N, each once, counter === sequence.
  const storage = fsStorage({ dir });
  const resumed = await planResume({ storage, profile, runId });
  const lastSequence = done.at(-1)!.sequence!;
  expect(resumed.snapshot.sequence).toBe(lastSequence);
  expect(resumed.source).toMatchObject({ origin: 'latest', latest: 'valid' });
  expect(resumed.skipped).toEqual([]);
  const sequences: number[] = [];
  for (const entry of await listAll(storage, profile.layout.runsPrefix)) {
    const info = profile.layout.classify(entry.key);
    if (info?.kind !== 'history' || info.runId !== runId) continue;
    const snapshot = (await readSnapshot(storage, profile, entry.key))!;
    expect(counterOf(snapshot.payload)).toBe(snapshot.sequence);
    sequences.push(snapshot.sequence);
  }
  sequences.sort((a, b) => a - b);
  expect(sequences).toEqual(Array.from({ length: lastSequence }, (_, i) => i + 1));
  for (const [sequence, counter] of acked) expect(counter).toBe(sequence);
  expect(await storage.get(profile.layout.lockKey(runId))).toBeUndefined();
  await storage.close();
}

describe('crash and resume across processes (writer + fsStorage + SIGKILL)', () => {
  it('phasedWorkflow (history keys derivable)', async () => {
    await crashAndResume(
      phasedWorkflow as Profile<unknown>,
      '1b4e28ba-2fa1-41d2-883f-0016d3cca427',
      (p) => (p as { state_snapshot: { cost_accumulated: number } }).state_snapshot.cost_accumulated,
    );
  });

  it('snapshotLifecycle (history by snapshot id)', async () => {
    await crashAndResume(
      snapshotLifecycle as Profile<unknown>,
      'session-e2e',
      (p) => (p as { step_state: { step_ordinal: number } }).step_state.step_ordinal,
    );
  });
});

describe('a crash exactly between the history write and the latest write (fsStorage, deterministic)', () => {
  const cases = [
    {
      profile: phasedWorkflow as Profile<unknown>,
      runId: '9f0d4c2e-6b1a-4d3e-8f2a-1c2b3d4e5f60',
      payload: 'phased-workflow.payload.json',
      source: 'expensive_op',
      via: 'probe',
    },
    {
      profile: snapshotLifecycle as Profile<unknown>,
      runId: 'session-gap',
      payload: 'snapshot-lifecycle.payload.json',
      source: 'step_boundary',
      via: 'scan',
    },
  ] as const;

  it.each(cases)(
    '$profile.name: the newer history entry wins ($via), and a new writer continues after it',
    async ({ profile, runId, payload, source, via }) => {
      const dir = join(bundled.work, `${profile.name}-gap`);
      const base = JSON.parse(readFileSync(join(fixtures, payload), 'utf8')) as Record<string, unknown>;
      const state = (n: number): unknown =>
        profile === snapshotLifecycle
          ? { ...base, step_state: { ...(base.step_state as object), step_ordinal: n } }
          : { ...base, state_snapshot: { ...(base.state_snapshot as object), cost_accumulated: n } };
      // Direct mode: a checkpoint's files are separate puts (the journal commits them as one batch, which has no such gap).
      const inner = fsStorage({ dir, journal: false });
      const latestKey = profile.layout.latestKey(runId);
      let armed = false;
      // The "process" dies at the put of latest: history is durable, latest and index are not.
      const dying = faultyStorage(inner, {
        at: (op) => (armed && op.operation === 'put' && op.keys[0] === latestKey ? 'crash' : undefined),
      });
      const deadPid = 2 ** 22 + 12345; // a pid no process has: the lock it leaves is a dead writer's
      const writer = createWriter({
        storage: dying,
        profile,
        runId,
        heartbeatIntervalMs: false,
        maxAttempts: 1,
        lockIdentity: { pid: deadPid, hostname: hostname() },
      });
      for (let n = 1; n <= 3; n++) expect((await writer.checkpoint({ source, status: 'in_progress', payload: state(n) })).ok).toBe(true);
      armed = true;
      expect((await writer.checkpoint({ source, status: 'in_progress', payload: state(4) })).ok).toBe(false);
      expect(dying.crashed).toBe(true);

      const plan = await planResume({ storage: inner, profile, runId });
      expect(plan.snapshot.sequence).toBe(4);
      expect(plan.source).toMatchObject({ origin: via, latest: 'stale' });
      expect(plan.warnings.map((w) => w.code)).toContain('resume_latest_stale');
      expect(plan.nextSequence).toBe(5);

      const next = createWriter({ storage: inner, profile, runId, heartbeatIntervalMs: false, isProcessAlive: (pid) => pid !== deadPid });
      const result = await next.checkpoint({ source, status: 'in_progress', payload: state(5) });
      expect(result).toMatchObject({ ok: true, sequence: 5 });
      await next.close();
      const after = await planResume({ storage: inner, profile, runId });
      expect(after.snapshot.sequence).toBe(5);
      expect(after.source.origin).toBe('latest');
      await inner.close();
    },
  );
});
