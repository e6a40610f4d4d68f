import { jsonDocumentFormat } from '../../codec/json-document.js';
import { CheckpointError } from '../../contract/errors.js';
import { snapshotLifecycleResumeRule } from './resume-rule.js';
import { decodeSnapshotLifecycleForeign } from './foreign.js';
import type { ResumeRule } from '../../contract/resume-rule.js';
import { snapshotLifecycleRetention } from './retention.js';
import type { RetentionPolicy } from '../../contract/retention-policy.js';
import { fromLifecycleHeader, toLifecycleHeader } from '../default-profile.js';
import { defineProfile } from '../define-profile.js';
import { type Profile } from '../../contract/profile.js';
import { historyBySnapshotId, standardLayout } from '../../snapshot-io/layout.js';
import {
  DEFAULT_MAX_COMMAND_OUTCOMES,
  LIFECYCLE_RUN_STATUSES,
  snapshotLifecycleDocumentSchema,
  snapshotLifecyclePayloadSchema,
  type LifecycleSource,
  type LifecycleStatus,
  type SnapshotLifecycleDocument,
  type SnapshotLifecyclePayload,
} from './schema.js';
import { assertOptionsArgument } from '../../contract/arguments.js';

/** Options of {@link createSnapshotLifecycleProfile}. */
export interface SnapshotLifecycleProfileOptions {
  /**
   * Most `command_outcomes` entries one snapshot holds (the spec: "bounded entries").
   * A payload with more is refused with `checkpoint_schema_invalid`;
   * {@link createCommandOutcomeRecorder} keeps the newest ones within the bound.
   * @default 20
   */
  readonly maxCommandOutcomes?: number;
  /**
   * Folder holding one sub-folder per run (`<root>/<run_id>/latest.json`).
   * @default 'checkpoints'
   */
  readonly root?: string;
  /**
   * Keep a `<root>/<run_id>/index.json` run index beside `latest.json` (savepoint's
   * addition: faster listing, and a resume fallback when `latest.json` is unreadable).
   * @default true
   */
  readonly index?: boolean;
  /**
   * Heartbeat period while the run is `in_progress` (spec: every 120 seconds), or `false` for none.
   * @default 120_000
   */
  readonly heartbeatIntervalMs?: number | false;
  /**
   * Coalescing window (spec: "two triggers within 3 seconds with no material state change").
   * @default 3000
   */
  readonly coalesceWindowMs?: number;
  /** Retention policy; the spec's (50 per run, terminal snapshots kept, 14 days, gzip after 24 h) when omitted. @default snapshotLifecycleRetention */
  readonly retention?: RetentionPolicy;
  /** Resume rule. @default snapshotLifecycleResumeRule */
  readonly resume?: ResumeRule<SnapshotLifecyclePayload>;
}

/** The snapshotLifecycle profile type. */
export type SnapshotLifecycleProfile = Profile<SnapshotLifecyclePayload>;

/** What each trigger source means, in the spec's words. */
const TRIGGERS: Record<LifecycleSource, { description: string }> = {
  step_boundary: { description: 'a step entered in_progress, or reached done / failed / skipped' },
  error_boundary: { description: 'a recoverable error was classified, or a forced stop for an unrecoverable error is imminent' },
  timer: { description: 'heartbeat every 120 seconds while the plan is in_progress' },
  manual: { description: 'an explicit /checkpoint request' },
};

/**
 * The material state of a payload for coalescing: everything but the time of the last
 * todo-compliance check, which changes on every re-check without changing the state.
 * `command_outcomes` counts: a snapshot that carries new outcomes is never coalesced away.
 */
function materialView(payload: SnapshotLifecyclePayload): unknown {
  const { checked_at: _volatile, ...compliance } = payload.step_state.todo_compliance;
  return { ...payload, step_state: { ...payload.step_state, todo_compliance: compliance } };
}

/**
 * What a heartbeat stores (snapshot-lifecycle.md: `command_outcomes` are "recent
 * command/tool outcomes since the previous snapshot"): the last state given, with no
 * outcomes — the writer knows of none since the previous snapshot, and repeating the
 * previous snapshot's would record them twice. `heartbeatWithOutcomes(recorder)` passes the
 * outcomes recorded since then instead.
 */
function heartbeatPayload(last: SnapshotLifecyclePayload): SnapshotLifecyclePayload {
  return { ...last, command_outcomes: [] };
}

/**
 * Makes a profile for snapshot-lifecycle.md: one JSON document per snapshot with the
 * spec's top-level fields (`snapshot_id` as `cp_<timestamp>_<suffix>`, `created_at`,
 * `run_id`, `source`, `source_details`, `status`, `step_state`, `context_digest`,
 * `command_outcomes`, `integrity`) plus `sequence`; files
 * `<root>/<run_id>/latest.json` and `<root>/<run_id>/history/<snapshot_id>.json`
 * (`.json.gz` once retention compresses it); triggers `step_boundary`,
 * `error_boundary`, `timer` (heartbeat) and `manual`; statuses `in_progress`, `paused`
 * and the terminal `failed`, `completed`.
 *
 * @example
 * ```ts
 * const profile = createSnapshotLifecycleProfile({ maxCommandOutcomes: 50 });
 * ```
 */
export function createSnapshotLifecycleProfile(options: SnapshotLifecycleProfileOptions = {}): SnapshotLifecycleProfile {
  assertOptionsArgument(options, 'createSnapshotLifecycleProfile');
  const maxCommandOutcomes = options.maxCommandOutcomes ?? DEFAULT_MAX_COMMAND_OUTCOMES;
  if (!Number.isInteger(maxCommandOutcomes) || maxCommandOutcomes < 1) {
    throw new CheckpointError('checkpoint_config_invalid', 'snapshotLifecycle: maxCommandOutcomes must be a positive integer', {
      details: { maxCommandOutcomes: Number.isFinite(maxCommandOutcomes) ? maxCommandOutcomes : -1 },
    });
  }
  const schema = snapshotLifecycleDocumentSchema(maxCommandOutcomes);
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? 120_000;
  return defineProfile<SnapshotLifecyclePayload>({
    name: 'snapshotLifecycle',
    description: 'snapshot-lifecycle.md: latest.json + immutable history per run, step/error/timer/manual triggers',
    sharedFiles: 'snapshot-lifecycle.md: other tools validate latest.json and history against the spec',
    payload: snapshotLifecyclePayloadSchema(maxCommandOutcomes),
    triggers: TRIGGERS,
    statuses: { all: LIFECYCLE_RUN_STATUSES, terminal: ['failed', 'completed'], active: 'in_progress' },
    layout: standardLayout({
      root: options.root ?? 'checkpoints',
      history: historyBySnapshotId(),
      indexName: options.index === false ? false : 'index.json',
    }),
    heartbeat: heartbeatIntervalMs === false ? false : { source: 'timer', intervalMs: heartbeatIntervalMs, payload: heartbeatPayload },
    coalesceWindowMs: options.coalesceWindowMs ?? 3000,
    materialView,
    compressHistory: true,
    // "immutable history: checkpoints/<run_id>/history/<snapshot_id>.json": coalesced triggers go to latest.json.
    immutableHistory: true,
    document: {
      ...jsonDocumentFormat<SnapshotLifecyclePayload, SnapshotLifecycleDocument>({
        schema,
        toDocument: (s) => ({
          ...toLifecycleHeader(s),
          source: s.source as LifecycleSource,
          status: s.status as LifecycleStatus,
          step_state: s.payload.step_state,
          context_digest: s.payload.context_digest,
          command_outcomes: s.payload.command_outcomes,
        }),
        fromDocument: (d) => ({
          ...fromLifecycleHeader(d),
          payload: { step_state: d.step_state, context_digest: d.context_digest, command_outcomes: d.command_outcomes },
        }),
      }),
      // Documents other tools write: the spec's own schema, read with a warning (docs/profiles.md).
      decodeForeign: decodeSnapshotLifecycleForeign,
    },
    retention: options.retention ?? snapshotLifecycleRetention,
    resume: options.resume ?? snapshotLifecycleResumeRule,
  });
}

/** The snapshotLifecycle profile with the spec's defaults. See {@link createSnapshotLifecycleProfile}. */
export const snapshotLifecycle: SnapshotLifecycleProfile = createSnapshotLifecycleProfile();

/** JSON Schema (draft 2020-12) of the snapshotLifecycle document, for non-TypeScript tools (= `snapshotLifecycle.document.jsonSchema`). */
export const snapshotLifecycleJsonSchema = snapshotLifecycle.document.jsonSchema;
