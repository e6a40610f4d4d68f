/**
 * Below the rate-limit floor, checkpoints awaited one at a time (the usual n8n
 * pattern) were never batched — each group commit held one checkpoint, so 4 awaited
 * checkpoints made 4 `cp_` files and 4 commits. Now githubStorage holds writes below the
 * floor in its durable queue (`holdBelowFloor`), each checkpoint resolves `queued` once it
 * is durable there, joins the still-held batch file of the one before, and the queue reaches
 * GitHub as ONE commit holding one `batch_{first}_{last}.json`.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createWriter, planResume, type CheckpointResult, type CheckpointWriter } from 'savepoint';
import { decodeBatchFile, decodeRunIndex } from 'savepoint/toolkit';
import { githubStorage } from 'savepoint/github';
import { initialPhasedPayload, phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { mergeQueuedWrites, type QueuedWrite } from '../../../src/storage/github/emergency-queue.js';
import { bundledChildPerFile } from '../../support/bundle-child.js';
import { envPerTest, text, type Env } from '../../support/github.js';

const env = envPerTest();
/** What each test leaves to undo (emulators to close, folders to remove), newest first. */
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const undo of cleanups.splice(0).reverse()) await undo();
});
const tempDir = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(d, { recursive: true, force: true }));
  return d;
};

const payload = (cost: number): PhasedWorkflowPayload => {
  const p = initialPhasedPayload('phase_1_plan', '2025-12-05T12:00:00.000Z');
  return { ...p, state_snapshot: { ...p.state_snapshot, cost_accumulated: cost } };
};

/** How {@link belowFloor} sets up its store and writer. */
interface BelowFloorOptions {
  /** githubStorage's `holdBelowFloor` bounds. @default the adapter's */
  readonly holdBelowFloor?: { readonly maxWrites: number; readonly maxHoldMs: number };
  /** Stop the clock's own timers before the first checkpoint (only a bound or a flush pushes). @default true */
  readonly stopClock?: boolean;
  /** The writer takes the run lock (its lease commits are then in the log too). @default false */
  readonly lock?: boolean;
}

/**
 * An emulated GitHub store below its rate floor (90 requests left, learned from one answer),
 * with a durable emergency queue, a new run id, and a phased-workflow writer of that run.
 */
async function belowFloor(
  options: BelowFloorOptions = {},
): Promise<{ e: Env; runId: string; writer: CheckpointWriter<PhasedWorkflowPayload> }> {
  const hold = options.holdBelowFloor ? { holdBelowFloor: options.holdBelowFloor } : {};
  const e = await env({ storage: { minWriteIntervalMs: 0, emergencyQueue: { dir: tempDir('savepoint-held-') }, ...hold } });
  const runId = newUuidV4();
  e.gh.rateLimit.set({ remaining: 90 });
  await e.storage.get('probe'); // the adapter learns the budget from this answer
  if (options.stopClock ?? true) e.clock.auto = false;
  const writer = createWriter({
    storage: e.storage,
    profile: phasedWorkflow,
    runId,
    clock: e.clock,
    heartbeatIntervalMs: false,
    coalesceWindowMs: 0,
    ...(options.lock ? {} : { lock: false }),
  });
  return { e, runId, writer };
}

/** Checkpoint `cost` of the run (an `expensive_op` in progress unless told). */
const step = (writer: CheckpointWriter<PhasedWorkflowPayload>, cost: number, source = 'expensive_op', status = 'in_progress') =>
  writer.checkpoint({ source, status, payload: payload(cost) });

/** The names of the files of the run folder `dir` on the emulated GitHub, sorted. */
const namesIn = (e: Env, dir: string): string[] =>
  e.gh.state
    .listFiles()
    .map((f) => f.path)
    .filter((p) => p.startsWith(`${dir}/`))
    .map((p) => p.slice(dir.length + 1))
    .sort();

describe('below the rate-limit floor, awaited checkpoints are batched', () => {
  it('4 checkpoints awaited one at a time resolve queued (durable locally) and reach GitHub as 1 batch file in 1 commit (regression)', async () => {
    // No timer fires while the checkpoints are written: only the size bound or a flush pushes.
    const { e, runId, writer } = await belowFloor({ lock: true });
    expect(e.storage.rateBudget().low).toBe(true);
    const commitsBefore = e.gh.state.log().length;
    const requestsBefore = e.gh.requestLog.length;
    const results: CheckpointResult<PhasedWorkflowPayload>[] = [];
    for (let i = 1; i <= 4; i++) results.push(await step(writer, i));

    const dir = `checkpoints/${runId}`;
    expect(results.map((r) => r.ok && [r.outcome, r.sequence, r.key])).toEqual([
      ['queued', 1, `${dir}/cp_001_expensive_op.json`],
      ['queued', 2, `${dir}/batch_1_2.json`],
      ['queued', 3, `${dir}/batch_1_3.json`],
      ['queued', 4, `${dir}/batch_1_4.json`],
    ]);
    // Durable in the local queue, no checkpoint sent yet (only the run lease was taken).
    expect(
      e.gh.state
        .log()
        .slice(0, e.gh.state.log().length - commitsBefore)
        .filter((c) => !c.message.includes('lock')),
    ).toEqual([]);
    expect(e.storage.isPending(`${dir}/batch_1_4.json`)).toBe(true);
    expect(e.events.some((ev) => ev.type === 'write_queued' && /Rate limit low/.test(ev.message))).toBe(true);

    e.clock.auto = true;
    await writer.close();
    expect(namesIn(e, dir).filter((n) => !n.includes('lock'))).toEqual(['batch_1_4.json', 'index.json', 'latest.json']);
    // The run lease is taken and released on its own (never held: a held renewal could make
    // a live lease look stale); the four checkpoints are one commit.
    const checkpointCommits = e.gh.state
      .log()
      .slice(0, e.gh.state.log().length - commitsBefore)
      .filter((c) => !c.message.includes('lock'));
    expect(checkpointCommits).toHaveLength(1);
    expect(e.gh.requestLog.length - requestsBefore).toBeLessThanOrEqual(16); // was 24 sent write by write
    const members = await decodeBatchFile(
      e.storage,
      phasedWorkflow,
      `${dir}/batch_1_4.json`,
      e.gh.state.readFile(`${dir}/batch_1_4.json`)!,
    );
    expect(members.map((m) => m.ok && m.snapshot.sequence)).toEqual([1, 2, 3, 4]);
    const doc = JSON.parse(new TextDecoder().decode(e.gh.state.readFile(`${dir}/batch_1_4.json`)!)) as { batch_metadata: unknown };
    expect(doc.batch_metadata).toEqual({ first_sequence: 1, last_sequence: 4, checkpoint_count: 4 });
    const index = decodeRunIndex(e.gh.state.readFile(`${dir}/index.json`)!);
    expect(index.checkpoints.map((c) => [c.sequence, c.file_path])).toEqual([1, 2, 3, 4].map((n) => [n, `${dir}/batch_1_4.json`]));
    const plan = await planResume({ storage: e.another(), profile: phasedWorkflow, runId, clock: e.clock });
    expect(plan.snapshot.sequence).toBe(4);
  });

  it('the size bound pushes the held queue as one commit; the next checkpoint starts a new file', async () => {
    const { e, runId, writer } = await belowFloor({ holdBelowFloor: { maxWrites: 3, maxHoldMs: 60_000 } });
    const keys: string[] = [];
    for (let i = 1; i <= 4; i++) {
      const r = await step(writer, i);
      keys.push(r.ok ? `${r.outcome} ${r.key.slice(r.key.lastIndexOf('/') + 1)}` : 'failed');
    }
    // The third held write reached the bound: pushed at once, so it is acknowledged as written.
    expect(keys).toEqual([
      'queued cp_001_expensive_op.json',
      'queued batch_1_2.json',
      'written batch_1_3.json',
      'queued cp_004_expensive_op.json',
    ]);
    e.clock.auto = true;
    await writer.close();
    const dir = `checkpoints/${runId}`;
    expect(namesIn(e, dir)).toEqual(['batch_1_3.json', 'cp_004_expensive_op.json', 'index.json', 'latest.json']);
  });

  it('the time bound: what is held is pushed by the adapter once the oldest held write waited maxHoldMs', async () => {
    const { e, runId, writer } = await belowFloor({ holdBelowFloor: { maxWrites: 100, maxHoldMs: 20_000 } });
    for (let i = 1; i <= 2; i++) expect(await step(writer, i)).toMatchObject({ ok: true, outcome: 'queued' });
    await e.clock.advance(10_000);
    expect(e.storage.stats().queued).toBeGreaterThan(0); // not yet
    e.clock.auto = true;
    await e.clock.advance(11_000);
    await vi.waitFor(() => expect(e.storage.stats().queued).toBe(0), { timeout: 10_000 });
    expect(e.gh.state.readFile(`checkpoints/${runId}/batch_1_2.json`)).toBeDefined();
    await writer.close();
  });

  it("a terminal status pushes what is held at once: the run's end is on GitHub when checkpoint() resolves", async () => {
    const { e, runId, writer } = await belowFloor({ stopClock: false });
    const first = await step(writer, 1);
    const last = await step(writer, 2, 'phase_complete', 'completed');
    expect([first.ok && first.outcome, last.ok && last.outcome, last.ok && last.key]).toEqual([
      'queued',
      'written',
      `checkpoints/${runId}/batch_1_2.json`,
    ]);
    expect(e.storage.stats().queued).toBe(0);
    expect(e.gh.state.readFile(`checkpoints/${runId}/batch_1_2.json`)).toBeDefined();
    expect(e.gh.state.readFile(`checkpoints/${runId}/cp_001_expensive_op.json`)).toBeUndefined();
    await writer.close();
  });

  it('mergeQueuedWrites: the end state under the first conditions; a file created and deleted within the queue is only checked absent', () => {
    const w = (seq: number, operations: QueuedWrite['operations']): QueuedWrite => ({
      seq,
      kind: 'batch',
      operations,
      versions: {},
      enqueuedAtMs: 0,
      maybeLanded: false,
    });
    const merged = mergeQueuedWrites([
      w(1, [
        { type: 'put', key: 'cp_1', bytes: text('1'), ifAbsent: true },
        { type: 'put', key: 'latest', bytes: text('1') },
        { type: 'put', key: 'index', bytes: text('i1'), ifVersion: 'v0' },
        { type: 'check', key: 'lock', ifVersion: 'L' },
      ]),
      w(2, [
        { type: 'put', key: 'batch_1_2', bytes: text('12'), ifAbsent: true },
        { type: 'put', key: 'latest', bytes: text('2') },
        { type: 'put', key: 'index', bytes: text('i2'), ifVersion: 'sha-of-i1' },
        { type: 'check', key: 'lock', ifVersion: 'L' },
        { type: 'delete', key: 'cp_1' },
      ]),
    ]);
    expect(merged).toEqual([
      { type: 'check', key: 'cp_1', ifAbsent: true },
      { type: 'put', key: 'latest', bytes: text('2') },
      { type: 'put', key: 'index', bytes: text('i2'), ifVersion: 'v0' },
      { type: 'check', key: 'lock', ifVersion: 'L' },
      { type: 'put', key: 'batch_1_2', bytes: text('12'), ifAbsent: true },
    ]);
  });
});

/** Applies `ops` to `state` (key → content) as one atomic batch: every condition is checked first, on the state before. */
function applyAtomic(state: Map<string, string>, ops: readonly QueuedWrite['operations'][number][]): Map<string, string> | 'conflict' {
  for (const op of ops) {
    const absent = op.type !== 'delete' && op.ifAbsent === true;
    if (absent && state.has(op.key)) return 'conflict';
    if (op.ifVersion !== undefined && state.get(op.key) !== op.ifVersion) return 'conflict';
  }
  const next = new Map(state);
  for (const op of ops) {
    if (op.type === 'put') next.set(op.key, new TextDecoder().decode(op.bytes));
    else if (op.type === 'delete') next.delete(op.key);
  }
  return next;
}

describe('mergeQueuedWrites property', () => {
  const KEYS = ['a', 'b', 'c', 'lock'];
  // One step: an operation on a key, with a condition taken from the state the queue has reached (as checkQueuedConditions demands).
  const stepArb = fc.record({
    key: fc.constantFrom(...KEYS),
    kind: fc.constantFrom('put', 'delete', 'check'),
    cond: fc.constantFrom('none', 'state'),
    value: fc.nat(5),
  });
  it('pushing the merged queue as one batch ends where pushing each write in order ends, under the same conditions on the state before', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.constantFrom(...KEYS), fc.nat(5).map(String)),
        fc.array(fc.array(stepArb, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 6 }),
        (initialObj, writes) => {
          const initial = new Map(Object.entries(initialObj));
          let state = new Map(initial);
          const queued: QueuedWrite[] = [];
          for (const [i, steps] of writes.entries()) {
            const ops: QueuedWrite['operations'][number][] = [];
            const seen = new Set<string>();
            for (const st of steps) {
              if (seen.has(st.key)) continue; // one operation per key per write, as writers build them
              seen.add(st.key);
              const current = state.get(st.key);
              const cond = st.cond === 'none' ? {} : current === undefined ? { ifAbsent: true as const } : { ifVersion: current };
              if (st.kind === 'put') ops.push({ type: 'put', key: st.key, bytes: text(`${i}:${st.value}`), ...cond });
              else if (st.kind === 'delete') ops.push({ type: 'delete', key: st.key, ...('ifVersion' in cond ? cond : {}) });
              else if ('ifAbsent' in cond) ops.push({ type: 'check', key: st.key, ifAbsent: true });
              else if (current !== undefined && st.cond === 'state') ops.push({ type: 'check', key: st.key, ifVersion: current });
            }
            if (ops.length === 0) continue;
            const after = applyAtomic(state, ops);
            if (after === 'conflict') continue; // the queue would not have accepted it
            state = after;
            queued.push({ seq: i + 1, kind: 'batch', operations: ops, versions: {}, enqueuedAtMs: 0, maybeLanded: false });
          }
          if (queued.length === 0) return;
          expect(applyAtomic(initial, mergeQueuedWrites(queued))).toEqual(state);
          // The merged batch still fails where the first write would: on a state another writer changed.
          const firstCond = queued[0]!.operations.find(
            (op) => op.type === 'check' || (op.type !== 'delete' && op.ifAbsent === true) || op.ifVersion !== undefined,
          );
          if (firstCond) {
            const changed = new Map(initial);
            changed.set(firstCond.key, 'foreign');
            expect(applyAtomic(changed, mergeQueuedWrites(queued))).toBe('conflict');
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bundled = bundledChildPerFile(join(root, 'tests/fixtures/github/held-child.ts'), 'savepoint-gh-held-');
const CHILD_TOKEN = 'ghp_childTOKENabcdefghijklmnopqrstuvwxyz01';

describe('a SIGKILL between held checkpoints loses nothing acknowledged', () => {
  it('the next process adopts the held queue and pushes it: every acknowledged checkpoint is on GitHub, in one batch file', async () => {
    const gh: GitHubEmulator = await startGitHubEmulator({ token: CHILD_TOKEN, secondaryLimit: false, logBodies: false });
    cleanups.push(() => gh.close());
    gh.rateLimit.set({ remaining: 90 });
    const dir = tempDir('savepoint-held-queue-');
    const runId = newUuidV4();
    const child = spawn(process.execPath, [bundled.bundle, gh.url, gh.owner, gh.repo, dir, runId], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
    const acks: { i: number; outcome: string; key: string }[] = [];
    await new Promise<void>((resolve, reject) => {
      createInterface({ input: child.stdout! }).on('line', (t) => {
        let line: { type: string; i: number; outcome: string; key: string; message?: string };
        try {
          line = JSON.parse(t) as typeof line;
        } catch {
          return; // a line cut by SIGKILL is no acknowledgement
        }
        if (line.type === 'error') reject(new Error(line.message));
        if (line.type !== 'ack') return;
        acks.push(line);
        if (line.i >= 3) resolve();
      });
      void exited.then(() => reject(new Error('child exited first')));
    });
    child.kill('SIGKILL');
    await exited;
    expect(acks.every((a) => a.outcome === 'queued')).toBe(true);
    const last = acks.at(-1)!.i;
    expect(acks.at(-1)!.key).toBe(`checkpoints/${runId}/batch_1_${last}.json`);
    expect(gh.state.readFile(`checkpoints/${runId}/latest.json`)).toBeUndefined(); // nothing reached GitHub

    // The next process on the same queue folder adopts and pushes what the dead one held.
    gh.rateLimit.set({ remaining: 5000 });
    const next = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      baseUrl: gh.url,
      token: CHILD_TOKEN,
      minWriteIntervalMs: 0,
      emergencyQueue: { dir },
    });
    await next.flush();
    const plan = await planResume({ storage: next, profile: phasedWorkflow, runId });
    expect(plan.snapshot.sequence).toBeGreaterThanOrEqual(last);
    const index = decodeRunIndex(gh.state.readFile(`checkpoints/${runId}/index.json`)!);
    const sequences = index.checkpoints.map((c) => c.sequence);
    for (let i = 1; i <= last; i++) expect(sequences).toContain(i);
    const batches = gh.state
      .listFiles()
      .map((f) => f.path)
      .filter((p) => p.startsWith(`checkpoints/${runId}/batch_`));
    expect(batches).toHaveLength(1);
    expect(
      gh.state
        .listFiles()
        .map((f) => f.path)
        .some((p) => p.startsWith(`checkpoints/${runId}/cp_`)),
    ).toBe(false);
    await next.close();
  }, 60_000);
});
