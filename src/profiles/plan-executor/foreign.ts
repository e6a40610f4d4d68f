import { z } from 'zod';
import { canonicalJson, parseJson } from '../../codec/canonical-json.js';
import { type JsonObject, type JsonValue } from '../../contract/json.js';
import { INTEGRITY_FIELD } from '../../codec/json-document.js';
import { type EncodedSnapshot } from '../../contract/document-format.js';
import { gunzip, isGzip } from '../../codec/gzip.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { PRIORITIES, type SnapshotDraft } from '../../contract/snapshot.js';
import { foreignJsonReader, hasMembers, isJsonObject, LiberalTimeSchema, sealAsIs, toUtc } from '../foreign-json.js';
import { importedSnapshotId, parseDocumentWith } from '../snapshot-lifecycle/import.js';
import {
  PLAN_EXECUTOR_STATUSES,
  PLAN_EXECUTOR_TRIGGERS,
  PlanNumberSchema,
  type PlanExecutorPayload,
  type PlanExecutorStatus,
  type PlanExecutorTrigger,
} from './schema.js';

/** The members plan-executor.md defines; anything else at the top level is another tool's (or savepoint's `integrity`). */
export const PLAN_EXECUTOR_SPEC_MEMBERS = [
  'plan_number',
  'current_task_index',
  'current_task',
  'status',
  'last_activity',
  'total_tasks',
  'completed_tasks',
  'remaining_tasks',
  'task_commits',
  'files_modified',
  'partial_commits',
  'error',
] as const;
const KNOWN = new Set<string>([...PLAN_EXECUTOR_SPEC_MEMBERS, INTEGRITY_FIELD]);

/**
 * plan-executor.md's schema as the spec states it, for files other executors write: the
 * required fields and the four statuses hold; `last_activity` ("ISO 8601") takes any offset
 * and precision; task objects may carry more than `name` / `commit` (kept in the file, not in
 * the model); `task_commits` keys are whatever the writer used.
 */
const SpecDocumentSchema = z.object({
  plan_number: PlanNumberSchema,
  current_task_index: z.number().int().min(0),
  current_task: z.string(),
  status: z.enum(PLAN_EXECUTOR_STATUSES),
  last_activity: LiberalTimeSchema,
  total_tasks: z.number().int().min(0).optional(),
  completed_tasks: z.array(z.object({ name: z.string(), commit: z.string() })).optional(),
  remaining_tasks: z.array(z.object({ name: z.string() })).optional(),
  task_commits: z.record(z.string(), z.string()).optional(),
  files_modified: z.array(z.string()).optional(),
  partial_commits: z.array(z.string()).optional(),
  error: z.string().nullable().optional(),
});

/** savepoint's bookkeeping inside `integrity` (see `PlanExecutorIntegritySchema`). */
const BookkeepingSchema = z.object({
  snapshot_id: z.string().min(1),
  sequence: z.number().int().min(1),
  source: z.enum(PLAN_EXECUTOR_TRIGGERS),
  source_details: z
    .array(z.object({ source: z.string().min(1), at: LiberalTimeSchema, priority: z.enum(PRIORITIES).optional() }))
    .optional(),
  priority: z.enum(PRIORITIES).optional(),
});

/** Keys of savepoint's bookkeeping: two or more of them mark an `integrity` savepoint wrote. */
const BOOKKEEPING_MEMBERS = ['snapshot_id', 'sequence', 'source', 'source_details', 'algorithm'] as const;

function defaultSource(status: PlanExecutorStatus, completedCount: number): PlanExecutorTrigger {
  if (status === 'timeout') return 'timeout';
  if (status === 'failed') return 'task_failed';
  return status === 'in_progress' && completedCount === 0 ? 'plan_start' : 'task_complete';
}

/**
 * The sequence of a checkpoint without savepoint's bookkeeping: the checkpoints the spec's
 * executor has written by then — one at the start, one per completed task, one more when it
 * stopped early (failed, timeout) — so savepoint's next number comes after them, not after 1.
 */
function sequenceFromProgress(status: string, completedTasks: number): number {
  return 1 + completedTasks + (status === 'failed' || status === 'timeout' ? 1 : 0);
}

/**
 * Maps an `NN-CHECKPOINT.json` another tool wrote or edited (without `integrity`) to the model.
 * savepoint's bookkeeping is kept when its `integrity` is still there (an edit after sealing);
 * otherwise the sequence is counted from its progress (`sequenceFromProgress`) and its id
 * derived from its content.
 */
export async function planExecutorForeignDraft(
  document: JsonObject,
  where: string,
  integrity: JsonValue | undefined,
): Promise<SnapshotDraft<PlanExecutorPayload>> {
  const d = parseDocumentWith(SpecDocumentSchema, document, where);
  const kept = BookkeepingSchema.safeParse(integrity);
  const { status, last_activity, ...spec } = d;
  const payload = Object.fromEntries(Object.entries(spec).map(([k, v]) => [k, v])) as PlanExecutorPayload;
  if (payload.completed_tasks) payload.completed_tasks = payload.completed_tasks.map((t) => ({ name: t.name, commit: t.commit }));
  if (payload.remaining_tasks) payload.remaining_tasks = payload.remaining_tasks.map((t) => ({ name: t.name }));
  const createdAt = toUtc(last_activity);
  const b = kept.success ? kept.data : undefined;
  return {
    id: b?.snapshot_id ?? (await importedSnapshotId(createdAt, canonicalJson(document))),
    runId: d.plan_number,
    sequence: b?.sequence ?? sequenceFromProgress(status, d.completed_tasks?.length ?? 0),
    createdAt,
    source: b?.source ?? defaultSource(status, d.completed_tasks?.length ?? 0),
    sourceDetails: (b?.source_details ?? []).map((t) => ({ ...t, at: toUtc(t.at) })),
    ...(b?.priority ? { priority: b.priority } : {}),
    status,
    payload,
  };
}

/** True when savepoint sealed the file: its `integrity` holds two or more of savepoint's bookkeeping members. */
export function planExecutorSealedBySavepoint(document: JsonObject): boolean {
  const integrity = document[INTEGRITY_FIELD];
  return isJsonObject(integrity) && hasMembers(integrity, BOOKKEEPING_MEMBERS, 2);
}

/**
 * `decodeForeign` of the planExecutor format: the single file other executors rewrite after
 * every task, so an edit after savepoint sealed it is the newest truth
 * (`checkpoint_integrity_mismatch` as a warning, savepoint's bookkeeping kept).
 */
export const decodePlanExecutorForeign = foreignJsonReader<PlanExecutorPayload>({
  kind: 'single',
  sealedBySavepoint: planExecutorSealedBySavepoint,
  toDraft: planExecutorForeignDraft,
});

/**
 * `keepForeignFields` of the planExecutor format: the top-level members of the file about to
 * be replaced that plan-executor.md does not define (another executor's `started_at`,
 * `agent`, …) go into the new file unchanged, and the new file is sealed again over them.
 * Members savepoint writes itself always take savepoint's new value.
 */
export async function keepPlanExecutorForeignFields(previous: Uint8Array, next: Uint8Array): Promise<Uint8Array> {
  let old: unknown;
  try {
    const plain = isGzip(previous) ? gunzip(previous, 'previous checkpoint') : previous;
    old = parseJson(utf8Decode(plain, 'previous checkpoint'), 'previous checkpoint');
  } catch {
    return next; // an unreadable previous file has nothing to keep
  }
  if (!isJsonObject(old)) return next;
  const foreign = Object.keys(old).filter((k) => !KNOWN.has(k));
  if (foreign.length === 0) return next;
  const document = parseJson(utf8Decode(next, 'checkpoint'), 'checkpoint') as JsonObject;
  for (const k of foreign) if (!Object.hasOwn(document, k)) document[k] = old[k]!;
  const integrity = document[INTEGRITY_FIELD];
  if (!isJsonObject(integrity)) return utf8Encode(canonicalJson(document));
  const { checksum: _stale, ...meta } = integrity;
  return (await sealAsIs(document, meta)).bytes;
}

/** Options of {@link sealPlanExecutorForeign}: the bookkeeping of a file that has none. */
export interface PlanExecutorSealOptions {
  readonly sequence?: number;
  readonly source?: PlanExecutorTrigger;
  readonly snapshotId?: string;
}

/**
 * Seals an `NN-CHECKPOINT.json` another executor wrote or edited, as it is (see `sealAsIs`):
 * its members stay, savepoint's bookkeeping goes into `integrity` (kept from an earlier seal,
 * else from `options`, else derived as for a tolerant read).
 */
export async function sealPlanExecutorForeign(
  document: JsonObject,
  where: string,
  options: PlanExecutorSealOptions = {},
): Promise<EncodedSnapshot<PlanExecutorPayload>> {
  const { [INTEGRITY_FIELD]: theirs, ...rest } = document;
  const kept = BookkeepingSchema.safeParse(theirs).success;
  const derived = await planExecutorForeignDraft(rest, where, theirs);
  const draft = kept
    ? derived
    : {
        ...derived,
        ...(options.sequence !== undefined ? { sequence: options.sequence } : {}),
        ...(options.source ? { source: options.source } : {}),
        ...(options.snapshotId ? { id: options.snapshotId } : {}),
      };
  const meta: JsonObject = {
    snapshot_id: draft.id,
    sequence: draft.sequence,
    source: draft.source,
    source_details: draft.sourceDetails,
    ...(draft.priority ? { priority: draft.priority } : {}),
  };
  const { bytes, integrity } = await sealAsIs(rest, meta);
  return { bytes, snapshot: { ...draft, integrity } };
}
