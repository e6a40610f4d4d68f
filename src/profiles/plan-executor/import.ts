import { canonicalJson } from '../../codec/canonical-json.js';
import { type JsonObject } from '../../contract/json.js';
import type { EncodedSnapshot } from '../../contract/document-format.js';
import {
  importedSnapshotId,
  importSpecDocument,
  parseDocumentWith,
  withForeignFallback,
  type JsonProfileImportOptions,
} from '../snapshot-lifecycle/import.js';
import { planExecutorSealedBySavepoint, sealPlanExecutorForeign } from './foreign.js';
import type { RunImporter } from '../import-run.js';
import { jsonRunImporter } from '../json-run-import.js';
import { planExecutor, type PlanExecutorProfile } from './profile.js';
import {
  PlanExecutorIntegritySchema,
  PlanExecutorSpecDocumentSchema,
  type PlanExecutorPayload,
  type PlanExecutorStatus,
  type PlanExecutorTrigger,
} from './schema.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link importPlanExecutorDocument}. */
export interface ImportPlanExecutorOptions extends JsonProfileImportOptions {
  /** The profile to seal with. @default planExecutor */
  readonly profile?: PlanExecutorProfile;
  /** Snapshot sequence of a document without savepoint's `integrity`. @default 1 */
  readonly sequence?: number;
  /**
   * Trigger of a document without savepoint's `integrity`.
   * @default by status: `timeout` → `timeout`, `failed` → `task_failed`, otherwise `task_complete` (or `plan_start` before any task completed)
   */
  readonly source?: PlanExecutorTrigger;
  /** Snapshot id of a document without savepoint's `integrity`. @default derived from `last_activity` and the content, so re-importing gives the same id */
  readonly snapshotId?: string;
}

const BookkeepingSchema = PlanExecutorIntegritySchema.omit({ checksum: true, format_version: true, algorithm: true })
  .partial({ source_details: true })
  .loose();

function defaultSource(status: PlanExecutorStatus, completedCount: number): PlanExecutorTrigger {
  if (status === 'timeout') return 'timeout';
  if (status === 'failed') return 'task_failed';
  return status === 'in_progress' && completedCount === 0 ? 'plan_start' : 'task_complete';
}

/**
 * Imports an `NN-CHECKPOINT.json` written by another plan executor (exactly the spec's
 * fields, like the spec's example) or by savepoint. A document without `integrity` gets
 * savepoint's one added object (snapshot id, sequence, trigger, checksum); a document
 * with one must verify (`checkpoint_integrity_mismatch` otherwise, unless `reseal`, which
 * keeps its bookkeeping and recomputes the checksum). The spec fields are unchanged.
 *
 * @example
 * ```ts
 * const { bytes } = await importPlanExecutorDocument(await readFile('plans/02-CHECKPOINT.json'));
 * await storage.put(planExecutor.layout.latestKey('02'), bytes);
 * ```
 */
export async function importPlanExecutorDocument(
  input: unknown,
  options: ImportPlanExecutorOptions = {},
): Promise<EncodedSnapshot<PlanExecutorPayload>> {
  assertOptionsArgument(options, 'importPlanExecutorDocument');
  const profile = options.profile ?? planExecutor;
  const seal = (d: JsonObject, where: string) =>
    sealPlanExecutorForeign(d, where, {
      ...(options.sequence !== undefined ? { sequence: options.sequence } : {}),
      ...(options.source ? { source: options.source } : {}),
      ...(options.snapshotId ? { snapshotId: options.snapshotId } : {}),
    });
  return withForeignFallback(input, options, () => importStrict(profile, input, options), planExecutorSealedBySavepoint, seal);
}

function importStrict(
  profile: PlanExecutorProfile,
  input: unknown,
  options: ImportPlanExecutorOptions,
): Promise<EncodedSnapshot<PlanExecutorPayload>> {
  return importSpecDocument(profile, input, options, async (rest, where, bookkeeping) => {
    const { status, last_activity, ...payload } = parseDocumentWith(PlanExecutorSpecDocumentSchema, rest, where);
    // A sealed document keeps its bookkeeping; an integrity block of another tool (resealed) is replaced.
    const known = BookkeepingSchema.safeParse(bookkeeping);
    const kept = known.success ? known.data : undefined;
    const id = kept?.snapshot_id ?? options.snapshotId ?? (await importedSnapshotId(last_activity, canonicalJson(rest)));
    return {
      id,
      runId: payload.plan_number,
      sequence: kept?.sequence ?? options.sequence ?? 1,
      createdAt: last_activity,
      source: kept?.source ?? options.source ?? defaultSource(status, payload.completed_tasks?.length ?? 0),
      sourceDetails: kept?.source_details ?? [],
      ...(kept?.priority ? { priority: kept.priority } : {}),
      status,
      payload,
    };
  });
}

/**
 * Imports a plan another executor wrote (see `RunImporter`): `plans/{NN}-CHECKPOINT.json`
 * without savepoint's seal, or edited since savepoint sealed it (the newest truth here), is
 * sealed as it is: every field kept, savepoint's bookkeeping in `integrity`. Dry run unless
 * `apply`; into `target` when given; idempotent.
 *
 * @example
 * ```ts
 * const report = await importPlanExecutorRun(fsStorage({ dir: '.planning' }), '02', { apply: true });
 * ```
 */
export const importPlanExecutorRun: RunImporter = (source, runId, options) =>
  jsonRunImporter(planExecutor, (d, where) => sealPlanExecutorForeign(d, where))(source, runId, options);
