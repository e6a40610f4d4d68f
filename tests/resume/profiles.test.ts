/**
 * The built-in profiles end to end in one process: the writer writes with each spec's
 * profile on memory storage, the planner restores and applies the profile's own rule.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createPlanExecutorProfile, planExecutor, type PlanExecutorPayload } from 'savepoint/plan-executor';
import { createWriter, memoryStorage, planResume, isCheckpointError, type Profile, type StorageAdapter } from 'savepoint';
import { phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { snapshotLifecycle, type SnapshotLifecyclePayload } from 'savepoint/snapshot-lifecycle';
import { corrupt, flipBit } from '../support/runs.js';
import { manualClock } from '../support/clock.js';

const fixture = <T>(name: string): T => JSON.parse(readFileSync(new URL(`../fixtures/resume/${name}`, import.meta.url), 'utf8')) as T;
const phasedPayload = fixture<PhasedWorkflowPayload>('phased-workflow.payload.json');
const lifecyclePayload = fixture<SnapshotLifecyclePayload>('snapshot-lifecycle.payload.json');
const planPayload = fixture<PlanExecutorPayload>('plan-executor-02.payload.json');

async function write<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  inputs: { source: string; status: string; payload: P }[],
) {
  const clock = manualClock();
  const writer = createWriter({ storage, profile, runId, clock, failMode: 'throw' });
  const results = [];
  for (const input of inputs) {
    await clock.advance(10_000);
    results.push(await writer.checkpoint(input));
  }
  await writer.close();
  return { clock, results };
}

function withPhase(base: PhasedWorkflowPayload, phase: string, done: readonly string[]): PhasedWorkflowPayload {
  const outputs = { ...base.state_snapshot.phase_outputs };
  for (const k of Object.keys(outputs) as (keyof typeof outputs)[])
    outputs[k] = done.includes(k) ? (base.state_snapshot.phase_outputs[k] ?? { ok: true }) : null;
  return { ...base, phase, state_snapshot: { ...base.state_snapshot, phase_outputs: outputs } };
}

describe('phasedWorkflow profile', () => {
  const run = '7c9e6679-7425-40de-944b-e07fc1f90ae7';

  it('writer → planResume: phase_complete resumes at the next phase with the RESUME message', async () => {
    const storage = memoryStorage();
    const { clock } = await write(storage, phasedWorkflow, run, [
      { source: 'phase_complete', status: 'in_progress', payload: withPhase(phasedPayload, 'phase_0_triage', ['phase_0']) },
      { source: 'gate_decision', status: 'in_progress', payload: withPhase(phasedPayload, 'phase_0_triage', ['phase_0', 'phase_0_5']) },
      { source: 'phase_complete', status: 'in_progress', payload: phasedPayload },
    ]);
    const plan = await planResume({
      storage,
      profile: phasedWorkflow,
      runId: run,
      clock,
      currentLessons: phasedPayload.state_snapshot.active_lessons,
    });
    expect(plan.source).toEqual({ key: `checkpoints/${run}/latest.json`, origin: 'latest', latest: 'valid' });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan).toMatchObject({
      at: 'phase_2',
      reason: 'phase_complete_next_phase',
      eligible: true,
      completed: ['phase_0', 'phase_0_5', 'phase_1'],
    });
    expect(plan.message).toBe(
      `RESUME: Continuing run ${run} from checkpoint ${plan.snapshot.id}\nResume point: phase_2\nPhases completed: phase_0, phase_0_5, phase_1\nCost so far: $4.20`,
    );
    expect(plan.restored).toMatchObject({
      cost_accumulated: 4.2,
      circuit_breaker_state: { github_api: 'closed', devin: 'closed' },
      current_phase: 'phase_1_plan',
    });
    expect(plan.warnings.map((w) => w.code)).toEqual(['resume_external_state']);
  });

  it('corrupt latest → history (cp_NNN_trigger.json) through the index; gate_decision → <phase>_gate', async () => {
    const storage = memoryStorage();
    await write(storage, phasedWorkflow, run, [
      { source: 'phase_complete', status: 'in_progress', payload: phasedPayload },
      {
        source: 'gate_decision',
        status: 'in_progress',
        payload: withPhase(phasedPayload, 'phase_1_plan', ['phase_0', 'phase_0_5', 'phase_1', 'phase_2']),
      },
    ]);
    await corrupt(storage, phasedWorkflow.layout.latestKey(run), (b) => flipBit(b, 4000));
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: run });
    expect(plan.source).toMatchObject({ key: `checkpoints/${run}/cp_002_gate_decision.json`, origin: 'index', latest: 'invalid' });
    expect(plan.at).toBe('phase_1_plan_gate');
  });

  it('circuit_breaker → human_review; lessons changed → warned', async () => {
    const storage = memoryStorage();
    await write(storage, phasedWorkflow, run, [{ source: 'circuit_breaker', status: 'paused', payload: phasedPayload }]);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: run, currentLessons: ['L-12: pin API versions'] });
    expect(plan).toMatchObject({ at: 'human_review', eligible: false });
    expect(plan.warnings.find((w) => w.code === 'resume_lessons_changed')).toMatchObject({ details: { added: 0, removed: 1 } });
  });
});

describe('snapshotLifecycle profile', () => {
  it('writer → planResume: resume_hints decide; corrupt latest falls back to history by snapshot id', async () => {
    const storage = memoryStorage();
    const done = {
      ...lifecyclePayload,
      step_state: { ...lifecyclePayload.step_state, step_id: '19.1', step_ordinal: 1, step_status: 'done' as const },
    };
    const { clock } = await write(storage, snapshotLifecycle, 'session-a', [
      { source: 'step_boundary', status: 'in_progress', payload: done },
      { source: 'step_boundary', status: 'in_progress', payload: lifecyclePayload },
    ]);
    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: 'session-a', clock });
    expect(plan).toMatchObject({
      at: '19.2',
      reason: 'step_in_progress',
      eligible: true,
      remaining: ['re-run npm test', 'finish the writer heartbeat'],
    });
    expect(plan.continuationPrompt).toContain('Resume plans/epic-19.md at step 19.2');
    await corrupt(storage, snapshotLifecycle.layout.latestKey('session-a'), (b) => b.slice(0, 100));
    const fallback = await planResume({ storage, profile: snapshotLifecycle, runId: 'session-a', clock });
    expect(fallback.snapshot.sequence).toBe(2);
    expect(fallback.source.key).toMatch(/^checkpoints\/session-a\/history\/cp_\d{8}T\d{9}Z_[0-9a-z]+\.json$/);
  });

  it('hints not eligible → a plan that says so and why', async () => {
    const storage = memoryStorage();
    const blocked = {
      ...lifecyclePayload,
      step_state: {
        ...lifecyclePayload.step_state,
        resume_hints: { eligible: false, reason_code: 'unrecoverable_error', next_actions: ['ask the operator'] },
      },
    };
    await write(storage, snapshotLifecycle, 'session-b', [{ source: 'error_boundary', status: 'failed', payload: blocked }]);
    const plan = await planResume({ storage, profile: snapshotLifecycle, runId: 'session-b' });
    expect(plan).toMatchObject({ eligible: false, reason: 'unrecoverable_error' });
    expect(plan.explanation).toMatch(/not eligible/);
    expect(plan.warnings.map((w) => w.code)).toContain('resume_run_terminal');
  });
});

describe('planExecutor profile', () => {
  it('writer → planResume on NN-CHECKPOINT.json: a timeout resumes the current task', async () => {
    const storage = memoryStorage();
    await write(storage, planExecutor, '02', [
      { source: 'task_complete', status: 'in_progress', payload: planPayload },
      { source: 'timeout', status: 'timeout', payload: { ...planPayload, partial_commits: ['9f8e7d'] } },
    ]);
    const plan = await planResume({ storage, profile: planExecutor, runId: '02' });
    expect(plan.source.key).toBe('plans/02-CHECKPOINT.json');
    expect(plan).toMatchObject({
      at: '2',
      reason: 'timeout_resume_current_task',
      eligible: true,
      remaining: ['Task 3: Add API routes', 'Task 4: Tests'],
    });
    expect(plan.restored).toMatchObject({
      task_commits: { '1': 'abc123', '2': 'def456' },
      files_modified: ['src/api.ts', 'src/models.ts'],
    });
    expect(plan.warnings.map((w) => w.code)).toContain('resume_partial_commits');
  });

  it('the spec keeps one file: corrupt → checkpoint_no_valid_snapshot; with history on → the previous checkpoint', async () => {
    const storage = memoryStorage();
    await write(storage, planExecutor, '03', [
      { source: 'task_complete', status: 'in_progress', payload: { ...planPayload, plan_number: '03' } },
    ]);
    // A change that leaves a spec-valid document is an edit by another executor (the file is
    // the newest truth, resumed with a warning); a change that leaves no document is corruption.
    await corrupt(storage, 'plans/03-CHECKPOINT.json', (b) => flipBit(b, 77));
    const edited = await planResume({ storage, profile: planExecutor, runId: '03' });
    expect(edited.warnings.map((w) => w.code)).toContain('checkpoint_integrity_mismatch');
    await corrupt(storage, 'plans/03-CHECKPOINT.json', (b) => b.subarray(0, b.length - 2));
    await expect(planResume({ storage, profile: planExecutor, runId: '03' })).rejects.toSatisfy((e: unknown) =>
      isCheckpointError(e, 'checkpoint_no_valid_snapshot'),
    );

    const withHistory = createPlanExecutorProfile({ history: true });
    const store2 = memoryStorage();
    await write(store2, withHistory, '04', [
      {
        source: 'task_complete',
        status: 'in_progress',
        payload: { ...planPayload, plan_number: '04', current_task_index: 1, current_task: 'Task 2: Models' },
      },
      { source: 'task_complete', status: 'in_progress', payload: { ...planPayload, plan_number: '04' } },
    ]);
    await corrupt(store2, 'plans/04-CHECKPOINT.json', (b) => b.subarray(0, b.length - 2));
    const plan = await planResume({ storage: store2, profile: withHistory, runId: '04' });
    expect(plan.snapshot.sequence).toBe(2);
    expect(plan.source.key).toMatch(/^plans\/04-CHECKPOINT\.history\/cp_/);
    expect(plan.at).toBe('2');
  });
});
