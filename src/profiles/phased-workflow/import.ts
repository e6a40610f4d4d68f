import type { JsonObject } from '../../contract/json.js';
import { CheckpointError } from '../../contract/errors.js';
import type { EncodedSnapshot } from '../../contract/document-format.js';
import { importSpecDocument, parseDocumentWith, withForeignFallback, type JsonProfileImportOptions } from '../snapshot-lifecycle/import.js';
import { phasedSealedBySavepoint, sealPhasedForeign } from './foreign.js';
import type { RunImporter } from '../import-run.js';
import { jsonRunImporter } from '../json-run-import.js';
import { phasedWorkflow, type PhasedWorkflowProfile } from './profile.js';
import { phasedWorkflowDocumentSchema, type PhasedStatus, type PhasedWorkflowPayload } from './schema.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link importPhasedWorkflowDocument}. */
export interface ImportPhasedWorkflowOptions extends JsonProfileImportOptions {
  /** The profile to seal with (its phase names and run-id rule apply). @default phasedWorkflow */
  readonly profile?: PhasedWorkflowProfile;
  /** `status` of a document that has none (the spec has no status field). @default 'in_progress' */
  readonly status?: PhasedStatus;
}

/**
 * Imports a phased-workflow-github.md checkpoint written by another tool (the spec's
 * n8n `prepare_checkpoint` node, a hand-written file): the spec's `checkpoint_contents`
 * fields, with or without savepoint's `status`, `source_details`, `priority` and
 * `integrity`. Missing additions are filled in (`status` from the option, no coalesced
 * triggers, the trigger's spec priority) and the document is sealed; an existing
 * `integrity` block must verify unless `reseal`. The spec fields come out unchanged.
 */
export async function importPhasedWorkflowDocument(
  input: unknown,
  options: ImportPhasedWorkflowOptions = {},
): Promise<EncodedSnapshot<PhasedWorkflowPayload>> {
  assertOptionsArgument(options, 'importPhasedWorkflowDocument');
  const profile = options.profile ?? phasedWorkflow;
  const seal = async (d: JsonObject, where: string) => {
    const sealed = await sealPhasedForeign(d, where, options.status);
    try {
      profile.assertRunId(sealed.snapshot.runId); // the spec's UUID v4 run ids, unless the profile accepts others
    } catch (err) {
      throw new CheckpointError('checkpoint_schema_invalid', `${where}: /run_id ${err instanceof Error ? err.message : 'is invalid'}`, {
        details: { paths: ['/run_id'] },
      });
    }
    return sealed;
  };
  return withForeignFallback(input, options, () => importStrict(profile, input, options), phasedSealedBySavepoint, seal);
}

function importStrict(
  profile: PhasedWorkflowProfile,
  input: unknown,
  options: ImportPhasedWorkflowOptions,
): Promise<EncodedSnapshot<PhasedWorkflowPayload>> {
  const specShape = phasedWorkflowDocumentSchema({ uuidRunIds: false })
    .omit({ integrity: true })
    .partial({ status: true, source_details: true, priority: true });
  return importSpecDocument(profile, input, options, (rest, where) => {
    const d = parseDocumentWith(specShape, rest, where);
    const priority = d.priority ?? profile.trigger(d.trigger).priority;
    return {
      id: d.checkpoint_id,
      runId: d.run_id,
      sequence: d.sequence_number,
      createdAt: d.timestamp,
      source: d.trigger,
      sourceDetails: d.source_details ?? [],
      ...(priority ? { priority } : {}),
      status: d.status ?? options.status ?? 'in_progress',
      payload: { phase: d.phase, state_snapshot: d.state_snapshot, context_fields: d.context_fields },
    };
  });
}

/**
 * Imports a whole phasedWorkflow run the spec's n8n node (or another tool) wrote (see
 * `RunImporter`): each `cp_{sequence}_{trigger}.json` (padded or not) and `latest.json`
 * without savepoint's seal is sealed as it is (`status` `in_progress` added when missing,
 * vendor members kept, the file keeps its name); a sealed file whose bytes changed is skipped
 * with `checkpoint_integrity_mismatch`. Dry run unless `apply`; into `target` when given; idempotent.
 *
 * @example
 * ```ts
 * const report = await importPhasedWorkflowRun(storage, runId, { apply: true, target: githubStorage(…) });
 * ```
 */
export const importPhasedWorkflowRun: RunImporter = (source, runId, options) =>
  jsonRunImporter(phasedWorkflow, (d, where) => sealPhasedForeign(d, where))(source, runId, options);
