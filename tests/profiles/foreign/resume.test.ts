import { describe, expect, it } from 'vitest';
import { findIncompleteRuns, memoryStorage, planResume } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { planExecutor } from 'savepoint/plan-executor';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { foreignFixture, PHASED_RUN, putFixtures } from '../../support/foreign.js';

const clock = manualClock('2026-01-15T15:00:00Z');
const codes = (plan: { warnings: readonly { code: string }[] }): string[] => plan.warnings.map((w) => w.code);

describe('each spec example, written by another tool, resumes', () => {
  it('plan-executor.md: the JSON example verbatim', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'plan-executor', { 'plans/02-CHECKPOINT.json': '02-CHECKPOINT.spec-example.json' });
    const plan = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(codes(plan)).toContain('checkpoint_unsealed');
    expect(plan.snapshot).toMatchObject({
      runId: '02',
      status: 'in_progress',
      createdAt: '2026-01-15T14:30:00Z',
      // The executor's checkpoints so far: the start and one per completed task.
      sequence: 3,
      source: 'task_complete',
    });
    expect(plan.payload).toMatchObject({
      current_task_index: 2,
      task_commits: { '1': 'abc123', '2': 'def456' },
      files_modified: ['src/api.ts', 'src/models.ts'],
    });
    const runs = await findIncompleteRuns({ storage, profile: planExecutor });
    expect(runs.map((r) => [r.runId, r.status, r.readWarnings])).toEqual([['02', 'in_progress', ['checkpoint_unsealed']]]);
  });

  it('plan-executor: another offset, microseconds and vendor fields', async () => {
    const storage = memoryStorage();
    await putFixtures(storage, 'plan-executor', { 'plans/02-CHECKPOINT.json': '02-CHECKPOINT.vendor.json' });
    const plan = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(plan.snapshot.createdAt).toBe('2026-01-15T14:45:12.123Z');
    expect(plan.payload).toMatchObject({ current_task_index: 3, completed_tasks: [{ name: 'Task 1: Setup', commit: 'abc123' }, {}, {}] });
    expect(plan.payload).not.toHaveProperty('executor');
  });

  it('snapshot-lifecycle.md: its own id format, +00:00 offset and checksum scheme', async () => {
    const storage = memoryStorage();
    const run = 'sess-2026-01-15-a';
    await putFixtures(storage, 'snapshot-lifecycle', {
      [`checkpoints/${run}/latest.json`]: 'latest.spec.json',
      [`checkpoints/${run}/history/cp_20260115143000_7f3e9a.json`]: 'latest.spec.json',
      [`checkpoints/${run}/history/cp_1768487100_a1b2.json`]: 'history.older-unsealed.json',
    });
    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: run, clock });
    expect(codes(plan)).toContain('checkpoint_foreign_seal');
    expect(plan.snapshot).toMatchObject({ id: 'cp_20260115143000_7f3e9a', createdAt: '2026-01-15T14:30:00.000Z', status: 'in_progress' });
    expect(plan).toMatchObject({ at: '19.2', eligible: true });
    expect(plan.skipped).toEqual([]);
    // Without latest, the scan orders foreign history by time (their sequence is their time).
    await storage.delete(`checkpoints/${run}/latest.json`);
    const fromHistory = await planResume({ storage, profile: snapshotLifecycle, runId: run, clock });
    expect(fromHistory.snapshot.id).toBe('cp_20260115143000_7f3e9a');
    expect((await findIncompleteRuns({ storage, profile: snapshotLifecycle })).map((r) => r.runId)).toEqual([run]);
  });

  it('phased-workflow-github.md: spec fields only, unpadded cp_{sequence}_{trigger}.json, no index', async () => {
    const storage = memoryStorage();
    const dir = `checkpoints/${PHASED_RUN}`;
    await putFixtures(storage, 'phased-workflow', {
      [`${dir}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
      [`${dir}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
      [`${dir}/latest.json`]: 'latest.json',
    });
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    expect(codes(plan)).toContain('checkpoint_unsealed');
    expect(plan.snapshot).toMatchObject({ sequence: 2, source: 'gate_decision', status: 'in_progress' });
    expect(plan.skipped).toEqual([]);
    // No latest either: the run's cp_ files are listed and the newest is resumed.
    await storage.delete(`${dir}/latest.json`);
    const scanned = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    expect(scanned.snapshot.sequence).toBe(2);
    // A third checkpoint from another tool: padded name, +02:00 offset, vendor field, members left out.
    await storage.put(`${dir}/cp_003_expensive_op.json`, utf8Encode(foreignFixture('phased-workflow', 'cp_003_expensive_op.variant.json')));
    const third = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    expect(third.snapshot).toMatchObject({ sequence: 3, createdAt: '2026-01-15T14:40:00.123Z' });
    expect((await findIncompleteRuns({ storage, profile: phasedWorkflow })).map((r) => [r.runId, r.sequence])).toEqual([[PHASED_RUN, 3]]);
  });

  it('phased-workflow: an unpadded cp_3 the n8n node wrote after its latest.json (a crash before step 7) is found', async () => {
    const storage = memoryStorage();
    const dir = `checkpoints/${PHASED_RUN}`;
    await putFixtures(storage, 'phased-workflow', {
      [`${dir}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
      [`${dir}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
      [`${dir}/latest.json`]: 'latest.json',
      [`${dir}/cp_3_expensive_op.json`]: 'cp_003_expensive_op.variant.json',
    });
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan.source).toMatchObject({ key: `${dir}/cp_3_expensive_op.json`, latest: 'stale' });
  });

  it("phased-workflow-github.md: the spec's index_schema with file_path from the repository root (leading /) and no latest.json", async () => {
    const storage = memoryStorage();
    const dir = `checkpoints/${PHASED_RUN}`;
    await putFixtures(storage, 'phased-workflow', {
      [`${dir}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
      [`${dir}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
      [`${dir}/index.json`]: 'index.json',
    });
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock, newerCheck: 'none' });
    expect(plan.source).toMatchObject({ key: `${dir}/cp_2_gate_decision.json`, origin: 'index', latest: 'missing' });
    expect(plan.skipped).toEqual([]);
    expect(codes(plan)).toContain('checkpoint_unsealed');
  });
});
