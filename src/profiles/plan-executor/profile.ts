import { planExecutorResumeRule } from './resume-rule.js';
import type { ResumeRule } from '../../contract/resume-rule.js';
import type { RetentionPolicy } from '../../contract/retention-policy.js';
import { defineProfile } from '../define-profile.js';
import { type Profile } from '../../contract/profile.js';
import { planExecutorDocumentFormat } from './document.js';
import { planExecutorLayout } from './layout.js';
import { PLAN_EXECUTOR_STATUSES, PlanExecutorPayloadSchema, type PlanExecutorPayload, type PlanExecutorTrigger } from './schema.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link createPlanExecutorProfile}. */
export interface PlanExecutorProfileOptions {
  /**
   * The spec's `{state_path}`: a key prefix before `plans/`, or `''` for the storage root.
   * @default ''
   */
  readonly statePath?: string;
  /**
   * Keep a history of checkpoints in `plans/{NN}-CHECKPOINT.history/` (savepoint's
   * addition; the spec keeps only the one file). Needed for retention to have anything
   * to keep, and for resume to fall back to an older checkpoint if the file is damaged.
   * @default false
   */
  readonly history?: boolean;
  /**
   * Coalescing window (the spec has none; savepoint's default applies).
   * @default 3000
   */
  readonly coalesceWindowMs?: number;
  /** Retention policy, for use with `history`. @default none (the spec has no retention rule) */
  readonly retention?: RetentionPolicy;
  /** Resume rule. @default planExecutorResumeRule */
  readonly resume?: ResumeRule<PlanExecutorPayload>;
}

/** The planExecutor profile type. */
export type PlanExecutorProfile = Profile<PlanExecutorPayload>;

const TRIGGERS: Record<PlanExecutorTrigger, { description: string }> = {
  plan_start: { description: 'the executor started the plan (before task 1)' },
  task_complete: { description: 'a task completed and was committed (the spec: "writes checkpoint after each task completion")' },
  task_failed: { description: 'a task failed; status becomes failed with the error' },
  timeout: { description: 'the executor was stopped by its time limit; status becomes timeout' },
  manual: { description: 'an explicit checkpoint request' },
};

/**
 * Makes a profile for plan-executor.md: `{state_path}/plans/{NN}-CHECKPOINT.json` with
 * exactly the spec's fields (`plan_number`, `current_task_index`, `current_task`,
 * `status`, `last_activity`, `total_tasks`, `completed_tasks`, `remaining_tasks`,
 * `task_commits`, `files_modified`, `partial_commits`, `error`) plus one `integrity`
 * object. The run id is the plan number; `last_activity` is the snapshot's creation
 * time; statuses are `in_progress`, `timeout` (resumable) and the terminal
 * `completed` and `failed`.
 *
 * @example
 * ```ts
 * const profile = createPlanExecutorProfile({ statePath: '.planning', history: true });
 * profile.layout.latestKey('02'); // '.planning/plans/02-CHECKPOINT.json'
 * ```
 */
export function createPlanExecutorProfile(options: PlanExecutorProfileOptions = {}): PlanExecutorProfile {
  assertOptionsArgument(options, 'createPlanExecutorProfile');
  return defineProfile<PlanExecutorPayload>({
    name: 'planExecutor',
    description: 'plan-executor.md: {state_path}/plans/{NN}-CHECKPOINT.json, written after each task completion',
    sharedFiles: 'plan-executor.md: status displays and executors read plans/NN-CHECKPOINT.json',
    payload: PlanExecutorPayloadSchema,
    triggers: TRIGGERS,
    statuses: { all: PLAN_EXECUTOR_STATUSES, terminal: ['completed', 'failed'], active: 'in_progress' },
    layout: planExecutorLayout({ statePath: options.statePath ?? '', history: options.history ?? false }),
    heartbeat: false,
    coalesceWindowMs: options.coalesceWindowMs ?? 3000,
    compressHistory: true,
    document: planExecutorDocumentFormat,
    ...(options.retention ? { retention: options.retention } : {}),
    resume: options.resume ?? planExecutorResumeRule,
  });
}

/** The planExecutor profile with the spec's defaults (files at the storage root, no history). */
export const planExecutor: PlanExecutorProfile = createPlanExecutorProfile();
