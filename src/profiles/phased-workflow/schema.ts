import { z } from 'zod';
import { IntegritySchema, PRIORITIES, Rfc3339Schema, TriggerRecordSchema, type Priority } from '../../contract/snapshot.js';
import { JsonValueSchema } from '../default-document-schema.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** The `phase_outputs` keys of phased-workflow-github.md, in phase order. */
export const PHASE_KEYS = [
  'phase_0',
  'phase_0_5',
  'phase_1',
  'phase_2',
  'phase_3',
  'phase_4',
  'phase_5',
  'phase_6',
  'phase_7',
  'phase_8',
] as const;
/** One `phase_outputs` key. */
export type PhaseKey = (typeof PHASE_KEYS)[number];

/** The nine `trigger` values of phased-workflow-github.md. */
export const PHASED_TRIGGERS = [
  'phase_complete',
  'gate_decision',
  'circuit_breaker',
  'escalation',
  'iteration',
  'cost_threshold',
  'expensive_op',
  'destructive_op',
  'manual',
] as const;
/** A phased-workflow trigger. */
export type PhasedTrigger = (typeof PHASED_TRIGGERS)[number];

/**
 * The spec's priority of each trigger (`checkpoint_triggers`). The spec gives `manual`
 * none; savepoint uses `high`, like the other explicit requests (escalation, cost threshold).
 */
export const PHASED_TRIGGER_PRIORITIES: Readonly<Record<PhasedTrigger, Priority>> = {
  phase_complete: 'high',
  gate_decision: 'high',
  circuit_breaker: 'critical',
  escalation: 'high',
  iteration: 'medium',
  cost_threshold: 'high',
  expensive_op: 'medium',
  destructive_op: 'high',
  manual: 'high',
};

/**
 * Run statuses. The spec has no status field; savepoint adds `status` so retention and
 * `findIncompleteRuns` can tell finished runs from interrupted ones. `completed` and
 * `failed` end a run.
 */
export const PHASED_STATUSES = ['in_progress', 'paused', 'completed', 'failed'] as const;
/** A phased-workflow run status. */
export type PhasedStatus = (typeof PHASED_STATUSES)[number];

/** `phase_{number}_{name}`: a phase key followed by a name that starts with a letter. */
export const PHASE_PATTERN = /^phase_(0_5|[0-8])_[A-Za-z][A-Za-z0-9_-]*$/;

/** UUID v4 (either case: ids written by other tools may be upper-case). */
export const PHASED_UUID_V4_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$/;

const JsonObjectSchema = z.record(z.string(), JsonValueSchema);

/** One phase's output: a JSON object, or `null` while the phase has not completed. */
export const PhaseOutputSchema = JsonObjectSchema.nullable();

/** `state_snapshot.phase_outputs`: one entry per phase key, `null` for phases not completed. */
export const PhaseOutputsSchema = z
  .object(Object.fromEntries(PHASE_KEYS.map((k) => [k, PhaseOutputSchema])) as Record<PhaseKey, typeof PhaseOutputSchema>)
  .strict();
/** The TypeScript type of {@link PhaseOutputsSchema}. */
export type PhaseOutputs = z.infer<typeof PhaseOutputsSchema>;

/** `state_snapshot.current_phase_state`: partial state of the in-progress phase. */
export const CurrentPhaseStateSchema = z
  .object({
    phase: z.string(),
    started_at: z.string(),
    progress: JsonObjectSchema,
    partial_output: JsonObjectSchema.nullable(),
  })
  .strict();
/** The TypeScript type of {@link CurrentPhaseStateSchema}. */
export type CurrentPhaseState = z.infer<typeof CurrentPhaseStateSchema>;

/** One `state_snapshot.gate_history` entry. */
export const PhasedGateRecordSchema = z
  .object({
    gate_id: z.string(),
    decision: z.string(),
    score: z.number(),
    iteration: z.number().int(),
  })
  .strict();
/** The TypeScript type of {@link PhasedGateRecordSchema}. */
export type PhasedGateRecord = z.infer<typeof PhasedGateRecordSchema>;

/** `state_snapshot`: the complete workflow state at checkpoint time. */
export const PhasedStateSnapshotSchema = z
  .object({
    phase_outputs: PhaseOutputsSchema,
    current_phase_state: CurrentPhaseStateSchema,
    gate_history: z.array(PhasedGateRecordSchema),
    circuit_breaker_state: JsonObjectSchema,
    /** Total cost so far, in USD. */
    cost_accumulated: z.number().min(0),
    health_history: z.array(JsonValueSchema),
    errors_encountered: z.array(JsonValueSchema),
    active_lessons: z.array(JsonValueSchema),
  })
  .strict();
/** The TypeScript type of {@link PhasedStateSnapshotSchema}. */
export type PhasedStateSnapshot = z.infer<typeof PhasedStateSnapshotSchema>;

/** `context_fields`: debugging and resume context. */
export const PhasedContextFieldsSchema = z
  .object({
    api_metrics: JsonObjectSchema,
    fallback_flags: JsonObjectSchema,
    iteration_counts: z.record(z.string(), z.number().int().min(0)),
    warnings: z.array(JsonValueSchema),
  })
  .strict();
/** The TypeScript type of {@link PhasedContextFieldsSchema}. */
export type PhasedContextFields = z.infer<typeof PhasedContextFieldsSchema>;

/** zod schema of the `phase` field: any `phase_{number}_{name}`, or only the named phases when `phaseNames` is given. */
export function phaseFieldSchema(phaseNames?: Partial<Record<PhaseKey, string>>) {
  const named = phaseNames ? PHASE_KEYS.filter((k) => phaseNames[k] !== undefined).map((k) => `${k}_${phaseNames[k]}`) : [];
  return named.length > 0 ? z.enum(named as [string, ...string[]]) : z.string().regex(PHASE_PATTERN);
}

/** zod schema of the phasedWorkflow payload, with `phase` restricted by `phaseNames` when given. */
export function phasedWorkflowPayloadSchema(phaseNames?: Partial<Record<PhaseKey, string>>) {
  return z
    .object({
      phase: phaseFieldSchema(phaseNames),
      state_snapshot: PhasedStateSnapshotSchema,
      context_fields: PhasedContextFieldsSchema,
    })
    .strict();
}

/**
 * The payload savepoint keeps for a phasedWorkflow snapshot: `phase`, `state_snapshot`
 * and `context_fields` (the checkpoint's other fields come from the snapshot model).
 */
export const PhasedWorkflowPayloadSchema = phasedWorkflowPayloadSchema();
/** The TypeScript type of {@link PhasedWorkflowPayloadSchema}. */
export type PhasedWorkflowPayload = z.infer<typeof PhasedWorkflowPayloadSchema>;

/** Options of {@link phasedWorkflowDocumentSchema}. */
export interface PhasedDocumentSchemaOptions {
  /** Names of the phases; `phase` must then be one of them. */
  readonly phaseNames?: Partial<Record<PhaseKey, string>>;
  /** Require UUID v4 run ids, as the spec does. @default true */
  readonly uuidRunIds?: boolean;
}

/**
 * zod schema of the stored document: the spec's `checkpoint_contents` (`checkpoint_id`,
 * `run_id`, `timestamp`, `trigger`, `phase`, `sequence_number`, `state_snapshot`,
 * `context_fields`) plus savepoint's additions `status`, `source_details` (coalesced
 * triggers), the trigger's `priority`, and `integrity`.
 */
export function phasedWorkflowDocumentSchema(options: PhasedDocumentSchemaOptions = {}) {
  assertOptionsArgument(options, 'phasedWorkflowDocumentSchema');
  return z
    .object({
      checkpoint_id: z.string().regex(PHASED_UUID_V4_PATTERN),
      run_id: options.uuidRunIds === false ? z.string().min(1) : z.string().regex(PHASED_UUID_V4_PATTERN),
      timestamp: Rfc3339Schema,
      trigger: z.enum(PHASED_TRIGGERS),
      phase: phaseFieldSchema(options.phaseNames),
      sequence_number: z.number().int().min(1),
      state_snapshot: PhasedStateSnapshotSchema,
      context_fields: PhasedContextFieldsSchema,
      status: z.enum(PHASED_STATUSES),
      source_details: z.array(TriggerRecordSchema),
      priority: z.enum(PRIORITIES).optional(),
      integrity: IntegritySchema,
    })
    .strict();
}

/** The stored phasedWorkflow document (default options). */
export const PhasedWorkflowDocumentSchema = phasedWorkflowDocumentSchema();
/** The TypeScript type of {@link PhasedWorkflowDocumentSchema}. */
export type PhasedWorkflowDocument = z.infer<typeof PhasedWorkflowDocumentSchema>;

/**
 * The spec's `summary_schema`: the minimal record kept for an archived run (runs older
 * than the 50 most recent).
 */
export const PhasedRunSummarySchema = z
  .object({
    run_id: z.string().min(1),
    started_at: z.string(),
    completed_at: z.string(),
    phases_completed: z.number().int().min(0),
    final_status: z.string(),
    total_cost_usd: z.number(),
    errors_count: z.number().int().min(0),
  })
  .strict();
/** The TypeScript type of {@link PhasedRunSummarySchema}. */
export type PhasedRunSummary = z.infer<typeof PhasedRunSummarySchema>;
