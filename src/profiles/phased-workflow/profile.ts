import { jsonDocumentFormat } from '../../codec/json-document.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertRunId, newUuidV4 } from '../../contract/ids.js';
import { createPhasedWorkflowResumeRule, phasedWorkflowResumeRule } from './resume-rule.js';
import { jsonClaimsReader } from '../foreign-json.js';
import { decodePhasedWorkflowForeign } from './foreign.js';
import type { ResumeRule } from '../../contract/resume-rule.js';
import { phasedWorkflowRetention } from './retention.js';
import type { RetentionPolicy } from '../../contract/retention-policy.js';
import { defineProfile } from '../define-profile.js';
import { type Profile } from '../../contract/profile.js';
import type { SnapshotDraft } from '../../contract/snapshot.js';
import { standardLayout, type HistoryNaming } from '../../snapshot-io/layout.js';
import { splitPhasedWorkflowDocument } from './split.js';
import {
  PHASED_STATUSES,
  PHASED_TRIGGER_PRIORITIES,
  PHASED_TRIGGERS,
  PHASED_UUID_V4_PATTERN,
  phasedWorkflowDocumentSchema,
  phasedWorkflowPayloadSchema,
  type PhaseKey,
  type PhasedStatus,
  type PhasedTrigger,
  type PhasedWorkflowDocument,
  type PhasedWorkflowPayload,
} from './schema.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link createPhasedWorkflowProfile}. */

/**
 * step_4_determine_resume_point of phased-workflow-github.md, as classes: a snapshot resumes
 * at the next phase (`phase_complete`), at the gate (`gate_decision`), at human review
 * (`circuit_breaker`) or at the start of its phase (every other trigger). Triggers of
 * different classes are never coalesced, so the snapshot a resume reads keeps its meaning.
 */
const PHASED_RESUME_AS: Readonly<Record<(typeof PHASED_TRIGGERS)[number], string>> = {
  phase_complete: 'next_phase',
  gate_decision: 'gate',
  circuit_breaker: 'human_review',
  escalation: 'current_phase',
  iteration: 'current_phase',
  cost_threshold: 'current_phase',
  expensive_op: 'current_phase',
  destructive_op: 'current_phase',
  manual: 'current_phase',
};

export interface PhasedWorkflowProfileOptions {
  /**
   * Names of the workflow's phases, by `phase_outputs` key (`{ phase_0: 'intake', phase_3: 'build' }`).
   * When given, `phase` must be one of `phase_{number}_{name}` for these pairs; otherwise any
   * `phase_{number}_{name}` with a name starting with a letter is accepted.
   * @default undefined (any name)
   */
  readonly phaseNames?: Partial<Record<PhaseKey, string>>;
  /**
   * Folder holding one sub-folder per run (spec `base_path: /checkpoints`).
   * @default 'checkpoints'
   */
  readonly root?: string;
  /**
   * Require run ids to be UUID v4, as the spec's `run_id` format says. Set `false` to
   * accept any portable run id (for runs named by another system).
   * @default true
   */
  readonly uuidRunIds?: boolean;
  /**
   * Largest stored checkpoint, in bytes (spec `max_checkpoint_size_mb: 10`).
   * @default 10 * 1024 * 1024
   */
  readonly maxSnapshotBytes?: number;
  /**
   * Over the limit: `split` large `phase_outputs` entries into referenced part files
   * (spec `on_oversized`; see {@link splitPhasedWorkflowDocument}), or `reject` with `checkpoint_too_large`.
   * @default 'split'
   */
  readonly onOversize?: 'split' | 'reject';
  /**
   * Coalescing window. The spec has no coalescing rule; savepoint's 3-second default
   * (from snapshot-lifecycle.md) applies, and the writer never coalesces away a trigger
   * without recording it in `source_details`.
   * @default 3000
   */
  readonly coalesceWindowMs?: number;
  /**
   * `index.json` is rewritten with every checkpoint while it lists at most this many entries
   * (the spec's node 8; its resume fallback reads the index's highest sequence), then every
   * max(1, n/16) checkpoints, so the bytes a checkpoint writes stay bounded (≈ 170 KB of index
   * at 1000 entries). @default 1000
   */
  readonly indexEveryCheckpointUpTo?: number;
  /** Retention policy; the spec's tiers (10 runs full, 11–50 latest only, older summarized, preserved runs kept) when omitted. @default phasedWorkflowRetention */
  readonly retention?: RetentionPolicy;
  /** Resume rule (the spec's `step_4_determine_resume_point`). @default phasedWorkflowResumeRule */
  readonly resume?: ResumeRule<PhasedWorkflowPayload>;
}

/** The phasedWorkflow profile type. */
export type PhasedWorkflowProfile = Profile<PhasedWorkflowPayload>;

const TRIGGER_DESCRIPTIONS: Record<PhasedTrigger, string> = {
  phase_complete: 'phase completion, before gate evaluation (primary recovery point)',
  gate_decision: 'gate evaluation complete',
  circuit_breaker: 'any circuit breaker trips',
  escalation: 'escalation to a human',
  iteration: 'before an iteration attempt',
  cost_threshold: 'cost reaches 80% of the budget',
  expensive_op: 'after an expensive operation (Devin task, long API call)',
  destructive_op: 'before a destructive operation (file deletion, schema migration)',
  manual: 'explicit checkpoint request',
};

/**
 * History file names of the spec's `file_naming`: `cp_{sequence:03d}_{trigger}.json`
 * in the run folder itself.
 */
export const phasedHistoryNaming: HistoryNaming = {
  dir: '',
  keyFrom: 'sequence',
  name: (ref) => `cp_${String(ref.sequence).padStart(3, '0')}_${ref.source}.json`,
  parse: (fileName) => {
    // Padded (`cp_001_…`, what savepoint writes) or not (`cp_1_…`, what the spec's own n8n node writes).
    const m = /^cp_(\d+)_([a-z][a-z_]*)\.json$/.exec(fileName);
    return m ? { sequence: Number(m[1]), source: m[2]! } : undefined;
  },
};

/** `api_metrics` change on every API call; they are context for debugging, not state worth a new checkpoint. */
function materialView(payload: PhasedWorkflowPayload): unknown {
  const { api_metrics: _volatile, ...context } = payload.context_fields;
  return { ...payload, context_fields: context };
}

/** Rejects phase names that are not a letter followed by letters, digits, `_` or `-`. */
function assertPhaseNames(phaseNames: Readonly<Record<string, unknown>>): void {
  for (const [key, name] of Object.entries(phaseNames)) {
    if (!/^[A-Za-z][A-Za-z0-9_-]*$/.test(String(name))) {
      throw new CheckpointError(
        'checkpoint_config_invalid',
        `phasedWorkflow: the name of ${key} must start with a letter and hold only letters, digits, _ and -`,
        {
          details: { phase: key },
        },
      );
    }
  }
}

/** The snapshot (without integrity) a phasedWorkflow checkpoint document stands for. */
function phasedDraftOf(d: PhasedWorkflowDocument): SnapshotDraft<PhasedWorkflowPayload> {
  return {
    id: d.checkpoint_id,
    runId: d.run_id,
    sequence: d.sequence_number,
    createdAt: d.timestamp,
    source: d.trigger,
    sourceDetails: d.source_details,
    ...(d.priority ? { priority: d.priority } : {}),
    status: d.status,
    payload: { phase: d.phase, state_snapshot: d.state_snapshot, context_fields: d.context_fields },
  };
}

/** The run index is rewritten with every checkpoint while it lists at most this many (see `indexEveryCheckpointUpTo`). */
const PHASED_INDEX_EVERY_CHECKPOINT_UP_TO = 1000;

/**
 * Makes a profile for phased-workflow-github.md: checkpoints with the spec's
 * `checkpoint_contents` (UUID v4 `checkpoint_id` and `run_id`, `timestamp`, one of nine
 * `trigger`s, `phase`, `sequence_number`, `state_snapshot`, `context_fields`) plus
 * `status`, `source_details`, `priority` and `integrity`; files
 * `checkpoints/{run_id}/cp_{sequence:03d}_{trigger}.json`, `latest.json`, `index.json`,
 * batch files `batch_{first}_{last}.json`, `summary.json` for archived runs, and the
 * store-wide `checkpoints/preserved_runs.json` and `checkpoints/retention_log.json`.
 *
 * @example
 * ```ts
 * const profile = createPhasedWorkflowProfile({ phaseNames: { phase_0: 'intake', phase_1: 'plan', phase_2: 'build' } });
 * ```
 */
export function createPhasedWorkflowProfile(options: PhasedWorkflowProfileOptions = {}): PhasedWorkflowProfile {
  assertOptionsArgument(options, 'createPhasedWorkflowProfile');
  const uuidRunIds = options.uuidRunIds ?? true;
  const schema = phasedWorkflowDocumentSchema({ ...(options.phaseNames ? { phaseNames: options.phaseNames } : {}), uuidRunIds });
  assertPhaseNames(options.phaseNames ?? {});
  return defineProfile<PhasedWorkflowPayload>({
    name: 'phasedWorkflow',
    description: 'phased-workflow-github.md: cp_NNN_trigger.json + latest.json + index.json per run, nine prioritized triggers',
    sharedFiles: 'phased-workflow-github.md: the orchestrator and people read cp_NNN, latest.json and index.json in the repository',
    payload: phasedWorkflowPayloadSchema(options.phaseNames),
    triggers: Object.fromEntries(
      PHASED_TRIGGERS.map((t) => [
        t,
        { priority: PHASED_TRIGGER_PRIORITIES[t], description: TRIGGER_DESCRIPTIONS[t], resumeAs: PHASED_RESUME_AS[t] },
      ]),
    ),
    statuses: { all: PHASED_STATUSES, terminal: ['completed', 'failed'], active: 'in_progress' },
    layout: standardLayout({
      root: options.root ?? 'checkpoints',
      history: phasedHistoryNaming,
      indexName: 'index.json',
      summaryName: 'summary.json',
    }),
    newSnapshotId: () => newUuidV4(),
    assertRunId(runId) {
      assertRunId(runId);
      if (uuidRunIds && !PHASED_UUID_V4_PATTERN.test(runId)) {
        throw new CheckpointError(
          'checkpoint_key_invalid',
          'phasedWorkflow run ids must be UUID v4 (set uuidRunIds: false to accept others)',
          {
            details: { length: runId.length },
          },
        );
      }
    },
    heartbeat: false,
    coalesceWindowMs: options.coalesceWindowMs ?? 3000,
    materialView,
    maxSnapshotBytes: options.maxSnapshotBytes ?? 10 * 1024 * 1024,
    onOversize: options.onOversize ?? 'split',
    splitDocument: splitPhasedWorkflowDocument,
    compressHistory: true,
    // node 8 of the spec's n8n pattern adds each checkpoint to index.json after its write, and its
    // resume fallback loads the index's highest sequence: exact up to 1000 entries (≈ 170 KB).
    indexEveryCheckpointUpTo: options.indexEveryCheckpointUpTo ?? PHASED_INDEX_EVERY_CHECKPOINT_UP_TO,
    document: {
      ...jsonDocumentFormat<PhasedWorkflowPayload, PhasedWorkflowDocument>({
        schema,
        toDocument: (s) => ({
          checkpoint_id: s.id,
          run_id: s.runId,
          timestamp: s.createdAt,
          trigger: s.source as PhasedTrigger,
          phase: s.payload.phase,
          sequence_number: s.sequence,
          state_snapshot: s.payload.state_snapshot,
          context_fields: s.payload.context_fields,
          status: s.status as PhasedStatus,
          source_details: s.sourceDetails,
          ...(s.priority ? { priority: s.priority } : {}),
        }),
        fromDocument: phasedDraftOf,
      }),
      // Checkpoints the spec's own n8n node (or another tool) writes: read with a warning (docs/profiles.md).
      decodeForeign: decodePhasedWorkflowForeign,
      // What a refused checkpoint still says, so resume never steps over a gate it cannot read.
      claimsOf: jsonClaimsReader({ sequence: 'sequence_number', id: 'checkpoint_id', source: 'trigger' }),
    },
    retention: options.retention ?? phasedWorkflowRetention,
    resume:
      options.resume ??
      (options.phaseNames ? createPhasedWorkflowResumeRule({ phaseNames: options.phaseNames }) : phasedWorkflowResumeRule),
  });
}

/** The phasedWorkflow profile with the spec's defaults. See {@link createPhasedWorkflowProfile}. */
export const phasedWorkflow: PhasedWorkflowProfile = createPhasedWorkflowProfile();

/** JSON Schema (draft 2020-12) of the phasedWorkflow checkpoint, for non-TypeScript tools (= `phasedWorkflow.document.jsonSchema`). */
export const phasedWorkflowJsonSchema = phasedWorkflow.document.jsonSchema;
