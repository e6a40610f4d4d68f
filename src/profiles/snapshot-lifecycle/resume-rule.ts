import type { Snapshot } from '../../contract/snapshot.js';
import type { ResumePoint, ResumeRule, ResumeWarning } from '../../contract/resume-rule.js';
import { bullets, stringsOf } from '../../resume/rule-helpers.js';
import { assertObjectArgument } from '../../contract/arguments.js';

/**
 * The part of a snapshot-lifecycle.md payload the resume rule reads: `step_state` with
 * its `resume_hints` (`eligible`, `reason_code`, `next_actions`) and `todo_compliance`.
 * Fields are optional here so the rule accepts any payload type that carries them.
 */
export interface SnapshotLifecycleResumeFields {
  readonly step_state: {
    readonly plan_path?: string;
    readonly step_id?: string;
    readonly step_ordinal?: number;
    readonly step_status?: string;
    readonly todo_compliance?: { readonly result?: string; readonly violations?: readonly unknown[]; readonly checked_at?: string };
    readonly resume_hints?: {
      readonly eligible?: boolean;
      readonly reason_code?: string | null;
      readonly next_actions?: readonly string[];
    };
  };
  readonly context_digest?: { readonly protected_artifacts?: readonly string[] };
}

/** Step statuses after which the plan's next step comes next (snapshot-lifecycle.md: `done`, `skipped`). */
const FINISHED_STEP = new Set(['done', 'skipped']);

/**
 * Resume rule of the snapshotLifecycle profile. The snapshot's own
 * `step_state.resume_hints` decide: `eligible` says whether the run may resume without
 * a human, `reason_code` becomes the plan's `reason` (the spec's vocabulary, chosen by
 * the agent that wrote it), `next_actions` become what remains.
 *
 * `at` is the step id to continue or retry; when that step is `done` or `skipped` it is
 * `after:<step_id>` (the plan file's next step). A snapshot whose hints are missing or
 * not `eligible` gives `eligible: false` with the hints' reason code (or
 * `resume_hints_missing`) and an explanation a human can act on. A `todo_compliance`
 * result other than `PASS` adds the warning `resume_todo_noncompliant`.
 */
export const snapshotLifecycleResumeRule: ResumeRule<SnapshotLifecycleResumeFields> = (
  snapshot: Snapshot<SnapshotLifecycleResumeFields>,
): ResumePoint => {
  assertObjectArgument(snapshot, 'snapshotLifecycleResumeRule', 'snapshot');
  assertObjectArgument(snapshot.payload, 'snapshotLifecycleResumeRule', 'snapshot.payload');
  const step = snapshot.payload.step_state;
  const hints = step.resume_hints;
  const stepId = step.step_id ?? `#${step.step_ordinal ?? '?'}`;
  const stepStatus = step.step_status ?? 'unknown';
  const finished = FINISHED_STEP.has(stepStatus);
  const nextActions = stringsOf(hints?.next_actions);
  const plan = step.plan_path ?? 'the plan';
  const at = finished ? `after:${stepId}` : stepId;

  const warnings: ResumeWarning[] = [];
  const todo = step.todo_compliance;
  if (todo?.result !== undefined && todo.result !== 'PASS') {
    warnings.push({
      code: 'resume_todo_noncompliant',
      message: `the todo compliance check at snapshot time was ${todo.result}; review its violations before resuming`,
      details: { result: todo.result, violations: Array.isArray(todo.violations) ? todo.violations.length : 0 },
    });
  }

  let eligible: boolean;
  let reason: string;
  let explanation: string;
  if (!hints) {
    eligible = false;
    reason = 'resume_hints_missing';
    explanation = `snapshot ${snapshot.id} carries no resume_hints, so it cannot say whether step ${stepId} may resume; a human decides`;
  } else if (hints.eligible !== true) {
    eligible = false;
    reason = hints.reason_code || 'resume_not_eligible';
    explanation = `resume_hints mark snapshot ${snapshot.id} not eligible for automatic resume (reason_code ${reason}); work stands at step ${stepId} (${stepStatus}) of ${plan}`;
  } else {
    eligible = true;
    reason =
      hints.reason_code ||
      (finished ? 'step_finished_continue' : stepStatus === 'failed' ? 'step_failed_retry' : 'step_in_progress_continue');
    explanation = finished
      ? `step ${stepId} is ${stepStatus}; continue with the step after it in ${plan}`
      : `step ${stepId} is ${stepStatus}; ${stepStatus === 'failed' ? 'retry' : 'continue'} it`;
  }

  const header = finished
    ? `Resume ${plan} after step ${stepId} (ordinal ${step.step_ordinal ?? '?'}, ${stepStatus}).`
    : `Resume ${plan} at step ${stepId} (ordinal ${step.step_ordinal ?? '?'}, ${stepStatus}).`;
  const continuationPrompt = nextActions.length > 0 ? `${header}\nNext actions:\n${bullets(nextActions)}` : header;

  return {
    at,
    reason,
    explanation,
    eligible,
    completed: finished ? [stepId] : [],
    remaining: nextActions,
    continuationPrompt,
    restored: {
      plan_path: step.plan_path,
      step_id: step.step_id,
      step_ordinal: step.step_ordinal,
      step_status: step.step_status,
      next_actions: nextActions,
    },
    externalRefs: {
      plan_files: step.plan_path ? 1 : 0,
      protected_artifacts: stringsOf(snapshot.payload.context_digest?.protected_artifacts).length,
    },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
};
