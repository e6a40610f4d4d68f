import { CheckpointError } from '../../contract/errors.js';
import type { Snapshot } from '../../contract/snapshot.js';
import type {
  PlanCompletedTask,
  PlanExecutorPayload,
  PlanExecutorSpecDocument,
  PlanExecutorStatus,
  PlanExecutorTrigger,
  PlanRemainingTask,
} from './schema.js';
import { assertObjectArgument, assertOptionsArgument } from '../../contract/arguments.js';

/** A checkpoint request for the writer: trigger, plan status and payload. */
export interface PlanExecutorCheckpointRequest {
  readonly source: PlanExecutorTrigger;
  readonly status: PlanExecutorStatus;
  readonly payload: PlanExecutorPayload;
}

/** What the executor reports when a task ends. */
export interface PlanTaskResult {
  /** Commit SHA of the task's work (`completed_tasks[].commit`, `task_commits`). */
  readonly commit: string;
  /** Files the task modified; added to `files_modified` without duplicates. @default [] */
  readonly files?: readonly string[];
}

/** What the executor reports when it stops early. */
export interface PlanInterruption {
  /** Commits made before the interruption; added to `partial_commits`. @default [] */
  readonly partialCommits?: readonly string[];
  /** Files modified so far; added to `files_modified`. @default [] */
  readonly files?: readonly string[];
}

const union = (a: readonly string[] | undefined, b: readonly string[] | undefined): string[] => [...new Set([...(a ?? []), ...(b ?? [])])];

/**
 * Builders for the executor's checkpoints. "Writes checkpoint after each task
 * completion" is {@link planExecutorTriggers.taskCompleted}; the others record the
 * start and the two early stops the spec's statuses name (`failed`, `timeout`).
 * Task numbers in `task_commits` are 1-based, as in the spec's example (`"1"` is
 * Task 1, whose `current_task_index` is 0).
 */
export const planExecutorTriggers = {
  /** The plan starts: task 1 is current, the others remain. */
  start(planNumber: string, tasks: readonly string[]): PlanExecutorCheckpointRequest {
    if (tasks.length === 0) throw new CheckpointError('checkpoint_schema_invalid', 'a plan needs at least one task');
    return {
      source: 'plan_start',
      status: 'in_progress',
      payload: {
        plan_number: planNumber,
        current_task_index: 0,
        current_task: tasks[0]!,
        total_tasks: tasks.length,
        completed_tasks: [],
        remaining_tasks: tasks.slice(1).map((name) => ({ name })),
        task_commits: {},
        files_modified: [],
        partial_commits: [],
        error: null,
      },
    };
  },

  /**
   * The current task completed: it moves to `completed_tasks` with its commit, the
   * commit is recorded under its task number in `task_commits`, and the first remaining
   * task becomes current. After the last task the status is `completed` (the last task
   * stays current). `partial_commits` and `error` are cleared: they belonged to the
   * attempt that this completion finished.
   */
  taskCompleted(payload: PlanExecutorPayload, result: PlanTaskResult): PlanExecutorCheckpointRequest {
    const index = payload.current_task_index;
    const completed: PlanCompletedTask[] = [...(payload.completed_tasks ?? []), { name: payload.current_task, commit: result.commit }];
    const remaining: PlanRemainingTask[] = [...(payload.remaining_tasks ?? [])];
    const next = remaining.shift();
    return {
      source: 'task_complete',
      status: next ? 'in_progress' : 'completed',
      payload: {
        ...payload,
        current_task_index: next ? index + 1 : index,
        current_task: next ? next.name : payload.current_task,
        completed_tasks: completed,
        remaining_tasks: remaining,
        task_commits: { ...(payload.task_commits ?? {}), [String(index + 1)]: result.commit },
        files_modified: union(payload.files_modified, result.files),
        partial_commits: [],
        error: null,
      },
    };
  },

  /** The current task failed: status `failed` with the error message (the spec's `error`). */
  taskFailed(payload: PlanExecutorPayload, error: string, interruption: PlanInterruption = {}): PlanExecutorCheckpointRequest {
    return {
      source: 'task_failed',
      status: 'failed',
      payload: {
        ...payload,
        files_modified: union(payload.files_modified, interruption.files),
        partial_commits: union(payload.partial_commits, interruption.partialCommits),
        error,
      },
    };
  },

  /** The executor hit its time limit: status `timeout`, resumable at the current task. */
  timedOut(payload: PlanExecutorPayload, interruption: PlanInterruption = {}): PlanExecutorCheckpointRequest {
    return {
      source: 'timeout',
      status: 'timeout',
      payload: {
        ...payload,
        files_modified: union(payload.files_modified, interruption.files),
        partial_commits: union(payload.partial_commits, interruption.partialCommits),
      },
    };
  },

  /** An explicit checkpoint with the payload and status as given. @default status `in_progress` */
  manual(payload: PlanExecutorPayload, status: PlanExecutorStatus = 'in_progress'): PlanExecutorCheckpointRequest {
    return { source: 'manual', status, payload };
  },
} as const;

/** A plan-executor checkpoint as a document (spec-only or sealed) or as a snapshot. */
export type PlanExecutorCheckpoint =
  PlanExecutorSpecDocument | (PlanExecutorSpecDocument & { readonly integrity: unknown }) | Snapshot<PlanExecutorPayload>;

function asDocument(checkpoint: PlanExecutorCheckpoint): PlanExecutorSpecDocument {
  if ('payload' in checkpoint)
    return { ...checkpoint.payload, status: checkpoint.status as PlanExecutorStatus, last_activity: checkpoint.createdAt };
  return checkpoint;
}

/** The fields spawn-plan-executor.md reads to resume a plan. */
export interface PlanResumeFields {
  readonly plan_number: string;
  readonly total_tasks: number | undefined;
  readonly task_commits: Readonly<Record<string, string>>;
  readonly files_modified: readonly string[];
  readonly last_activity: string;
}

/**
 * What spawn-plan-executor.md "uses for resume capability": `plan_number`,
 * `total_tasks`, `task_commits`, `files_modified`, `last_activity` (absent optional
 * fields come back empty, `total_tasks` as `undefined`).
 */
export function planResumeFields(checkpoint: PlanExecutorCheckpoint): PlanResumeFields {
  assertObjectArgument(checkpoint, 'planResumeFields', 'checkpoint');
  const d = asDocument(checkpoint);
  return {
    plan_number: d.plan_number,
    total_tasks: d.total_tasks,
    task_commits: { ...(d.task_commits ?? {}) },
    files_modified: [...(d.files_modified ?? [])],
    last_activity: d.last_activity,
  };
}

/** Options of {@link planStatusSummary}. */
export interface PlanStatusSummaryOptions {
  /** Current time in epoch milliseconds, for `idle_ms`. @default Date.now() */
  readonly now?: number;
}

/** What timeout-handling.md shows about a plan. */
export interface PlanStatusSummary {
  readonly plan_number: string;
  readonly status: PlanExecutorStatus;
  readonly current_task: string;
  readonly completed_tasks: readonly PlanCompletedTask[];
  readonly remaining_tasks: readonly PlanRemainingTask[];
  readonly partial_commits: readonly string[];
  readonly last_activity: string;
  /** Milliseconds since `last_activity` (never negative). */
  readonly idle_ms: number;
  /** The same, as lines ready to print. */
  readonly lines: readonly string[];
}

function formatIdle(ms: number): string {
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${m % 60}m`;
}

/**
 * What timeout-handling.md "uses for status display": `plan_number`, `current_task`,
 * `completed_tasks`, `remaining_tasks`, `partial_commits`, `last_activity` — plus the
 * status and how long the plan has been idle, with printable lines.
 *
 * @example
 * ```ts
 * console.log(planStatusSummary(snapshot).lines.join('\n'));
 * // Plan 02 — in_progress — current: Task 3: Add API routes
 * // Completed (2): Task 1: Setup (abc123), Task 2: Models (def456)
 * // ...
 * ```
 */
export function planStatusSummary(checkpoint: PlanExecutorCheckpoint, options: PlanStatusSummaryOptions = {}): PlanStatusSummary {
  assertObjectArgument(checkpoint, 'planStatusSummary', 'checkpoint');
  assertOptionsArgument(options, 'planStatusSummary');
  const d = asDocument(checkpoint);
  const completed = d.completed_tasks ?? [];
  const remaining = d.remaining_tasks ?? [];
  const partial = d.partial_commits ?? [];
  const idle_ms = Math.max(0, (options.now ?? Date.now()) - Date.parse(d.last_activity));
  const lines = [
    `Plan ${d.plan_number} — ${d.status} — current: ${d.current_task}`,
    `Completed (${completed.length}): ${completed.length > 0 ? completed.map((t) => `${t.name} (${t.commit})`).join(', ') : 'none'}`,
    `Remaining (${remaining.length}): ${remaining.length > 0 ? remaining.map((t) => t.name).join(', ') : 'none'}`,
    `Partial commits: ${partial.length > 0 ? partial.join(', ') : 'none'}`,
    `Last activity: ${d.last_activity} (${formatIdle(idle_ms)} ago)`,
  ];
  return {
    plan_number: d.plan_number,
    status: d.status,
    current_task: d.current_task,
    completed_tasks: completed,
    remaining_tasks: remaining,
    partial_commits: partial,
    last_activity: d.last_activity,
    idle_ms,
    lines,
  };
}
