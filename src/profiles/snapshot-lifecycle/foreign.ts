import { z } from 'zod';
import type { JsonObject } from '../../contract/json.js';
import { PRIORITIES, type SnapshotDraft } from '../../contract/snapshot.js';
import type { EncodedSnapshot } from '../../contract/document-format.js';
import { carriesSavepointMarks, foreignJsonReader, liberalSourceDetails, LiberalTimeSchema, sealAsIs, toUtc } from '../foreign-json.js';
import { parseDocumentWith } from './import.js';
import {
  LIFECYCLE_COMMAND_KINDS,
  LIFECYCLE_COMMAND_RESULTS,
  LIFECYCLE_RUN_STATUSES,
  LIFECYCLE_SOURCES,
  LIFECYCLE_WINDOW_PRESSURES,
  type SnapshotLifecyclePayload,
} from './schema.js';

/**
 * `cp_<timestamp>_<suffix>` in any timestamp format another tool picks (`cp_20260115T143000Z_a1b2`,
 * `cp_1736951400_x9`, `cp_2026-01-15T14-30-00_7f3e`): one portable file-name segment, since it
 * names the history file.
 */
export const LIBERAL_LIFECYCLE_ID = /^cp_[A-Za-z0-9][A-Za-z0-9._:+-]*_[A-Za-z0-9]+$/;

/**
 * snapshot-lifecycle.md's schema as the spec states it, for documents other tools write: the
 * spec's enumerations (`source`, `status`, `window_pressure`, `kind`, `result`) hold, the
 * values it does not enumerate (`step_status`, `todo_compliance.result`, reason codes) are
 * free strings, times take any offset and precision, `command_outcomes` has no count bound
 * (the spec says "bounded" without a number), and unknown members are accepted (not kept in
 * the model: the file that holds them is immutable history, never rewritten).
 */
const SpecDocumentSchema = z.object({
  snapshot_id: z.string().regex(LIBERAL_LIFECYCLE_ID),
  created_at: LiberalTimeSchema,
  run_id: z.string().min(1),
  source: z.enum(LIFECYCLE_SOURCES),
  status: z.enum(LIFECYCLE_RUN_STATUSES),
  sequence: z.number().int().min(1).optional(),
  source_details: z
    .array(
      z.object({
        source: z.string().min(1),
        at: LiberalTimeSchema,
        priority: z.enum(PRIORITIES).optional(),
        coalesced_into: z.string().min(1).optional(),
      }),
    )
    .optional(),
  priority: z.enum(PRIORITIES).optional(),
  step_state: z.object({
    plan_path: z.string(),
    step_id: z.string(),
    step_ordinal: z.number().int().min(0),
    step_status: z.string().min(1),
    todo_compliance: z.object({ result: z.string(), violations: z.array(z.unknown()), checked_at: LiberalTimeSchema }),
    resume_hints: z.object({ eligible: z.boolean(), reason_code: z.string().nullable(), next_actions: z.array(z.string()) }),
  }),
  context_digest: z.object({
    window_pressure: z.enum(LIFECYCLE_WINDOW_PRESSURES),
    protected_artifacts: z.array(z.string()),
    dropped_items: z.number().int().min(0),
    policy_profile: z.string(),
  }),
  command_outcomes: z.array(
    z.object({
      kind: z.enum(LIFECYCLE_COMMAND_KINDS),
      name: z.string(),
      result: z.enum(LIFECYCLE_COMMAND_RESULTS),
      duration_ms: z.number().min(0),
      reason_code: z.string().nullable().optional(),
      summary: z.string(),
    }),
  ),
});

/** savepoint's addition to the spec's document besides its `integrity` and `source_details` shapes. */
const SAVEPOINT_MEMBERS = ['sequence'] as const;

/**
 * The provisional sequence of a document without one (the spec has no such field), for a read
 * of that file alone: its creation time in milliseconds since the epoch. The read warns
 * `checkpoint_sequence_derived`; resume and the writer replace it by the run's order
 * (`numberByRunOrder`), so this number is never stored nor resumed from.
 */
export function sequenceFromTime(createdAt: string): number {
  return Math.max(1, Math.floor(Date.parse(createdAt)));
}

/** True when the document carries no `sequence` of its own (savepoint's member, not the spec's). */
export const lifecycleSequenceDerived = (document: JsonObject): boolean => !Number.isInteger(document.sequence);

/** Maps a snapshot-lifecycle.md document another tool wrote (without `integrity`) to the model. */
export function lifecycleForeignDraft(document: JsonObject, where: string): SnapshotDraft<SnapshotLifecyclePayload> {
  const liberal = { ...document, source_details: liberalSourceDetails(document.source_details, document.created_at) };
  if (liberal.source_details === undefined) delete liberal.source_details;
  const d = parseDocumentWith(SpecDocumentSchema, liberal, where);
  const createdAt = toUtc(d.created_at);
  const { todo_compliance: todo, ...step } = d.step_state;
  return {
    id: d.snapshot_id,
    runId: d.run_id,
    sequence: d.sequence ?? sequenceFromTime(createdAt),
    createdAt,
    source: d.source,
    sourceDetails: (d.source_details ?? []).map((t) => ({ ...t, at: toUtc(t.at) })),
    ...(d.priority ? { priority: d.priority } : {}),
    status: d.status,
    // Values the spec leaves open (step_status, result labels) are kept as written.
    payload: {
      step_state: { ...step, todo_compliance: { ...todo, checked_at: toUtc(todo.checked_at) } },
      context_digest: d.context_digest,
      command_outcomes: d.command_outcomes.map(({ reason_code, ...o }) => ({ ...o, ...(reason_code ? { reason_code } : {}) })),
    } as SnapshotLifecyclePayload,
  };
}

/**
 * True when savepoint wrote (or sealed) the document: two of its marks — savepoint's
 * `integrity` shape, `source_details` of `{ source, at }` entries, a `sequence` — are there.
 * The spec names `source_details` itself, so it alone (in any shape) marks nothing.
 */
export const lifecycleSealedBySavepoint = (document: JsonObject): boolean => carriesSavepointMarks(document, SAVEPOINT_MEMBERS);

/** `decodeForeign` of the snapshotLifecycle format: history-based, so a changed sealed file is refused. */
export const decodeSnapshotLifecycleForeign = foreignJsonReader<SnapshotLifecyclePayload>({
  kind: 'history',
  sealedBySavepoint: lifecycleSealedBySavepoint,
  toDraft: lifecycleForeignDraft,
  sequenceDerived: lifecycleSequenceDerived,
});

/**
 * Seals a snapshot-lifecycle.md document another tool wrote, as it is (see `sealAsIs`):
 * savepoint adds only `sequence` (`sequence`, else its time in ms) and `source_details` (none)
 * when missing, and replaces another tool's `integrity` with its own.
 */
export async function sealLifecycleForeign(
  document: JsonObject,
  where: string,
  sequence?: number,
): Promise<EncodedSnapshot<SnapshotLifecyclePayload>> {
  const { integrity: _theirs, ...rest } = document;
  const draft = lifecycleForeignDraft(rest, where);
  const seq = typeof rest.sequence === 'number' ? draft.sequence : (sequence ?? draft.sequence);
  const { bytes, integrity } = await sealAsIs({ ...rest, sequence: seq, source_details: rest.source_details ?? [] });
  return { bytes, snapshot: { ...draft, sequence: seq, integrity } };
}
