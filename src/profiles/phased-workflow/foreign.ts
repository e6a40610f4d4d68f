import { z } from 'zod';
import type { JsonObject, JsonValue } from '../../contract/json.js';
import { PRIORITIES, type SnapshotDraft } from '../../contract/snapshot.js';
import type { EncodedSnapshot } from '../../contract/document-format.js';
import { carriesSavepointMarks, foreignJsonReader, LiberalTimeSchema, sealAsIs, toUtc } from '../foreign-json.js';
import { parseDocumentWith } from '../snapshot-lifecycle/import.js';
import {
  PHASE_KEYS,
  PHASED_STATUSES,
  type PhasedStatus,
  PHASED_TRIGGER_PRIORITIES,
  PHASED_TRIGGERS,
  type PhaseKey,
  type PhasedWorkflowPayload,
} from './schema.js';

const JsonObjectSchema = z.record(
  z.string(),
  z.custom<JsonValue>(() => true),
);
const optionalArray = z.array(z.custom<JsonValue>(() => true)).optional();

/**
 * phased-workflow-github.md's `checkpoint_contents` as the spec states it, for checkpoints its
 * own n8n node (or another tool) writes: the nine triggers hold; `checkpoint_id` is any id
 * (the spec asks for a UUID v4, the node's `generateUUID()` is not always one); `timestamp`
 * takes any offset and precision; `phase` is `phase_{number}_{name}` with any name; members of
 * `state_snapshot` and `context_fields` the node left out (`JSON.stringify` drops
 * `undefined`) read as empty; unknown members are accepted.
 */
const SpecDocumentSchema = z.object({
  checkpoint_id: z.string().min(1),
  run_id: z.string().min(1),
  timestamp: LiberalTimeSchema,
  trigger: z.enum(PHASED_TRIGGERS),
  phase: z.string().regex(/^phase_(0_5|[0-8])_\S+$/),
  sequence_number: z.number().int().min(1),
  status: z.enum(PHASED_STATUSES).optional(),
  source_details: z
    .array(z.object({ source: z.string().min(1), at: LiberalTimeSchema, priority: z.enum(PRIORITIES).optional() }))
    .optional(),
  priority: z.enum(PRIORITIES).optional(),
  state_snapshot: z.object({
    phase_outputs: z.record(z.string(), JsonObjectSchema.nullable()).optional(),
    current_phase_state: z
      .object({
        phase: z.string().optional(),
        started_at: z.string().optional(),
        progress: JsonObjectSchema.optional(),
        partial_output: JsonObjectSchema.nullable().optional(),
      })
      .optional(),
    gate_history: z
      .array(z.object({ gate_id: z.string(), decision: z.string(), score: z.number(), iteration: z.number().int() }))
      .optional(),
    circuit_breaker_state: JsonObjectSchema.optional(),
    cost_accumulated: z.number().min(0).optional(),
    health_history: optionalArray,
    errors_encountered: optionalArray,
    active_lessons: optionalArray,
  }),
  context_fields: z
    .object({
      api_metrics: JsonObjectSchema.optional(),
      fallback_flags: JsonObjectSchema.optional(),
      iteration_counts: z.record(z.string(), z.number().int().min(0)).optional(),
      warnings: optionalArray,
    })
    .optional(),
});

/** savepoint's addition to the spec's checkpoint besides its `integrity` and `source_details` shapes. */
const SAVEPOINT_MEMBERS = ['status'] as const;

/** Maps a phased-workflow checkpoint another tool wrote (without `integrity`) to the model. */
export function phasedForeignDraft(document: JsonObject, where: string): SnapshotDraft<PhasedWorkflowPayload> {
  const d = parseDocumentWith(SpecDocumentSchema, document, where);
  const s = d.state_snapshot;
  const outputs = Object.fromEntries(PHASE_KEYS.map((k) => [k, s.phase_outputs?.[k] ?? null])) as Record<PhaseKey, JsonObject | null>;
  const current = s.current_phase_state;
  const priority = d.priority ?? PHASED_TRIGGER_PRIORITIES[d.trigger];
  return {
    id: d.checkpoint_id,
    runId: d.run_id,
    sequence: d.sequence_number,
    createdAt: toUtc(d.timestamp),
    source: d.trigger,
    sourceDetails: (d.source_details ?? []).map((t) => ({ ...t, at: toUtc(t.at) })),
    priority,
    status: d.status ?? 'in_progress',
    payload: {
      phase: d.phase,
      state_snapshot: {
        phase_outputs: outputs,
        current_phase_state: {
          phase: current?.phase ?? d.phase,
          started_at: current?.started_at ?? d.timestamp,
          progress: current?.progress ?? {},
          partial_output: current?.partial_output ?? null,
        },
        gate_history: s.gate_history ?? [],
        circuit_breaker_state: s.circuit_breaker_state ?? {},
        cost_accumulated: s.cost_accumulated ?? 0,
        health_history: s.health_history ?? [],
        errors_encountered: s.errors_encountered ?? [],
        active_lessons: s.active_lessons ?? [],
      },
      context_fields: {
        api_metrics: d.context_fields?.api_metrics ?? {},
        fallback_flags: d.context_fields?.fallback_flags ?? {},
        iteration_counts: d.context_fields?.iteration_counts ?? {},
        warnings: d.context_fields?.warnings ?? [],
      },
    } as PhasedWorkflowPayload,
  };
}

/**
 * True when savepoint wrote (or sealed) the checkpoint: two of its marks — savepoint's
 * `integrity` shape, `source_details` of `{ source, at }` entries, a `status` — are there.
 */
export const phasedSealedBySavepoint = (document: JsonObject): boolean => carriesSavepointMarks(document, SAVEPOINT_MEMBERS);

/** `decodeForeign` of the phasedWorkflow format: history-based, so a changed sealed file is refused. */
export const decodePhasedWorkflowForeign = foreignJsonReader<PhasedWorkflowPayload>({
  kind: 'history',
  sealedBySavepoint: phasedSealedBySavepoint,
  toDraft: phasedForeignDraft,
});

/**
 * Seals a phased-workflow checkpoint another tool wrote, as it is (see `sealAsIs`): savepoint
 * adds only `status` (`status`, default `in_progress`) and `source_details` (none) when missing.
 */
export async function sealPhasedForeign(
  document: JsonObject,
  where: string,
  status?: PhasedStatus,
): Promise<EncodedSnapshot<PhasedWorkflowPayload>> {
  const { integrity: _theirs, ...rest } = document;
  const draft = phasedForeignDraft(rest, where);
  const kept = typeof rest.status === 'string' ? draft.status : (status ?? draft.status);
  const { bytes, integrity } = await sealAsIs({ ...rest, status: kept, source_details: rest.source_details ?? [] });
  return { bytes, snapshot: { ...draft, status: kept, integrity } };
}
