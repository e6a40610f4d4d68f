import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, parseJson, planResume, type JsonObject, type StorageAdapter } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { planExecutor, type PlanExecutorPayload } from 'savepoint/plan-executor';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { foreignFixture, PHASED_RUN, putFixtures } from '../../support/foreign.js';

// Per profile, the other tool writes → savepoint resumes → savepoint writes → the
// other tool's fields are intact → the other tool rewrites → savepoint still resumes.

const codes = (plan: { warnings: readonly { code: string }[] }): string[] => plan.warnings.map((w) => w.code);
const readJson = async (storage: StorageAdapter, key: string): Promise<JsonObject> =>
  parseJson(utf8Decode((await storage.get(key))!.bytes, key)) as JsonObject;
const writeJson = (storage: StorageAdapter, key: string, doc: unknown, pretty = false) =>
  storage.put(key, utf8Encode(JSON.stringify(doc, null, pretty ? 2 : undefined)));

describe('round trip with the other tool', () => {
  it('planExecutor: the other executor and savepoint take turns on NN-CHECKPOINT.json; its fields survive', async () => {
    const storage = memoryStorage();
    const clock = manualClock('2026-01-15T15:00:00Z');
    const key = 'plans/02-CHECKPOINT.json';
    await putFixtures(storage, 'plan-executor', { [key]: '02-CHECKPOINT.vendor.json' });

    const first = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(codes(first)).toContain('checkpoint_unsealed');

    const writer = createWriter({ storage, profile: planExecutor, runId: '02', clock, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    const payload = first.payload as PlanExecutorPayload;
    const done = {
      ...payload,
      current_task_index: 4,
      current_task: 'done',
      completed_tasks: [...(payload.completed_tasks ?? []), { name: 'Task 4: Tests', commit: '9f8e7d6' }],
    };
    expect((await writer.checkpoint({ source: 'task_complete', status: 'in_progress', payload: done })).ok).toBe(true);
    await writer.close();

    const afterSavepoint = await readJson(storage, key);
    expect(afterSavepoint.executor).toEqual({ name: 'long-run-executor', version: '2.3.1' });
    expect(afterSavepoint.started_at).toBe('2026-01-15T14:00:00Z');
    expect(afterSavepoint.current_task_index).toBe(4);
    const sealed = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(codes(sealed)).not.toContain('checkpoint_unsealed');
    expect(codes(sealed)).not.toContain('checkpoint_integrity_mismatch');
    // The vendor's file counts as its start and three completed tasks (4): savepoint's is 5.
    expect(sealed.snapshot.sequence).toBe(5);

    // The other executor rewrites the file, keeping what it does not know (savepoint's integrity).
    await writeJson(
      storage,
      key,
      { ...afterSavepoint, status: 'completed', current_task: 'all done', last_activity: '2026-01-15T15:10:00+00:00' },
      true,
    );
    const edited = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(codes(edited)).toContain('checkpoint_integrity_mismatch');
    expect(edited.snapshot).toMatchObject({ status: 'completed', sequence: 5, createdAt: '2026-01-15T15:10:00.000Z' });

    // …or drops it: still the newest truth, now unsealed.
    const { integrity: _dropped, ...plain } = afterSavepoint;
    await writeJson(storage, key, { ...plain, current_task: 'rewritten', last_activity: '2026-01-15T15:20:00Z' });
    const rewritten = await planResume({ storage, profile: planExecutor, runId: '02', clock });
    expect(codes(rewritten)).toContain('checkpoint_unsealed');
    expect(rewritten.payload).toMatchObject({ current_task: 'rewritten' });

    // savepoint writes again: numbering goes on, the other executor's fields are still there.
    const again = createWriter({ storage, profile: planExecutor, runId: '02', clock, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    expect(
      (await again.checkpoint({ source: 'manual', status: 'in_progress', payload: { ...done, current_task: 'savepoint again' } })).ok,
    ).toBe(true);
    await again.close();
    const final = await readJson(storage, key);
    expect(final).toMatchObject({
      executor: { name: 'long-run-executor' },
      started_at: '2026-01-15T14:00:00Z',
      current_task: 'savepoint again',
    });
    expect(codes(await planResume({ storage, profile: planExecutor, runId: '02', clock }))).not.toContain('checkpoint_unsealed');
  });

  it("snapshotLifecycle: savepoint continues a foreign run without touching the other tool's history, then the tool writes again", async () => {
    const storage = memoryStorage();
    const clock = manualClock('2026-01-15T15:00:00Z');
    const run = 'sess-2026-01-15-a';
    const dir = `checkpoints/${run}`;
    await putFixtures(storage, 'snapshot-lifecycle', {
      [`${dir}/latest.json`]: 'latest.spec.json',
      [`${dir}/history/cp_20260115143000_7f3e9a.json`]: 'latest.spec.json',
      [`${dir}/history/cp_1768487100_a1b2.json`]: 'history.older-unsealed.json',
    });
    const before = new Map<string, Uint8Array>();
    for await (const e of storage.list(`${dir}/history/`)) before.set(e.key, (await storage.get(e.key))!.bytes);

    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: run, clock });
    const writer = createWriter({
      storage,
      profile: snapshotLifecycle,
      runId: run,
      clock,
      heartbeatIntervalMs: false,
      coalesceWindowMs: 0,
    });
    const payload = plan.payload as { step_state: JsonObject; context_digest: JsonObject };
    const next = { ...payload, step_state: { ...payload.step_state, step_status: 'done' }, command_outcomes: [] };
    const written = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: next as never });
    expect(written.ok).toBe(true);
    await writer.close();

    for (const [key, bytes] of before) expect((await storage.get(key))!.bytes).toEqual(bytes);
    const resumed = await planResume({ storage, profile: snapshotLifecycle, runId: run, clock });
    expect(resumed.snapshot.sequence).toBeGreaterThan(plan.snapshot.sequence);
    expect(codes(resumed)).not.toContain('checkpoint_foreign_seal');
    expect(resumed).toMatchObject({ at: 'after:19.2' });

    // The other tool writes its next snapshot (no sequence, its own id and seal) a minute later.
    const theirs = {
      ...(parseJson(foreignFixture('snapshot-lifecycle', 'latest.spec.json')) as JsonObject),
      snapshot_id: 'cp_20260115150100_c0ffee',
      created_at: '2026-01-15T15:01:00+00:00',
    };
    await writeJson(storage, `${dir}/history/cp_20260115150100_c0ffee.json`, theirs);
    await writeJson(storage, `${dir}/latest.json`, theirs);
    const third = await planResume({ storage, profile: snapshotLifecycle, runId: run, clock });
    expect(third.snapshot.id).toBe('cp_20260115150100_c0ffee');
    expect(codes(third)).toContain('checkpoint_foreign_seal');
  });

  it("phasedWorkflow: savepoint continues an n8n run (cp_003 after cp_1, cp_2), n8n's files stay, n8n writes cp_4", async () => {
    const storage = memoryStorage();
    const clock = manualClock('2026-01-15T15:00:00Z');
    const dir = `checkpoints/${PHASED_RUN}`;
    await putFixtures(storage, 'phased-workflow', {
      [`${dir}/cp_1_phase_complete.json`]: 'cp_1_phase_complete.json',
      [`${dir}/cp_2_gate_decision.json`]: 'cp_2_gate_decision.json',
      [`${dir}/latest.json`]: 'latest.json',
    });
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    const writer = createWriter({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock, coalesceWindowMs: 0 });
    expect((await writer.checkpoint({ source: 'iteration', status: 'in_progress', payload: plan.payload as never })).ok).toBe(true);
    await writer.close();
    expect(utf8Decode((await storage.get(`${dir}/cp_1_phase_complete.json`))!.bytes)).toBe(
      foreignFixture('phased-workflow', 'cp_1_phase_complete.json'),
    );
    expect(await storage.get(`${dir}/cp_003_iteration.json`)).toBeDefined();
    const ours = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    expect(ours.snapshot).toMatchObject({ sequence: 3, source: 'iteration' });
    expect(codes(ours)).not.toContain('checkpoint_unsealed');

    // n8n's next checkpoint: sequence_number = checkpoint_count + 1, unpadded name, latest.json updated.
    const n8n = {
      ...(parseJson(foreignFixture('phased-workflow', 'cp_2_gate_decision.json')) as JsonObject),
      checkpoint_id: 'd4e5f6a7-b8c9-4d0e-8f1a-3b4c5d6e7f80',
      sequence_number: 4,
      trigger: 'phase_complete',
      timestamp: '2026-01-15T15:05:00.000Z',
    };
    await writeJson(storage, `${dir}/cp_4_phase_complete.json`, n8n);
    await writeJson(storage, `${dir}/latest.json`, n8n);
    const fourth = await planResume({ storage, profile: phasedWorkflow, runId: PHASED_RUN, clock });
    expect(fourth.snapshot).toMatchObject({ sequence: 4, source: 'phase_complete' });
    expect(codes(fourth)).toContain('checkpoint_unsealed');
  });
});
