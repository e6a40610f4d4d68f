import type { EncodedSnapshot } from '../../codec/json-document.js';
import { importSpecDocument, parseDocumentWith, type JsonProfileImportOptions } from '../snapshot-lifecycle/import.js';
import { phasedWorkflow, type PhasedWorkflowProfile } from './profile.js';
import { phasedWorkflowDocumentSchema, type PhasedStatus, type PhasedWorkflowPayload } from './schema.js';
import { assertOptionsArgument } from '../../model/arguments.js';

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
export async function importPhasedWorkflowDocument(input: unknown, options: ImportPhasedWorkflowOptions = {}): Promise<EncodedSnapshot<PhasedWorkflowPayload>> {
  assertOptionsArgument(options, 'importPhasedWorkflowDocument');
  const profile = options.profile ?? phasedWorkflow;
  const specShape = phasedWorkflowDocumentSchema({ uuidRunIds: false }).omit({ integrity: true }).partial({ status: true, source_details: true, priority: true });
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
