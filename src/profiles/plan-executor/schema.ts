import { z } from 'zod';
import { RUN_ID_PATTERN, SNAPSHOT_ID_PATTERN } from '../../contract/ids.js';
import { PRIORITIES, Rfc3339Schema, TriggerRecordSchema } from '../../contract/snapshot.js';

/**
 * plan-executor.md `status` values. `completed` and `failed` end a run; `timeout` does
 * not: a plan stopped by the orchestrator's time limit was healthy, so
 * `findIncompleteRuns` lists it and it resumes at its current task. A `failed` plan
 * can still be resumed explicitly (by plan number) after someone reads its `error`.
 */
export const PLAN_EXECUTOR_STATUSES = ['in_progress', 'completed', 'failed', 'timeout'] as const;
/** A plan-executor status. */
export type PlanExecutorStatus = (typeof PLAN_EXECUTOR_STATUSES)[number];

/**
 * Triggers of the planExecutor profile. The spec's writer "writes checkpoint after each
 * task completion" (`task_complete`); savepoint adds `plan_start` (the first checkpoint,
 * so a status display has something before task 1 ends), `task_failed` and `timeout`
 * (the two ways a run stops early, which the spec's statuses record) and `manual`.
 */
export const PLAN_EXECUTOR_TRIGGERS = ['plan_start', 'task_complete', 'task_failed', 'timeout', 'manual'] as const;
/** A planExecutor trigger. */
export type PlanExecutorTrigger = (typeof PLAN_EXECUTOR_TRIGGERS)[number];

/** `completed_tasks[]`: `{ name, commit }`. */
export const PlanCompletedTaskSchema = z.object({ name: z.string(), commit: z.string() }).strict();
/** The TypeScript type of {@link PlanCompletedTaskSchema}. */
export type PlanCompletedTask = z.infer<typeof PlanCompletedTaskSchema>;
/** `remaining_tasks[]`: `{ name }`. */
export const PlanRemainingTaskSchema = z.object({ name: z.string() }).strict();
/** The TypeScript type of {@link PlanRemainingTaskSchema}. */
export type PlanRemainingTask = z.infer<typeof PlanRemainingTaskSchema>;

/** A plan number: a single portable path segment (`01`, `02`, `12a`), since it names the file. */
export const PlanNumberSchema = z.string().regex(RUN_ID_PATTERN);

const fields = {
  plan_number: PlanNumberSchema,
  current_task_index: z.number().int().min(0),
  current_task: z.string(),
  total_tasks: z.number().int().min(0).optional(),
  completed_tasks: z.array(PlanCompletedTaskSchema).optional(),
  remaining_tasks: z.array(PlanRemainingTaskSchema).optional(),
  /** Keys are task numbers as the spec's example writes them (`"1"` for Task 1). */
  task_commits: z.record(z.string().regex(/^\d+$/), z.string()).optional(),
  files_modified: z.array(z.string()).optional(),
  partial_commits: z.array(z.string()).optional(),
  error: z.string().nullable().optional(),
};

/**
 * The planExecutor payload: the `NN-CHECKPOINT.json` fields other than `status` and
 * `last_activity` (those are the snapshot's `status` and `createdAt`). Required are
 * the spec's "Required Fields" (`plan_number`, `current_task_index`, `current_task`);
 * progress, file and error fields are optional, as the spec lists them apart.
 * `plan_number` is also the run id.
 */
export const PlanExecutorPayloadSchema = z.object(fields).strict();
/** The TypeScript type of {@link PlanExecutorPayloadSchema}. */
export type PlanExecutorPayload = z.infer<typeof PlanExecutorPayloadSchema>;

/**
 * savepoint's one addition to `NN-CHECKPOINT.json`: the `integrity` object. Besides the
 * checksum and format version it carries what the spec has no field for and the
 * snapshot model needs — the snapshot id, its sequence in the run, the trigger
 * (`source`), coalesced triggers and the trigger's priority — so every spec field stays
 * exactly as the spec defines it and readers that ignore unknown fields see a plain
 * plan-executor checkpoint.
 */
export const PlanExecutorIntegritySchema = z
  .object({
    format_version: z.string().min(1),
    algorithm: z.literal('sha256'),
    checksum: z.string().regex(/^[0-9a-f]{64}$/),
    snapshot_id: z.string().regex(SNAPSHOT_ID_PATTERN),
    sequence: z.number().int().min(1),
    source: z.enum(PLAN_EXECUTOR_TRIGGERS),
    source_details: z.array(TriggerRecordSchema),
    priority: z.enum(PRIORITIES).optional(),
  })
  .strict();
/** The TypeScript type of {@link PlanExecutorIntegritySchema}. */
export type PlanExecutorIntegrity = z.infer<typeof PlanExecutorIntegritySchema>;

/** The spec's document alone (what other plan-executor tools write): no `integrity`. */
export const PlanExecutorSpecDocumentSchema = z
  .object({
    ...fields,
    status: z.enum(PLAN_EXECUTOR_STATUSES),
    last_activity: Rfc3339Schema,
  })
  .strict();
/** The TypeScript type of {@link PlanExecutorSpecDocumentSchema}. */
export type PlanExecutorSpecDocument = z.infer<typeof PlanExecutorSpecDocumentSchema>;

/** The stored `NN-CHECKPOINT.json`: the spec's fields plus savepoint's `integrity` object. */
export const PlanExecutorDocumentSchema = PlanExecutorSpecDocumentSchema.extend({ integrity: PlanExecutorIntegritySchema }).strict();
/** The TypeScript type of {@link PlanExecutorDocumentSchema}. */
export type PlanExecutorDocument = z.infer<typeof PlanExecutorDocumentSchema>;
