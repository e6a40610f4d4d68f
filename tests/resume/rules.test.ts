import { describe, expect, it } from 'vitest';
import { createPhasedWorkflowResumeRule, phasedWorkflowResumeRule, type PhasedWorkflowResumeFields } from 'savepoint/phased-workflow';
import { defaultProfile, type ResumeRule, type Snapshot } from 'savepoint';
import { defaultResumeRule, type ResumeRuleContext } from 'savepoint/toolkit';
import { planExecutorResumeRule, type PlanExecutorResumeFields } from 'savepoint/plan-executor';
import { snapshotLifecycleResumeRule, type SnapshotLifecycleResumeFields } from 'savepoint/snapshot-lifecycle';

const ctx: ResumeRuleContext = { now: Date.parse('2026-01-15T15:00:00Z'), isTerminal: (s) => s === 'completed' || s === 'failed' };

function snap<P>(payload: P, over: Partial<Snapshot<P>> = {}): Snapshot<P> {
  return {
    id: 'cp_20260115T143000000Z_k3v9x2m7qa',
    runId: 'run-1',
    sequence: 7,
    createdAt: '2026-01-15T14:30:00.000Z',
    source: 'manual',
    sourceDetails: [],
    status: 'in_progress',
    payload,
    integrity: { format_version: '1.0', algorithm: 'sha256', checksum: '0'.repeat(64) },
    ...over,
  };
}

describe('snapshotLifecycleResumeRule (snapshot-lifecycle.md resume_hints)', () => {
  const base = (
    hints: SnapshotLifecycleResumeFields['step_state']['resume_hints'],
    stepStatus = 'in_progress',
    result = 'PASS',
  ): SnapshotLifecycleResumeFields => ({
    step_state: {
      plan_path: 'plans/epic-19.md',
      step_id: '19.2',
      step_ordinal: 2,
      step_status: stepStatus,
      todo_compliance: { result, violations: result === 'PASS' ? [] : ['no owner', 'stale'], checked_at: '2026-01-15T14:29:58.000Z' },
      ...(hints ? { resume_hints: hints } : {}),
    },
    context_digest: { protected_artifacts: ['plans/epic-19.md', 'src/writer/index.ts'] },
  });

  it('eligible hints: resume at the step, reason_code and next_actions from the hints', () => {
    const point = snapshotLifecycleResumeRule(
      snap(base({ eligible: true, reason_code: 'step_in_progress', next_actions: ['re-run npm test', 'finish heartbeat'] })),
      ctx,
    );
    expect(point).toMatchObject({
      at: '19.2',
      reason: 'step_in_progress',
      eligible: true,
      completed: [],
      remaining: ['re-run npm test', 'finish heartbeat'],
    });
    expect(point.continuationPrompt).toBe(
      'Resume plans/epic-19.md at step 19.2 (ordinal 2, in_progress).\nNext actions:\n- re-run npm test\n- finish heartbeat',
    );
    expect(point.restored).toMatchObject({ plan_path: 'plans/epic-19.md', step_id: '19.2', step_ordinal: 2 });
    expect(point.externalRefs).toEqual({ plan_files: 1, protected_artifacts: 2 });
    expect(point.warnings).toBeUndefined();
  });

  it('a done step resumes after it', () => {
    const point = snapshotLifecycleResumeRule(snap(base({ eligible: true, reason_code: '', next_actions: ['start 19.3'] }, 'done')), ctx);
    expect(point).toMatchObject({
      at: 'after:19.2',
      reason: 'step_finished_continue',
      eligible: true,
      completed: ['19.2'],
      remaining: ['start 19.3'],
    });
    expect(point.continuationPrompt).toMatch(/^Resume plans\/epic-19.md after step 19.2/);
  });

  it('a failed step is retried', () => {
    const point = snapshotLifecycleResumeRule(snap(base({ eligible: true, reason_code: null, next_actions: [] }, 'failed')), ctx);
    expect(point).toMatchObject({ at: '19.2', reason: 'step_failed_retry', eligible: true });
  });

  it('not eligible: a plan that says so and why', () => {
    const point = snapshotLifecycleResumeRule(
      snap(base({ eligible: false, reason_code: 'checkpoint_integrity_mismatch', next_actions: ['ask the operator'] })),
      ctx,
    );
    expect(point.eligible).toBe(false);
    expect(point.reason).toBe('checkpoint_integrity_mismatch');
    expect(point.explanation).toMatch(/not eligible for automatic resume \(reason_code checkpoint_integrity_mismatch\)/);
    expect(point.remaining).toEqual(['ask the operator']);
  });

  it('missing hints are not eligible', () => {
    const point = snapshotLifecycleResumeRule(snap(base(undefined)), ctx);
    expect(point).toMatchObject({ eligible: false, reason: 'resume_hints_missing' });
  });

  it('a failed todo compliance check is a warning with the violation count', () => {
    const point = snapshotLifecycleResumeRule(
      snap(base({ eligible: true, reason_code: 'x', next_actions: [] }, 'in_progress', 'FAIL')),
      ctx,
    );
    expect(point.warnings).toEqual([
      expect.objectContaining({ code: 'resume_todo_noncompliant', details: { result: 'FAIL', violations: 2 } }),
    ]);
  });
});

describe('phasedWorkflowResumeRule (phased-workflow-github.md step_4_determine_resume_point)', () => {
  const outputs = (done: string[]): Record<string, object | null> => {
    const o: Record<string, object | null> = {};
    for (const k of ['phase_0', 'phase_0_5', 'phase_1', 'phase_2', 'phase_3', 'phase_4', 'phase_5', 'phase_6', 'phase_7', 'phase_8'])
      o[k] = done.includes(k) ? { ok: k } : null;
    return o;
  };
  const payload = (phase: string, done: string[]): PhasedWorkflowResumeFields => ({
    phase,
    state_snapshot: {
      phase_outputs: outputs(done),
      circuit_breaker_state: { github_api: 'closed' },
      cost_accumulated: 12.3,
      active_lessons: ['L-1', 'L-7'],
    },
  });
  const id = '3f1c2a9e-7b4d-4c1e-9a2b-5d6e7f8a9b0c';
  const run = 'a1b2c3d4-e5f6-4a1b-8c2d-3e4f5a6b7c8d';

  it('phase_complete → the next phase (number key by default), phase_0 → phase_0_5 → phase_1', () => {
    const p0 = phasedWorkflowResumeRule(snap(payload('phase_0_triage', ['phase_0']), { source: 'phase_complete' }), ctx);
    expect(p0).toMatchObject({ at: 'phase_0_5', reason: 'phase_complete_next_phase', eligible: true, completed: ['phase_0'] });
    const p05 = phasedWorkflowResumeRule(snap(payload('phase_0_5_research', ['phase_0', 'phase_0_5']), { source: 'phase_complete' }), ctx);
    expect(p05.at).toBe('phase_1');
    expect(p05.remaining).toEqual(['phase_1', 'phase_2', 'phase_3', 'phase_4', 'phase_5', 'phase_6', 'phase_7', 'phase_8']);
  });

  it('phase_complete with the workflow phase names → the next full name', () => {
    const phases = ['phase_0_triage', 'phase_1_plan', 'phase_2_build', 'phase_3_verify'];
    const rule = createPhasedWorkflowResumeRule({ phases });
    const point = rule(snap(payload('phase_1_plan', ['phase_0', 'phase_1']), { source: 'phase_complete' }), ctx);
    expect(point).toMatchObject({
      at: 'phase_2_build',
      completed: ['phase_0_triage', 'phase_1_plan'],
      remaining: ['phase_2_build', 'phase_3_verify'],
    });
    const last = rule(snap(payload('phase_3_verify', ['phase_0', 'phase_1', 'phase_2', 'phase_3']), { source: 'phase_complete' }), ctx);
    expect(last).toMatchObject({ at: 'workflow_complete', eligible: false, reason: 'phase_complete_workflow_done', remaining: [] });
  });

  it('phase_complete with phaseNames (as the phasedWorkflow profile takes them) → <key>_<name>', () => {
    const rule = createPhasedWorkflowResumeRule({ phaseNames: { phase_0: 'intake', phase_1: 'plan', phase_2: 'build' } });
    const point = rule(snap(payload('phase_1_plan', ['phase_0', 'phase_1']), { source: 'phase_complete' }), ctx);
    expect(point.at).toBe('phase_2_build');
    expect(point.completed).toEqual(['phase_0_intake', 'phase_1_plan']);
    expect(point.remaining[1]).toBe('phase_3');
  });

  it('a workflow that skips phase_0_5: phase_2_5_x is phase_2 unless phase_2_5 is known', () => {
    const point = phasedWorkflowResumeRule(
      snap(payload('phase_2_5_checks', ['phase_0', 'phase_1', 'phase_2']), { source: 'phase_complete' }),
      ctx,
    );
    expect(point.at).toBe('phase_3');
    expect(point.restored).toMatchObject({ current_phase_key: 'phase_2' });
  });

  it('gate_decision → <phase>_gate', () => {
    const point = phasedWorkflowResumeRule(
      snap(payload('phase_3_build', ['phase_0', 'phase_1', 'phase_2', 'phase_3']), { source: 'gate_decision' }),
      ctx,
    );
    expect(point).toMatchObject({ at: 'phase_3_build_gate', reason: 'gate_decision_reevaluate_gate', eligible: true });
    expect(point.remaining[0]).toBe('phase_4');
  });

  it('circuit_breaker → human_review, not eligible', () => {
    const point = phasedWorkflowResumeRule(
      snap(payload('phase_4_test', ['phase_0', 'phase_1', 'phase_2', 'phase_3']), { source: 'circuit_breaker' }),
      ctx,
    );
    expect(point).toMatchObject({ at: 'human_review', reason: 'circuit_breaker_human_review', eligible: false });
  });

  it.each(['escalation', 'iteration', 'cost_threshold', 'expensive_op', 'destructive_op', 'manual'])(
    '%s → the start of the current phase',
    (trigger) => {
      const point = phasedWorkflowResumeRule(
        snap(payload('phase_4_test', ['phase_0', 'phase_1', 'phase_2', 'phase_3']), { source: trigger }),
        ctx,
      );
      expect(point).toMatchObject({ at: 'phase_4_test', reason: 'restart_current_phase', eligible: true });
      expect(point.remaining[0]).toBe('phase_4');
    },
  );

  it('restores phase outputs, breaker state, cost and active lessons, and emits the RESUME message', () => {
    const point = phasedWorkflowResumeRule(
      snap(payload('phase_1_plan', ['phase_0', 'phase_0_5', 'phase_1']), { source: 'phase_complete', id, runId: run }),
      ctx,
    );
    expect(point.restored).toEqual({
      current_phase: 'phase_1_plan',
      current_phase_key: 'phase_1',
      phase_outputs: outputs(['phase_0', 'phase_0_5', 'phase_1']),
      circuit_breaker_state: { github_api: 'closed' },
      cost_accumulated: 12.3,
      active_lessons: ['L-1', 'L-7'],
    });
    expect(point.activeLessons).toEqual(['L-1', 'L-7']);
    expect(point.message).toBe(
      `RESUME: Continuing run ${run} from checkpoint ${id}\nResume point: phase_2\nPhases completed: phase_0, phase_0_5, phase_1\nCost so far: $12.30`,
    );
  });
});

describe('planExecutorResumeRule (plan-executor.md)', () => {
  const example: PlanExecutorResumeFields = {
    plan_number: '02',
    current_task_index: 2,
    current_task: 'Task 3: Add API routes',
    completed_tasks: [
      { name: 'Task 1: Setup', commit: 'abc123' },
      { name: 'Task 2: Models', commit: 'def456' },
    ],
    remaining_tasks: [{ name: 'Task 4: Tests' }],
    error: null,
    total_tasks: 4,
    task_commits: { '1': 'abc123', '2': 'def456' },
    files_modified: ['src/api.ts', 'src/models.ts'],
    partial_commits: [],
  };

  it('in_progress: the current task, completed tasks with commits, remaining tasks, files', () => {
    const point = planExecutorResumeRule(snap(example, { status: 'in_progress' }), ctx);
    expect(point).toMatchObject({
      at: '2',
      reason: 'continue_current_task',
      eligible: true,
      completed: ['Task 1: Setup', 'Task 2: Models'],
      remaining: ['Task 3: Add API routes', 'Task 4: Tests'],
    });
    expect(point.restored).toMatchObject({
      current_task_index: 2,
      task_commits: { '1': 'abc123', '2': 'def456' },
      files_modified: ['src/api.ts', 'src/models.ts'],
    });
    expect(point.continuationPrompt).toContain('Resume plan 02 at task 3 of 4: Task 3: Add API routes.');
    expect(point.continuationPrompt).toContain('Completed: Task 1: Setup (abc123); Task 2: Models (def456).');
    expect(point.externalRefs).toEqual({ files_modified: 2, commits: 2 });
    expect(point.warnings).toBeUndefined();
  });

  it('timeout resumes the current task and flags partial commits', () => {
    const point = planExecutorResumeRule(snap({ ...example, partial_commits: ['9f8e7d'] }, { status: 'timeout' }), ctx);
    expect(point).toMatchObject({ at: '2', reason: 'timeout_resume_current_task', eligible: true });
    expect(point.warnings).toEqual([
      expect.objectContaining({ code: 'resume_partial_commits', details: { partial_commits: 1, status: 'timeout' } }),
    ]);
    expect(point.continuationPrompt).toContain('Partial commits before the interruption: 9f8e7d.');
  });

  it('failed retries the current task; the error is in the prompt and restored, not the explanation', () => {
    const point = planExecutorResumeRule(snap({ ...example, error: 'tsc: 3 errors in src/api.ts' }, { status: 'failed' }), ctx);
    expect(point).toMatchObject({ at: '2', reason: 'failed_retry_current_task', eligible: true });
    expect(point.explanation).not.toContain('tsc');
    expect(point.continuationPrompt).toContain('The last attempt failed with: tsc: 3 errors in src/api.ts');
    expect(point.restored).toMatchObject({ error: 'tsc: 3 errors in src/api.ts' });
  });

  it('completed: nothing remains', () => {
    const point = planExecutorResumeRule(
      snap({ ...example, current_task_index: 4, current_task: '', remaining_tasks: [] }, { status: 'completed' }),
      ctx,
    );
    expect(point).toMatchObject({ at: 'plan_complete', eligible: false, reason: 'plan_completed', remaining: [] });
  });

  it('inconsistent counts are a warning', () => {
    const point = planExecutorResumeRule(snap({ ...example, total_tasks: 9 }, { status: 'in_progress' }), ctx);
    expect(point.warnings?.map((w) => w.code)).toEqual(['resume_task_count_mismatch']);
  });
});

describe('defaultResumeRule (generic JSON state)', () => {
  it('resumes after the snapshot while the run is not terminal', () => {
    const point = defaultResumeRule(snap({ step: 3 }), ctx);
    expect(point).toMatchObject({
      at: 'cp_20260115T143000000Z_k3v9x2m7qa',
      reason: 'continue_after_snapshot',
      eligible: true,
      completed: [],
      remaining: [],
    });
  });

  it('picks up conventional fields of object state', () => {
    const point = defaultResumeRule(snap({ completed: ['a', 'b'], next_actions: ['c'], continuation_prompt: 'do c' }), ctx);
    expect(point).toMatchObject({ completed: ['a', 'b'], remaining: ['c'], continuationPrompt: 'do c' });
  });

  it('a terminal status is not eligible', () => {
    const point = defaultResumeRule(snap('x', { status: 'completed' }), ctx);
    expect(point).toMatchObject({ eligible: false, reason: 'run_completed' });
  });

  it('fits the default profile', () => {
    // Type-level: the rule is a ResumeRule of the default profile's payload.
    const rule: NonNullable<typeof defaultProfile.resume> = defaultResumeRule;
    expect(typeof rule).toBe('function');
  });
});

describe('rules fit the profiles’ full payload types', () => {
  it('a rule over the fields it reads is a rule over any payload that has them (type-checked)', () => {
    type FullPlanExecutor = {
      plan_number: string;
      current_task_index: number;
      current_task: string;
      total_tasks: number;
      completed_tasks: { name: string; commit: string }[];
      remaining_tasks: { name: string }[];
      task_commits: Record<string, string>;
      files_modified: string[];
      partial_commits: string[];
      error: string | null;
    };
    type FullPhased = {
      phase: string;
      state_snapshot: {
        phase_outputs: {
          phase_0: Record<string, unknown> | null;
          phase_0_5: Record<string, unknown> | null;
          phase_1: Record<string, unknown> | null;
        };
        current_phase_state: {
          phase: string;
          started_at: string;
          progress: Record<string, unknown>;
          partial_output: Record<string, unknown> | null;
        };
        gate_history: { gate_id: string; decision: string; score: number; iteration: number }[];
        circuit_breaker_state: Record<string, unknown>;
        cost_accumulated: number;
        health_history: unknown[];
        errors_encountered: unknown[];
        active_lessons: unknown[];
      };
      context_fields: Record<string, unknown>;
    };
    type FullLifecycle = {
      step_state: {
        plan_path: string;
        step_id: string;
        step_ordinal: number;
        step_status: 'in_progress' | 'done' | 'failed' | 'skipped';
        todo_compliance: { result: 'PASS' | 'FAIL' | 'WARN'; violations: string[]; checked_at: string };
        resume_hints: { eligible: boolean; reason_code: string; next_actions: string[] };
      };
      context_digest: {
        window_pressure: 'low' | 'medium' | 'high';
        protected_artifacts: string[];
        dropped_items: number;
        policy_profile: string;
      };
      command_outcomes: unknown[];
    };
    const rules: [ResumeRule<FullPlanExecutor>, ResumeRule<FullPhased>, ResumeRule<FullLifecycle>, ResumeRule<{ anything: 1 }>] = [
      planExecutorResumeRule,
      phasedWorkflowResumeRule,
      snapshotLifecycleResumeRule,
      defaultResumeRule,
    ];
    expect(rules).toHaveLength(4);
  });
});
