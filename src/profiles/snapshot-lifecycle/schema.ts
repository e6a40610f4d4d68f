import { z } from 'zod';
import { SNAPSHOT_ID_PATTERN } from '../../contract/ids.js';
import { IntegritySchema, PRIORITIES, Rfc3339Schema, TriggerRecordSchema } from '../../contract/snapshot.js';

/** snapshot-lifecycle.md `source` values: the four trigger boundaries. */
export const LIFECYCLE_SOURCES = ['step_boundary', 'error_boundary', 'timer', 'manual'] as const;
/** A snapshot-lifecycle.md trigger source. */
export type LifecycleSource = (typeof LIFECYCLE_SOURCES)[number];

/** snapshot-lifecycle.md `status` values. `failed` and `completed` end a run. */
export const LIFECYCLE_RUN_STATUSES = ['in_progress', 'failed', 'completed', 'paused'] as const;
/** A snapshot-lifecycle.md run status. */
export type LifecycleStatus = (typeof LIFECYCLE_RUN_STATUSES)[number];

/**
 * `step_state.step_status` values. The spec names `in_progress` and the terminal
 * `done`, `failed`, `skipped`; savepoint adds `pending` for a step that has not started
 * (a manual or timer snapshot taken between steps).
 */
export const LIFECYCLE_STEP_STATUSES = ['pending', 'in_progress', 'done', 'failed', 'skipped'] as const;
/** A plan step's status. */
export type LifecycleStepStatus = (typeof LIFECYCLE_STEP_STATUSES)[number];
/** The step statuses that end a step (snapshot-lifecycle.md "terminal state"). */
export const LIFECYCLE_TERMINAL_STEP_STATUSES = ['done', 'failed', 'skipped'] as const;
/** A terminal step status. */
export type LifecycleTerminalStepStatus = (typeof LIFECYCLE_TERMINAL_STEP_STATUSES)[number];

/** `context_digest.window_pressure` values. */
export const LIFECYCLE_WINDOW_PRESSURES = ['low', 'medium', 'high'] as const;
/** `command_outcomes[].kind` values. */
export const LIFECYCLE_COMMAND_KINDS = ['shell', 'slash_command', 'tool_use'] as const;
/** `command_outcomes[].result` values. */
export const LIFECYCLE_COMMAND_RESULTS = ['PASS', 'FAIL', 'WARN'] as const;

/**
 * Default bound of `command_outcomes` (the spec asks for "bounded entries" without a
 * number): 20 entries, enough for the commands of one step, small enough that the
 * snapshot stays a few KB.
 */
export const DEFAULT_MAX_COMMAND_OUTCOMES = 20;

/**
 * `step_state.todo_compliance`: the result of the last todo-compliance check. The spec
 * names the fields only; savepoint reads `result` as a free label (`PASS`, `pass`,
 * `compliant`…), `violations` as the list of violated rules, and `checked_at` as the
 * RFC 3339 time of the check.
 */
export const LifecycleTodoComplianceSchema = z
  .object({
    result: z.string().min(1),
    violations: z.array(z.string()),
    checked_at: Rfc3339Schema,
  })
  .strict();
/** The TypeScript type of {@link LifecycleTodoComplianceSchema}. */
export type LifecycleTodoCompliance = z.infer<typeof LifecycleTodoComplianceSchema>;

/**
 * `step_state.resume_hints`: whether the run may resume automatically, the reason code
 * of that decision, and the next actions in order.
 */
export const LifecycleResumeHintsSchema = z
  .object({
    eligible: z.boolean(),
    reason_code: z.string().min(1),
    next_actions: z.array(z.string()),
  })
  .strict();
/** The TypeScript type of {@link LifecycleResumeHintsSchema}. */
export type LifecycleResumeHints = z.infer<typeof LifecycleResumeHintsSchema>;

/** snapshot-lifecycle.md `step_state`: the current plan step summary. */
export const LifecycleStepStateSchema = z
  .object({
    plan_path: z.string().min(1),
    step_id: z.string().min(1),
    step_ordinal: z.number().int().min(0),
    step_status: z.enum(LIFECYCLE_STEP_STATUSES),
    todo_compliance: LifecycleTodoComplianceSchema,
    resume_hints: LifecycleResumeHintsSchema,
  })
  .strict();
/** The TypeScript type of {@link LifecycleStepStateSchema}. */
export type LifecycleStepState = z.infer<typeof LifecycleStepStateSchema>;

/** snapshot-lifecycle.md `context_digest`: compact context health and truncation summary. */
export const LifecycleContextDigestSchema = z
  .object({
    window_pressure: z.enum(LIFECYCLE_WINDOW_PRESSURES),
    /** Paths or ids that context compaction must keep. */
    protected_artifacts: z.array(z.string()),
    /** How many items compaction dropped (a count only, as the spec says). */
    dropped_items: z.number().int().min(0),
    /** Id of the active resilience profile. */
    policy_profile: z.string().min(1),
  })
  .strict();
/** The TypeScript type of {@link LifecycleContextDigestSchema}. */
export type LifecycleContextDigest = z.infer<typeof LifecycleContextDigestSchema>;

/** One snapshot-lifecycle.md `command_outcomes` entry. */
export const LifecycleCommandOutcomeSchema = z
  .object({
    kind: z.enum(LIFECYCLE_COMMAND_KINDS),
    name: z.string().min(1),
    result: z.enum(LIFECYCLE_COMMAND_RESULTS),
    duration_ms: z.number().int().min(0),
    reason_code: z.string().min(1).optional(),
    summary: z.string(),
  })
  .strict();
/** The TypeScript type of {@link LifecycleCommandOutcomeSchema}. */
export type LifecycleCommandOutcome = z.infer<typeof LifecycleCommandOutcomeSchema>;

/** zod schema of the snapshotLifecycle payload, with `command_outcomes` bounded by `maxCommandOutcomes`. */
export function snapshotLifecyclePayloadSchema(maxCommandOutcomes = DEFAULT_MAX_COMMAND_OUTCOMES) {
  return z
    .object({
      step_state: LifecycleStepStateSchema,
      context_digest: LifecycleContextDigestSchema,
      command_outcomes: z.array(LifecycleCommandOutcomeSchema).max(maxCommandOutcomes),
    })
    .strict();
}

/**
 * The payload savepoint keeps for a snapshotLifecycle snapshot: the three spec objects
 * that are the agent's state (the other top-level fields come from the snapshot model).
 */
export const SnapshotLifecyclePayloadSchema = snapshotLifecyclePayloadSchema();
/** The TypeScript type of {@link SnapshotLifecyclePayloadSchema}. */
export type SnapshotLifecyclePayload = z.infer<typeof SnapshotLifecyclePayloadSchema>;

/**
 * zod schema of the stored document: the spec's top-level fields, plus `sequence`
 * (savepoint's addition, as in the default profile: the spec has no field for the
 * snapshot's number within its run) and the optional `priority`.
 */
export function snapshotLifecycleDocumentSchema(maxCommandOutcomes = DEFAULT_MAX_COMMAND_OUTCOMES) {
  return z
    .object({
      snapshot_id: z.string().regex(SNAPSHOT_ID_PATTERN),
      created_at: Rfc3339Schema,
      run_id: z.string().min(1),
      sequence: z.number().int().min(1),
      source: z.enum(LIFECYCLE_SOURCES),
      source_details: z.array(TriggerRecordSchema),
      priority: z.enum(PRIORITIES).optional(),
      status: z.enum(LIFECYCLE_RUN_STATUSES),
      step_state: LifecycleStepStateSchema,
      context_digest: LifecycleContextDigestSchema,
      command_outcomes: z.array(LifecycleCommandOutcomeSchema).max(maxCommandOutcomes),
      integrity: IntegritySchema,
    })
    .strict();
}

/** The stored snapshotLifecycle document (default `command_outcomes` bound). */
export const SnapshotLifecycleDocumentSchema = snapshotLifecycleDocumentSchema();
/** The TypeScript type of {@link SnapshotLifecycleDocumentSchema}. */
export type SnapshotLifecycleDocument = z.infer<typeof SnapshotLifecycleDocumentSchema>;
