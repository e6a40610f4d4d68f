import type { Snapshot } from '../../contract/snapshot.js';
import type { ResumePoint, ResumeRule, ResumeWarning } from '../../contract/resume-rule.js';
import { stringsOf } from '../../resume/rule-helpers.js';
import { assertObjectArgument } from '../../contract/arguments.js';

/**
 * The plan-executor.md fields the resume rule reads (the `NN-CHECKPOINT.json` document
 * without `status` and `last_activity`, which live in the snapshot's `status` and
 * `createdAt`). Progress fields are optional here, as the spec's "required" list leaves them.
 */
export interface PlanExecutorResumeFields {
  readonly plan_number: string;
  readonly current_task_index: number;
  readonly current_task: string;
  readonly total_tasks?: number;
  readonly completed_tasks?: readonly { readonly name: string; readonly commit: string }[];
  readonly remaining_tasks?: readonly { readonly name: string }[];
  readonly task_commits?: Readonly<Record<string, string>>;
  readonly files_modified?: readonly string[];
  readonly partial_commits?: readonly unknown[];
  readonly error?: string | null;
}

/** What the rule reads off a plan-executor snapshot, once. */
interface PlanView {
  readonly p: PlanExecutorResumeFields;
  readonly status: string;
  /** The plan completed: nothing remains. */
  readonly done: boolean;
  readonly completedTasks: readonly { readonly name: string; readonly commit: string }[];
  readonly remainingTasks: readonly string[];
  /** The current task, then the remaining ones (none when done). */
  readonly remaining: readonly string[];
  readonly partialCommits: readonly unknown[];
  readonly files: readonly string[];
  readonly total: number;
  /** `task 3 of 7`. */
  readonly taskNo: string;
}

function planView(snapshot: Snapshot<PlanExecutorResumeFields>): PlanView {
  const p = snapshot.payload;
  const completedTasks = (p.completed_tasks ?? []).filter((t) => typeof t?.name === 'string');
  const remainingTasks = (p.remaining_tasks ?? []).map((t) => t?.name).filter((n): n is string => typeof n === 'string');
  const total = typeof p.total_tasks === 'number' ? p.total_tasks : completedTasks.length + 1 + remainingTasks.length;
  const status = snapshot.status;
  const done = status === 'completed';
  return {
    p,
    status,
    done,
    completedTasks,
    remainingTasks,
    remaining: done ? [] : [p.current_task, ...remainingTasks.filter((n) => n !== p.current_task)],
    partialCommits: Array.isArray(p.partial_commits) ? p.partial_commits : [],
    files: stringsOf(p.files_modified),
    total,
    taskNo: `task ${p.current_task_index + 1} of ${total}`,
  };
}

/** Where to resume and why, by the snapshot's status. */
function decide(v: PlanView): Pick<ResumePoint, 'at' | 'reason' | 'explanation' | 'eligible'> {
  const { p, taskNo } = v;
  const at = String(p.current_task_index);
  if (v.done)
    return {
      at: 'plan_complete',
      reason: 'plan_completed',
      explanation: `plan ${p.plan_number} completed all ${v.total} tasks; there is nothing left to resume`,
      eligible: false,
    };
  if (v.status === 'timeout')
    return {
      at,
      reason: 'timeout_resume_current_task',
      explanation: `plan ${p.plan_number} timed out during ${taskNo}; resume that task`,
      eligible: true,
    };
  if (v.status === 'failed') {
    return {
      at,
      reason: 'failed_retry_current_task',
      explanation: `plan ${p.plan_number} failed during ${taskNo}; retry that task after looking at the recorded error`,
      eligible: true,
    };
  }
  return { at, reason: 'continue_current_task', explanation: `plan ${p.plan_number} is at ${taskNo}; continue with it`, eligible: true };
}

function planWarnings(v: PlanView): ResumeWarning[] {
  const { p, done, status, partialCommits, completedTasks, remaining } = v;
  const warnings: ResumeWarning[] = [];
  if (!done && (status === 'timeout' || status === 'failed') && partialCommits.length > 0) {
    warnings.push({
      code: 'resume_partial_commits',
      message: `${partialCommits.length} commit(s) were made before the ${status}; review them before resuming the task`,
      details: { partial_commits: partialCommits.length, status },
    });
  }
  if (!done && typeof p.total_tasks === 'number' && completedTasks.length + remaining.length !== p.total_tasks) {
    warnings.push({
      code: 'resume_task_count_mismatch',
      message: `completed (${completedTasks.length}) and remaining (${remaining.length}) tasks do not add up to total_tasks (${p.total_tasks})`,
      details: { completed: completedTasks.length, remaining: remaining.length, total_tasks: p.total_tasks },
    });
  }
  return warnings;
}

function continuationPrompt(v: PlanView): string {
  const { p, done, status, completedTasks, remainingTasks, partialCommits, files } = v;
  const lines = [
    done ? `Plan ${p.plan_number} is complete (${v.total} tasks).` : `Resume plan ${p.plan_number} at ${v.taskNo}: ${p.current_task}.`,
  ];
  if (completedTasks.length > 0) lines.push(`Completed: ${completedTasks.map((t) => `${t.name} (${t.commit})`).join('; ')}.`);
  if (!done && remainingTasks.length > 0) lines.push(`Then: ${remainingTasks.join('; ')}.`);
  if (partialCommits.length > 0) lines.push(`Partial commits before the interruption: ${partialCommits.map(String).join(', ')}.`);
  if (files.length > 0) lines.push(`Files modified so far: ${files.join(', ')}.`);
  if (!done && status === 'failed' && typeof p.error === 'string' && p.error !== '') lines.push(`The last attempt failed with: ${p.error}`);
  if (!done && status === 'timeout') lines.push('The last attempt timed out.');
  return lines.join('\n');
}

/**
 * Resume rule of the planExecutor profile (plan-executor.md). `at` is the 0-based
 * `current_task_index` as a string:
 *
 * - `in_progress` → continue at the current task (`continue_current_task`);
 * - `timeout` → resume the current task (`timeout_resume_current_task`);
 * - `failed` → retry the current task (`failed_retry_current_task`); the last `error`
 *   goes into the continuation prompt and `restored.error`, never into `explanation`;
 * - `completed` → `at: 'plan_complete'`, `eligible: false`, nothing remains.
 *
 * Completed tasks keep their commits (`restored.completed_tasks`, `task_commits`);
 * remaining tasks are the current task then `remaining_tasks`. After a timeout or a
 * failure with `partial_commits`, the warning `resume_partial_commits` asks for a review
 * of those commits; task counts that do not add up to `total_tasks` give
 * `resume_task_count_mismatch`.
 */
export const planExecutorResumeRule: ResumeRule<PlanExecutorResumeFields> = (snapshot: Snapshot<PlanExecutorResumeFields>): ResumePoint => {
  assertObjectArgument(snapshot, 'planExecutorResumeRule', 'snapshot');
  assertObjectArgument(snapshot.payload, 'planExecutorResumeRule', 'snapshot.payload');
  const v = planView(snapshot);
  const { p, completedTasks, partialCommits, files } = v;
  const { at, reason, explanation, eligible } = decide(v);
  const warnings = planWarnings(v);
  const commits = new Set<string>([...completedTasks.map((t) => t.commit), ...Object.values(p.task_commits ?? {})]);
  return {
    at,
    reason,
    explanation,
    eligible,
    completed: completedTasks.map((t) => t.name),
    remaining: v.remaining as string[],
    continuationPrompt: continuationPrompt(v),
    restored: {
      plan_number: p.plan_number,
      current_task_index: p.current_task_index,
      current_task: p.current_task,
      total_tasks: v.total,
      completed_tasks: completedTasks,
      remaining_tasks: p.remaining_tasks ?? [],
      task_commits: p.task_commits ?? {},
      files_modified: files,
      partial_commits: partialCommits,
      error: p.error ?? null,
    },
    externalRefs: { files_modified: files.length, commits: commits.size + partialCommits.length },
    ...(warnings.length > 0 ? { warnings } : {}),
  };
};
