/**
 * phased-workflow-github.md, validation criterion 5: "Retention Test: Create 60 runs,
 * verify cleanup follows retention policy" — runs 1–10 keep all checkpoints, 11–50 keep
 * the final checkpoint, 51+ keep a run summary (summary_schema), preserved_runs.json
 * keeps a run indefinitely, the retention log is updated, cleanup runs after a
 * successful run completion.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fsStorage } from 'savepoint/fs';
import { cleanupAfterRunCompletion, memoryStorage, planResume, runRetention, type Clock, type StorageAdapter } from 'savepoint';
import { decodeRunIndex } from 'savepoint/toolkit';
import { decodeRetentionLog } from '../../../src/retention/log.js';
import { createPhasedWorkflowRetention, phasedWorkflow, phasedWorkflowRetention, PhasedRunSummarySchema } from 'savepoint/phased-workflow';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { HOUR, runKeys, uuidFor, writeRun } from '../../fixtures/retention/store.js';

const NOW = Date.UTC(2025, 11, 5, 12);
const clock: Clock = { now: () => NOW, setTimeout: () => 0, clearTimeout: () => undefined };
const profile = phasedWorkflow;
const TRIGGERS = ['phase_complete', 'gate_decision', 'phase_complete', 'phase_complete'];

/** Run 1 is the most recent, run 60 the oldest (one hour apart); each has four checkpoints ten minutes apart. */
const runIds = Array.from({ length: 60 }, (_, i) => uuidFor(`spec-run-${i + 1}`));
const rankOf = (i: number): number => i + 1;

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** The storages the test runs on: the in-memory default and a real directory. */
const storages: [string, () => StorageAdapter][] = [
  ['memoryStorage', () => memoryStorage()],
  [
    'fsStorage',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'savepoint-retention-'));
      dirs.push(dir);
      return fsStorage({ dir });
    },
  ],
];

async function sixtyRuns(make: () => StorageAdapter): Promise<StorageAdapter> {
  const storage = make();
  for (const [i, runId] of runIds.entries()) {
    const start = NOW - (i + 1) * HOUR;
    await writeRun(
      storage,
      profile,
      runId,
      TRIGGERS.map((source, k) => ({
        sequence: k + 1,
        at: start + k * 10 * 60_000,
        source,
        status: k === 3 ? (i % 7 === 3 ? 'failed' : 'completed') : 'in_progress',
      })),
    );
  }
  return storage;
}

const json = async (storage: StorageAdapter, key: string): Promise<Record<string, unknown>> =>
  JSON.parse(utf8Decode((await storage.get(key))!.bytes)) as Record<string, unknown>;

const ALL_FILES = [
  'cp_001_phase_complete.json',
  'cp_002_gate_decision.json',
  'cp_003_phase_complete.json',
  'cp_004_phase_complete.json',
  'index.json',
  'latest.json',
];

/** Exactly the spec's summary_schema fields (and types) of an archived run's summary, plus savepoint's own. */
async function expectSummary(storage: StorageAdapter, runId: string, i: number): Promise<void> {
  const summary = await json(storage, `checkpoints/${runId}/summary.json`);
  const start = NOW - (i + 1) * HOUR;
  const specFields = Object.fromEntries(
    ['run_id', 'started_at', 'completed_at', 'phases_completed', 'final_status', 'total_cost_usd', 'errors_count'].map((k) => [
      k,
      summary[k],
    ]),
  );
  expect(PhasedRunSummarySchema.parse(specFields)).toEqual({
    run_id: runId,
    started_at: new Date(start).toISOString(),
    completed_at: new Date(start + 30 * 60_000).toISOString(),
    phases_completed: 4,
    final_status: i % 7 === 3 ? 'failed' : 'completed',
    total_cost_usd: 2,
    errors_count: 1,
  });
  expect(summary).toMatchObject({
    checkpoint_count: 4,
    last_checkpoint_at: new Date(start + 30 * 60_000).toISOString(),
    archived_at: new Date(NOW).toISOString(),
  });
}

describe.each(storages)('phased-workflow-github.md retention test: 60 runs on %s', (_name, make) => {
  it('by default the spec to the letter: runs 1–10 keep all, 11–50 only latest.json, 51+ only their summary, preserved runs all (regression)', async () => {
    const storage = await sixtyRuns(make);
    const preserved = runIds[54]!;
    await storage.put('checkpoints/preserved_runs.json', utf8Encode(JSON.stringify([preserved])));

    const result = await cleanupAfterRunCompletion({ storage, profile, runId: runIds[0]!, policy: phasedWorkflowRetention, clock });
    expect(result.ran).toBe(true);
    if (!result.ran) return;
    expect(result.report.status).toBe('completed');
    for (const [i, runId] of runIds.entries()) {
      const keys = (await runKeys(storage, profile, runId)).map((k) => k.slice(k.lastIndexOf('/') + 1));
      if (i < 10 || runId === preserved) expect(keys).toEqual(ALL_FILES);
      else if (i < 50) {
        // cleanup_process step 2: "delete all except latest.json". It still holds the final checkpoint, and the run resumes from it.
        expect(keys).toEqual(['latest.json']);
        const plan = await planResume({ storage, profile, runId, clock });
        expect(plan.snapshot.sequence).toBe(4);
        expect(plan.source.origin).toBe('latest');
      } else {
        // Step 3: "delete all checkpoints, keep only summary".
        expect(keys).toEqual(['summary.json']);
        await expectSummary(storage, runId, i);
      }
    }
    expect(result.plan.totals).toMatchObject({ delete: 40 * 3, runsArchived: 9, runsDeleted: 9 });
    expect(result.plan.runs.filter((r) => r.latestOnly)).toHaveLength(40);
    const log = decodeRetentionLog((await storage.get('checkpoints/retention_log.json'))!.bytes);
    // 11–50: four history entries and the index each; 51+: those and latest.json.
    expect(log.entries[0]).toMatchObject({ policy: 'phasedWorkflow', status: 'completed', files_deleted: 40 * 5 + 9 * 6 });
    expect(log.entries[0]!.summaries_written).toHaveLength(9);
    expect(log.entries[0]!.runs_deleted).toHaveLength(9);

    // Idempotent; ranks hold (archived runs rank by their summary's last_checkpoint_at).
    const again = await runRetention({ storage, profile, policy: phasedWorkflowRetention, clock });
    expect(again.plan.operations).toEqual([]);
    expect(again.plan.runs.map((r) => [r.runId, r.tier])).toEqual(result.plan.runs.map((r) => [r.runId, r.tier]));
  });

  it.runIf(_name === 'memoryStorage')('a run thinned to latest.json is archived to a summary when it passes rank 50', async () => {
    const storage = await sixtyRuns(make);
    const tiers = createPhasedWorkflowRetention({ keepAll: 10, keepFinal: 40 });
    await runRetention({ storage, profile, policy: tiers, clock });
    // Ten runs later, run 41–50 are 51+: their summary is made from latest.json alone.
    const closer = createPhasedWorkflowRetention({ keepAll: 10, keepFinal: 30 });
    const result = await runRetention({ storage, profile, policy: closer, clock });
    expect(result.report.status).toBe('completed');
    for (const [i, runId] of runIds.entries()) {
      if (i < 40 || i >= 50) continue;
      expect((await runKeys(storage, profile, runId)).map((k) => k.slice(k.lastIndexOf('/') + 1))).toEqual(['summary.json']);
      const summary = await json(storage, `checkpoints/${runId}/summary.json`);
      const start = NOW - (i + 1) * HOUR;
      // latest.json was all that was left: the run is known to have started by its final checkpoint.
      expect(summary).toMatchObject({
        run_id: runId,
        started_at: new Date(start + 30 * 60_000).toISOString(),
        phases_completed: 4,
        checkpoint_count: 4,
      });
    }
  });

  it('conservative: keeps all of runs 1–10, the final checkpoint of 11–50, a summary of 51+ and every preserved run', async () => {
    const storage = await sixtyRuns(make);
    // A user hand-writes the spec's manual override as a plain list.
    const preserved = runIds[54]!;
    await storage.put('checkpoints/preserved_runs.json', utf8Encode(JSON.stringify([preserved])));

    const conservative = createPhasedWorkflowRetention({ conservative: true });
    const result = await cleanupAfterRunCompletion({ storage, profile, runId: runIds[0]!, policy: conservative, clock });
    expect(result.ran).toBe(true);
    if (!result.ran) return;
    expect(result.report.status).toBe('completed');

    for (const [i, runId] of runIds.entries()) {
      const rank = rankOf(i);
      const keys = (await runKeys(storage, profile, runId)).map((k) => k.slice(k.lastIndexOf('/') + 1));
      if (rank <= 10 || runId === preserved) {
        expect(keys).toEqual([
          'cp_001_phase_complete.json',
          'cp_002_gate_decision.json',
          'cp_003_phase_complete.json',
          'cp_004_phase_complete.json',
          'index.json',
          'latest.json',
        ]);
        continue;
      }
      // Conservative: 11–50 keep the final checkpoint's history entry, the index and a summary beside
      // latest.json; 51+ the summary too, and without allowRunDeletion their final checkpoint.
      expect(keys).toEqual(['cp_004_phase_complete.json', 'index.json', 'latest.json', 'summary.json']);
      const index = decodeRunIndex((await storage.get(`checkpoints/${runId}/index.json`))!.bytes);
      expect(index.checkpoints.map((e) => e.file_path)).toEqual([`checkpoints/${runId}/cp_004_phase_complete.json`]);
      await expectSummary(storage, runId, i);
    }

    const plannedRuns = new Map(result.plan.runs.map((r) => [r.runId, r]));
    expect(runIds.map((id) => plannedRuns.get(id)!.rank)).toEqual(runIds.map((_, i) => rankOf(i)));
    expect(runIds.map((id) => plannedRuns.get(id)!.tier)).toEqual(runIds.map((_, i) => (i < 10 ? 'recent' : i < 50 ? 'final' : 'archive')));
    expect(result.plan.totals).toMatchObject({ summarize: 9 * 3, delete: 40 * 3, runsArchived: 9, runsDeleted: 0 });

    const log = decodeRetentionLog((await storage.get('checkpoints/retention_log.json'))!.bytes);
    expect(log.entries).toHaveLength(1);
    expect(log.entries[0]).toMatchObject({
      policy: 'phasedWorkflowConservative',
      status: 'completed',
      files_deleted: 49 * 3,
      runs_deleted: [],
    });
    expect(log.entries[0]!.summaries_written).toHaveLength(49);

    // Cleanup again: nothing more to do, but the log records the run.
    const again = await runRetention({ storage, profile, policy: conservative, clock });
    expect(again.plan.operations).toEqual([]);
    expect(decodeRetentionLog((await storage.get('checkpoints/retention_log.json'))!.bytes).entries).toHaveLength(2);
  });

  it('conservative with allowRunDeletion: runs 51+ keep only their summary', async () => {
    const storage = await sixtyRuns(make);
    const conservative = createPhasedWorkflowRetention({ conservative: true });
    const result = await cleanupAfterRunCompletion({
      storage,
      profile,
      runId: runIds[0]!,
      policy: conservative,
      clock,
      allowRunDeletion: true,
    });
    expect(result.ran).toBe(true);
    for (const [i, runId] of runIds.entries()) {
      const keys = (await runKeys(storage, profile, runId)).map((k) => k.slice(k.lastIndexOf('/') + 1));
      if (i < 10) expect(keys).toHaveLength(6);
      else if (i < 50) expect(keys).toEqual(['cp_004_phase_complete.json', 'index.json', 'latest.json', 'summary.json']);
      else expect(keys).toEqual(['summary.json']);
    }
    if (result.ran) expect(result.plan.totals.runsDeleted).toBe(10);
    // The archived runs still count as runs: ranks do not move on the next cleanup.
    const again = await runRetention({ storage, profile, policy: conservative, clock, allowRunDeletion: true });
    expect(again.plan.operations).toEqual([]);
    expect(again.plan.runs.filter((r) => r.tier === 'archive')).toHaveLength(10);
    expect(await storage.get('checkpoints/preserved_runs.json')).toBeUndefined();
  });

  it('runs only after a successful completion', async () => {
    const storage = make();
    const runId = uuidFor('unfinished');
    await writeRun(storage, profile, runId, [{ sequence: 1, at: NOW - HOUR, status: 'in_progress' }]);
    expect(await cleanupAfterRunCompletion({ storage, profile, runId, policy: phasedWorkflowRetention, clock })).toEqual({
      ran: false,
      reason: 'run_not_completed',
      status: 'in_progress',
    });
    expect(
      await cleanupAfterRunCompletion({ storage, profile, runId: uuidFor('missing'), policy: phasedWorkflowRetention, clock }),
    ).toEqual({ ran: false, reason: 'run_not_found' });
    expect(await storage.get('checkpoints/retention_log.json')).toBeUndefined();
  });
});
