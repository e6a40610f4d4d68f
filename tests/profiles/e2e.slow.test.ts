import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  cleanupAfterRunCompletion,
  createWriter,
  findIncompleteRuns,
  listAll,
  memoryStorage,
  planResume,
  preserveRun,
  runRetention,
  type StorageAdapter,
} from 'savepoint';
import { createPlanExecutorProfile, planExecutor, planExecutorTriggers } from 'savepoint/plan-executor';
import {
  createSnapshotLifecycleRetention,
  lifecycleTriggers,
  snapshotLifecycle,
  type SnapshotLifecyclePayload,
} from 'savepoint/snapshot-lifecycle';
import { decodeRunIndex, gunzip, readSnapshot } from 'savepoint/toolkit';
import {
  emptyPhaseOutputs,
  initialPhasedPayload,
  phasedTriggers,
  phasedWorkflow,
  type PhasedWorkflowPayload,
} from 'savepoint/phased-workflow';
import { isGzip } from '../../src/codec/gzip.js';
import { newUuidV4 } from '../../src/contract/ids.js';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';
import { fsStorage } from 'savepoint/fs';
import { githubStorage } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { manualClock, type ManualClock } from '../support/clock.js';
import { lifecyclePayloadArb } from './arbitraries.js';

// Each profile end to end — write, coalesce, retain, resume — on every storage a user
// would meet: memory, a real directory (fsStorage), and a GitHub repository (githubStorage
// against the local REST emulator on 127.0.0.1; no network).

const TOKEN = 'ghp_e2eTOKENabcdefghijklmnopqrstuvwxyz012345';
let gh: GitHubEmulator;
const dirs: string[] = [];
let n = 0;

beforeAll(async () => {
  gh = await startGitHubEmulator({ token: TOKEN, secondaryLimit: false, logBodies: false });
});
afterAll(async () => {
  await gh?.close();
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

const STORAGES: { name: string; make: () => Promise<StorageAdapter> }[] = [
  { name: 'memory', make: async () => memoryStorage() },
  {
    name: 'fs',
    make: async () => {
      const dir = await mkdtemp(join(tmpdir(), 'savepoint-profiles-e2e-'));
      dirs.push(dir);
      return fsStorage({ dir });
    },
  },
  {
    name: 'github',
    make: async () =>
      githubStorage({
        owner: gh.owner,
        repo: gh.repo,
        token: TOKEN,
        baseUrl: gh.url,
        basePath: `e2e/${++n}`,
        minWriteIntervalMs: 0,
        contentRequestsPerHour: 1e6,
        emergencyQueue: 'memory',
      }),
  },
];

const json = (bytes: Uint8Array): Record<string, unknown> =>
  JSON.parse(utf8Decode(isGzip(bytes) ? gunzip(bytes, 'x') : bytes)) as Record<string, unknown>;
const keysUnder = async (storage: StorageAdapter, prefix: string): Promise<string[]> =>
  (await listAll(storage, prefix)).map((e) => e.key.slice(prefix.length));
const [lifecycleBase] = fc.sample(lifecyclePayloadArb, { numRuns: 1, seed: 99 });

async function later(clock: ManualClock, ms: number): Promise<void> {
  await clock.advance(ms);
}

describe.each(STORAGES)('profiles end to end on $name storage', ({ make }) => {
  it('snapshotLifecycle: coalesce within 3 s, 50-per-run retention keeping the latest failed, gzip after 24 h, resume (also with latest.json damaged)', async () => {
    const storage = await make();
    const clock = manualClock(Date.UTC(2026, 0, 10, 8, 0, 0));
    const runId = 'session-e2e';
    const writer = createWriter({ storage, profile: snapshotLifecycle, runId, clock, heartbeatIntervalMs: false });
    let state: SnapshotLifecyclePayload = { ...lifecycleBase!, command_outcomes: [] };

    const first = await writer.checkpoint(lifecycleTriggers.stepEntered(state, { step_id: 's1', step_ordinal: 1 }));
    expect(first).toMatchObject({ ok: true, outcome: 'written', sequence: 1 });
    state = first.ok ? first.snapshot.payload : state;
    await later(clock, 1500);
    expect(await writer.checkpoint(lifecycleTriggers.manual(state))).toMatchObject({ ok: true, outcome: 'coalesced', sequence: 1 });
    const latest1 = json((await storage.get('checkpoints/session-e2e/latest.json'))!.bytes);
    expect(latest1.source_details).toEqual([{ source: 'manual', at: new Date(clock.now()).toISOString() }]);

    // 59 more snapshots an hour apart; number 5 ends an attempt as failed.
    for (let i = 2; i <= 60; i++) {
      await later(clock, 3_600_000);
      const req =
        i === 5
          ? lifecycleTriggers.forcedStop(state, { reason_code: 'disk_full' })
          : lifecycleTriggers.stepEntered(state, { step_id: `s${i}`, step_ordinal: i });
      const r = await writer.checkpoint(req);
      expect(r).toMatchObject({ ok: true, outcome: 'written', sequence: i });
      if (r.ok) state = r.snapshot.payload;
    }
    await writer.close();
    const historyPrefix = 'checkpoints/session-e2e/history/';
    expect(await keysUnder(storage, historyPrefix)).toHaveLength(60);

    const { report } = await runRetention({ storage, profile: snapshotLifecycle, clock });
    expect(report.status).toBe('completed');
    const kept = await keysUnder(storage, historyPrefix);
    expect(kept).toHaveLength(51); // the latest 50 + the latest failed
    const keptSnapshots = await Promise.all(kept.map((k) => readSnapshot(storage, snapshotLifecycle, historyPrefix + k)));
    expect(keptSnapshots.map((s) => s!.sequence).sort((a, b) => a - b)).toEqual([5, ...Array.from({ length: 50 }, (_, i) => i + 11)]);
    // history older than 24 h is gzipped (and still reads); latest.json never is
    const gz = kept.filter((k) => k.endsWith('.json.gz'));
    expect(gz.length).toBeGreaterThan(20);
    for (const s of keptSnapshots) if (s!.sequence >= 37) expect(gz.some((k) => k.startsWith(s!.id))).toBe(false);
    expect(isGzip((await storage.get('checkpoints/session-e2e/latest.json'))!.bytes)).toBe(false);
    // planning again deletes nothing more
    const again = await runRetention({ storage, profile: snapshotLifecycle, clock });
    expect(again.report.totals.filesDeleted).toBe(0);

    const plan = await planResume({ storage, profile: snapshotLifecycle, runId, clock });
    expect(plan).toMatchObject({ at: 's60', eligible: true, nextSequence: 61 });
    expect(plan.snapshot.sequence).toBe(60);
    // a damaged latest.json is skipped with its reason code; the newest history entry is used
    await storage.put('checkpoints/session-e2e/latest.json', utf8Encode('{"snapshot_id":'));
    const fallback = await planResume({ storage, profile: snapshotLifecycle, runId, clock });
    expect(fallback.snapshot.sequence).toBe(60);
    expect(fallback.skipped.map((s) => s.reasonCode)).toContain('checkpoint_schema_invalid');
    await storage.close();
  });

  it('phasedWorkflow: cp_NNN_trigger files + index.json, coalescing, resume per trigger, run tiers after completion with a preserved run', async () => {
    const storage = await make();
    const clock = manualClock(Date.UTC(2025, 11, 5, 9, 0, 0));
    const empty = initialPhasedPayload('phase_0_intake', new Date(clock.now()).toISOString());
    const base: PhasedWorkflowPayload = {
      ...empty,
      state_snapshot: { ...empty.state_snapshot, cost_accumulated: 0.5, active_lessons: ['L-1'] },
    };
    const runId = newUuidV4();
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, clock });
    const done = await writer.checkpoint(phasedTriggers.phaseComplete(base, 'phase_0', { ok: true }));
    expect(done).toMatchObject({ ok: true, outcome: 'written', sequence: 1, key: `checkpoints/${runId}/cp_001_phase_complete.json` });
    const payload = done.ok ? done.snapshot.payload : base;
    await later(clock, 60_000);
    const gate = await writer.checkpoint(
      phasedTriggers.gateDecision(payload, { gate_id: 'gate_0', decision: 'pass', score: 0.9, iteration: 1 }),
    );
    expect(gate).toMatchObject({ ok: true, sequence: 2, key: `checkpoints/${runId}/cp_002_gate_decision.json` });
    await later(clock, 1000);
    // same state, only api_metrics changed: a second gate_decision (it resumes as the first) is coalesced into #2
    const gatePayload = gate.ok ? gate.snapshot.payload : payload;
    const same = { ...gatePayload, context_fields: { ...gatePayload.context_fields, api_metrics: { github: { calls: 3 } } } };
    expect(await writer.checkpoint(phasedTriggers.at('gate_decision', same))).toMatchObject({
      ok: true,
      outcome: 'coalesced',
      sequence: 2,
    });
    await writer.close();

    const files = await keysUnder(storage, `checkpoints/${runId}/`);
    expect(files.filter((f) => !f.startsWith('.'))).toEqual([
      'cp_001_phase_complete.json',
      'cp_002_gate_decision.json',
      'index.json',
      'latest.json',
    ]);
    const index = decodeRunIndex((await storage.get(`checkpoints/${runId}/index.json`))!.bytes);
    expect(index.checkpoints.map((c) => [c.sequence, c.trigger, c.file_path])).toEqual([
      [1, 'phase_complete', `checkpoints/${runId}/cp_001_phase_complete.json`],
      [2, 'gate_decision', `checkpoints/${runId}/cp_002_gate_decision.json`],
    ]);
    const latest = json((await storage.get(`checkpoints/${runId}/latest.json`))!.bytes);
    expect(latest).toMatchObject({
      checkpoint_id: index.checkpoints[1]!.checkpoint_id,
      run_id: runId,
      trigger: 'gate_decision',
      sequence_number: 2,
      priority: 'high',
      status: 'in_progress',
    });
    expect((latest.source_details as { source: string }[]).map((d) => d.source)).toEqual(['gate_decision']);
    expect(await planResume({ storage, profile: phasedWorkflow, runId, clock })).toMatchObject({
      at: 'phase_0_intake_gate',
      eligible: true,
    });
    await preserveRun({ storage, profile: phasedWorkflow, runId, reason: 'kept for the test', clock });

    // 11 more runs, each completed: after the last one, the spec's cleanup thins the oldest
    const runs: string[] = [];
    for (let r = 0; r < 11; r++) {
      await later(clock, 3_600_000);
      const id = newUuidV4();
      runs.push(id);
      const w = createWriter({ storage, profile: phasedWorkflow, runId: id, clock });
      const a = await w.checkpoint(phasedTriggers.phaseComplete(base, 'phase_0', { r }));
      await later(clock, 10_000);
      const last =
        r === 0
          ? phasedTriggers.circuitBreakerTrip(a.ok ? a.snapshot.payload : base, 'github_api', { state: 'open' }, 'failed')
          : phasedTriggers.at('phase_complete', a.ok ? a.snapshot.payload : base, 'completed');
      expect(await w.checkpoint(last)).toMatchObject({ ok: true, sequence: 2 });
      await w.close();
    }
    const cleanup = await cleanupAfterRunCompletion({ storage, profile: phasedWorkflow, runId: runs.at(-1)!, clock });
    expect(cleanup.ran).toBe(true);
    const checkpointsOf = async (id: string): Promise<string[]> =>
      (await keysUnder(storage, `checkpoints/${id}/`)).filter((f) => /^cp_|^latest/.test(f));
    expect(await checkpointsOf(runs.at(-1)!)).toHaveLength(3); // one of the 10 newest: everything
    expect(await checkpointsOf(runs[0]!)).toEqual(['latest.json']); // the 11th newest: "delete all except latest.json"
    expect(await checkpointsOf(runId)).toHaveLength(3); // preserved
    expect((await storage.get('checkpoints/retention_log.json')) !== undefined).toBe(true);
    // resume per trigger: a tripped breaker needs a human, a completed phase goes on
    expect(await planResume({ storage, profile: phasedWorkflow, runId: runs[0]!, clock })).toMatchObject({
      at: 'human_review',
      eligible: false,
    });
    expect(await planResume({ storage, profile: phasedWorkflow, runId: runs[1]!, clock })).toMatchObject({
      at: 'phase_0_5',
      eligible: true,
    });
    const incomplete = await findIncompleteRuns({ storage, profile: phasedWorkflow });
    expect(incomplete.map((r) => r.runId)).toEqual([runId]);
    await storage.close();
  });

  it('planExecutor: one NN-CHECKPOINT.json per plan, a task per checkpoint, timeout listed and resumed; history + retention when asked', async () => {
    const storage = await make();
    const clock = manualClock(Date.UTC(2026, 0, 15, 14, 0, 0));
    const writer = createWriter({ storage, profile: planExecutor, runId: '02', clock });
    let req = planExecutorTriggers.start('02', ['Task 1: Setup', 'Task 2: Models', 'Task 3: Add API routes', 'Task 4: Tests']);
    expect(await writer.checkpoint(req)).toMatchObject({ ok: true, key: 'plans/02-CHECKPOINT.json', sequence: 1 });
    for (const commit of ['abc123', 'def456']) {
      await later(clock, 600_000);
      req = planExecutorTriggers.taskCompleted(req.payload, { commit, files: [`src/${commit}.ts`] });
      expect(await writer.checkpoint(req)).toMatchObject({ ok: true, outcome: 'written' });
    }
    await later(clock, 1000);
    expect(await writer.checkpoint(planExecutorTriggers.manual(req.payload))).toMatchObject({
      ok: true,
      outcome: 'coalesced',
      sequence: 3,
    });
    await later(clock, 600_000);
    expect(await writer.checkpoint(planExecutorTriggers.timedOut(req.payload, { partialCommits: ['0a1b2c'] }))).toMatchObject({
      ok: true,
      sequence: 4,
    });
    await writer.close();

    // exactly the spec's file and fields (+ integrity), nothing else in plans/
    expect(await keysUnder(storage, 'plans/')).toEqual(['02-CHECKPOINT.json']);
    const doc = json((await storage.get('plans/02-CHECKPOINT.json'))!.bytes);
    expect(Object.keys(doc).sort()).toEqual(
      [
        'completed_tasks',
        'current_task',
        'current_task_index',
        'error',
        'files_modified',
        'integrity',
        'last_activity',
        'partial_commits',
        'plan_number',
        'remaining_tasks',
        'status',
        'task_commits',
        'total_tasks',
      ].sort(),
    );
    expect(doc).toMatchObject({
      plan_number: '02',
      status: 'timeout',
      current_task_index: 2,
      task_commits: { '1': 'abc123', '2': 'def456' },
      last_activity: new Date(clock.now()).toISOString(),
    });
    expect(doc.integrity).toMatchObject({ sequence: 4, source: 'timeout' });

    expect((await findIncompleteRuns({ storage, profile: planExecutor })).map((r) => [r.runId, r.status])).toEqual([['02', 'timeout']]);
    const plan = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(plan).toMatchObject({ at: '2', reason: 'timeout_resume_current_task', eligible: true, nextSequence: 5 });
    const resumed = createWriter({ storage, profile: planExecutor, runId: '02', clock });
    expect(await resumed.checkpoint(planExecutorTriggers.taskCompleted(plan.payload, { commit: '789abc' }))).toMatchObject({
      ok: true,
      sequence: 5,
    });
    await resumed.close();

    // with history and a retention policy (the spec has none): keep the 3 newest
    const historical = createPlanExecutorProfile({
      statePath: 'state',
      history: true,
      retention: createSnapshotLifecycleRetention({ keepLast: 3, compressAfter: false }),
    });
    const hw = createWriter({ storage, profile: historical, runId: '07', clock });
    let h = planExecutorTriggers.start('07', ['a', 'b', 'c', 'd', 'e']);
    await hw.checkpoint(h);
    for (let i = 0; i < 5; i++) {
      await later(clock, 60_000);
      h = planExecutorTriggers.taskCompleted(h.payload, { commit: `c${i}` });
      expect(await hw.checkpoint(h)).toMatchObject({ ok: true, sequence: i + 2 });
    }
    await hw.close();
    const historyDir = 'state/plans/07-CHECKPOINT.history/';
    expect((await keysUnder(storage, historyDir)).filter((k) => k !== 'index.json')).toHaveLength(6);
    await runRetention({ storage, profile: historical, clock });
    expect((await keysUnder(storage, historyDir)).filter((k) => k !== 'index.json')).toHaveLength(3);
    expect(await planResume({ storage, profile: historical, runId: '07', clock })).toMatchObject({
      at: 'plan_complete',
      eligible: false,
      nextSequence: 7,
    });
    expect(await findIncompleteRuns({ storage, profile: historical })).toEqual([]);
    await storage.close();
  });
});

describe('phasedWorkflow size management through the writer (memory storage)', () => {
  // `kb` lines of ~1 KB: scale 1024 makes a checkpoint of about 11 MB
  const blob = (kb: number) => ({ log: Array.from({ length: kb }, (_, i) => `line ${i} `.padEnd(1000, '.')) });
  const oversized = (clock: ManualClock, scale: number): PhasedWorkflowPayload => ({
    phase: 'phase_3_build',
    state_snapshot: {
      phase_outputs: { ...emptyPhaseOutputs(), phase_1: blob(2 * scale), phase_2: blob(3 * scale) },
      current_phase_state: { phase: 'phase_3_build', started_at: new Date(clock.now()).toISOString(), progress: {}, partial_output: null },
      gate_history: [],
      circuit_breaker_state: {},
      cost_accumulated: 12.5,
      health_history: [],
      // larger than any single phase output: a largest-first splitter moves it instead
      errors_encountered: Array.from({ length: 6 * scale }, (_, i) => ({ i, detail: 'e'.repeat(1000) })),
      active_lessons: [],
    },
    context_fields: { api_metrics: {}, fallback_flags: {}, iteration_counts: {}, warnings: [] },
  });
  const writeOversized = async (scale: number, maxSnapshotBytes?: number) => {
    const storage = memoryStorage();
    const clock = manualClock();
    const runId = newUuidV4();
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, clock, ...(maxSnapshotBytes ? { maxSnapshotBytes } : {}) });
    const splits: { sequence: number; bytes: number; limit: number; parts: readonly string[] }[] = [];
    writer.on('split', (e) => splits.push(e));
    const payload = oversized(clock, scale);
    const r = await writer.checkpoint(phasedTriggers.phaseComplete(payload, 'phase_2', payload.state_snapshot.phase_outputs.phase_2!));
    expect(r).toMatchObject({ ok: true, outcome: 'written', sequence: 1 });
    await writer.close();
    const main = (await storage.get(`checkpoints/${runId}/cp_001_phase_complete.json`))!.bytes;
    return { storage, clock, runId, payload, main, splits };
  };

  it('a checkpoint over 10 MB is stored as a main file under the limit plus part files, and resumes whole', async () => {
    const { storage, clock, runId, payload, main, splits } = await writeOversized(1024);
    expect(main.length).toBeLessThanOrEqual(10 * 1024 * 1024);
    // The spec's "log warning about large checkpoint": one split event naming the size, the limit and the parts.
    expect(splits).toHaveLength(1);
    expect(splits[0]).toMatchObject({ sequence: 1, limit: 10 * 1024 * 1024 });
    expect(splits[0]!.bytes).toBeGreaterThan(10 * 1024 * 1024);
    expect(splits[0]!.parts.map((k) => k.slice(k.lastIndexOf('/') + 1)).sort()).toEqual(
      (await keysUnder(storage, `checkpoints/${runId}/parts/1/`)).sort(),
    );
    expect((await keysUnder(storage, `checkpoints/${runId}/parts/1/`)).length).toBeGreaterThan(0);
    expect((json(main) as { state_snapshot: { cost_accumulated: number } }).state_snapshot.cost_accumulated).toBe(12.5);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId, clock });
    expect(plan.payload).toEqual(payload);
    expect(plan).toMatchObject({ at: 'phase_4', eligible: true });
  });

  // The writer splits with the profile's splitter, so phase outputs move before the larger errors array.
  it('through the writer, phase_outputs move to part files before other values', async () => {
    const { main } = await writeOversized(100, 1024 * 1024); // the same shape at a 1 MiB limit
    const doc = json(main) as { state_snapshot: { phase_outputs: Record<string, unknown>; errors_encountered: unknown } };
    expect(Object.keys(doc.state_snapshot.phase_outputs.phase_2 as object)).toEqual(['$savepoint_part']);
    expect(Array.isArray(doc.state_snapshot.errors_encountered)).toBe(true);
  });
});
