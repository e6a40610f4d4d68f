import type { z } from 'zod';
import type { JsonValue } from '../contract/json.js';
import { compiledJsonDocumentFormat } from '../codec/json-document.js';
import { type DocumentFormat } from '../contract/document-format.js';
import { documentValidator } from '../codec/document-validator.js';
import { CheckpointError } from '../contract/errors.js';
import * as generated from '../codec/generated/default-document.js';
import { anySchema } from '../contract/standard-schema.js';
import { withMember } from '../contract/with-member.js';
import type { Priority, SnapshotDraft, TriggerRecord } from '../contract/snapshot.js';
import type { DefaultDocumentSchema } from './default-document-schema.js';
import { freezePolicy } from '../retention/policy.js';
import { type RetentionPolicy } from '../contract/retention-policy.js';
import { defineProfile } from './define-profile.js';
import { type PayloadSchema, type Profile } from '../contract/profile.js';
import { historyBySnapshotId, standardLayout } from '../snapshot-io/layout.js';

/** The header fields every snapshot-lifecycle.md document starts with (plus savepoint's `sequence` and `priority`). */
export interface LifecycleHeader {
  snapshot_id: string;
  run_id: string;
  sequence: number;
  created_at: string;
  source: string;
  source_details: TriggerRecord[];
  priority?: Priority;
  status: string;
}

/** The internal model's common fields as snapshot-lifecycle.md's header fields (used by the default and snapshotLifecycle profiles). */
export function toLifecycleHeader(s: Omit<SnapshotDraft<unknown>, 'payload'>): LifecycleHeader {
  const header: LifecycleHeader = {
    snapshot_id: s.id,
    run_id: s.runId,
    sequence: s.sequence,
    created_at: s.createdAt,
    source: s.source,
    source_details: s.sourceDetails,
    status: s.status,
  };
  if (s.priority) header.priority = s.priority;
  return header;
}

/** Inverse of {@link toLifecycleHeader}. */
export function fromLifecycleHeader(d: LifecycleHeader): Omit<SnapshotDraft<unknown>, 'payload'> {
  const header: Omit<SnapshotDraft<unknown>, 'payload'> = {
    id: d.snapshot_id,
    runId: d.run_id,
    sequence: d.sequence,
    createdAt: d.created_at,
    source: d.source,
    sourceDetails: d.source_details,
    status: d.status,
  };
  if (d.priority) header.priority = d.priority;
  return header;
}

/** Statuses of snapshot-lifecycle.md, shared by the default profile. */
export const LIFECYCLE_STATUSES = ['in_progress', 'failed', 'completed', 'paused'] as const;
/** A status of the default profile (snapshot-lifecycle.md's). */
export type LifecycleStatus = (typeof LIFECYCLE_STATUSES)[number];
/** A trigger of the default profile (snapshot-lifecycle.md's). */
export type DefaultTrigger = 'step_boundary' | 'error_boundary' | 'timer' | 'manual';

/** The default profile's stored document; see {@link DefaultDocumentSchema}. */
export type DefaultDocument = z.infer<typeof DefaultDocumentSchema>;

/**
 * snapshot-lifecycle.md's retention defaults, as data (the spec's folder is not imported: the
 * default profile is not that spec's): the latest 50 per run younger than 14 days, the latest
 * `failed` and `completed` always, gzip of history after 24 h.
 */
const DEFAULT_RETENTION: RetentionPolicy = freezePolicy({
  name: 'snapshotLifecycle',
  rules: [
    { rule: 'keep-last', count: 50, maxAge: '14d' },
    { rule: 'keep-latest-status', status: 'failed' },
    { rule: 'keep-latest-status', status: 'completed' },
  ],
  compressAfter: '24h',
});

/**
 * The embedded default profile: any JSON state, snapshot-lifecycle.md's triggers
 * (`step_boundary`, `error_boundary`, `timer`, `manual`), statuses and layout
 * (`checkpoints/<run_id>/latest.json`, `history/<snapshot_id>.json`), plus an
 * `index.json` per run for fast listing and resume fallback. Its retention policy is
 * snapshot-lifecycle.md's: the latest 50 per run, the latest failed and
 * completed, nothing older than 14 days otherwise, gzip of history after 24 h.
 */

export const defaultProfile: Profile<JsonValue, DefaultTrigger, LifecycleStatus> = defineProfile({
  name: 'default',
  description: 'Any JSON state, in the snapshot-lifecycle layout',
  payload: anySchema<JsonValue>(),
  triggers: {
    step_boundary: { description: 'a step entered in_progress or reached done/failed/skipped' },
    error_boundary: { description: 'a recoverable error was classified, or a forced stop is imminent' },
    timer: { description: 'heartbeat while the run is in_progress' },
    manual: { description: 'an explicit checkpoint request' },
  },
  statuses: { all: LIFECYCLE_STATUSES, terminal: ['failed', 'completed'], active: 'in_progress' },
  // A run idling in_progress would otherwise store the same state every 120 s (~720 a day):
  // the default profile follows no spec that asks for that, so an unchanged state is not stored.
  heartbeat: { source: 'timer', intervalMs: 120_000, whenUnchanged: 'skip' },
  layout: standardLayout({ root: 'checkpoints', history: historyBySnapshotId() }),
  // The snapshot-lifecycle layout, and its rule: history entries are never rewritten.
  immutableHistory: true,
  // Large states are stored as content chunks: a long run's history costs what its changes cost.
  dedup: true,
  retention: DEFAULT_RETENTION,
  // The document's JSON Schema and validator were generated from DefaultDocumentSchema at build time.
  document: compiledJsonDocumentFormat<JsonValue, DefaultDocument>({
    jsonSchema: generated.jsonSchema,
    validator: documentValidator(generated.validate),
    // Member by member, not spread: see withMember (these run once per checkpoint and per read).
    toDocument: (s) => withMember(toLifecycleHeader(s) as Omit<DefaultDocument, 'state' | 'integrity'>, 'state', s.payload),
    fromDocument: (d) => withMember(fromLifecycleHeader(d), 'payload', d.state),
    payloadMember: 'state',
  }),
});

/** Options of {@link jsonProfile}. */
export interface JsonProfileOptions<T> {
  /**
   * Checks each payload before it is saved: any Standard Schema (zod 3.24+ or 4, valibot,
   * arktype, …). Without it any value canonical JSON can carry is accepted.
   */
  readonly schema?: PayloadSchema<T>;
  /** Profile name (the CLI's `--profile`). @default 'default' (the stored documents are the default profile's) */
  readonly name?: string;
}

/**
 * The default profile with your payload type: `T` may be an `interface` (no index signature
 * needed), and what a writer or `planResume` hands back is typed `T`, not `JsonValue`.
 * Documents, layout, triggers, statuses and retention are the default profile's, so runs
 * written with it read back with `defaultProfile` and the CLI. Given a `schema`, each payload
 * is checked with it before it is saved (`checkpoint_schema_invalid` with the issue paths).
 *
 * @example
 * ```ts
 * interface AgentState { step: number; notes: string[] }
 * const profile = jsonProfile<AgentState>();
 * const writer = createWriter({ storage, profile, runId: 'run-1' });
 * await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1, notes: [] } });
 * ```
 */
export function jsonProfile<T>(options: JsonProfileOptions<T> = {}): Profile<T, DefaultTrigger, LifecycleStatus> {
  if (options === null || typeof options !== 'object') {
    throw new CheckpointError('checkpoint_config_invalid', 'jsonProfile options must be an object');
  }
  if (options.schema === undefined && options.name === undefined)
    return defaultProfile as unknown as Profile<T, DefaultTrigger, LifecycleStatus>;
  const { name: _name, description: _description, isTerminal: _isTerminal, trigger: _trigger, ...base } = defaultProfile;
  // A payload that passed the schema is stored as the default profile's `state` member; the
  // document format only moves it between `state` and `payload`, whatever its type.
  return defineProfile<T, DefaultTrigger, LifecycleStatus>({
    ...base,
    name: options.name ?? 'default',
    description: defaultProfile.description,
    payload: options.schema ?? anySchema<T>(),
    document: base.document as unknown as DocumentFormat<T>,
    materialView: (payload: T) => payload,
    // The default profile's beat derives nothing from the payload (no `heartbeat.payload`).
    heartbeat: base.heartbeat && {
      source: base.heartbeat.source,
      intervalMs: base.heartbeat.intervalMs,
      whenUnchanged: base.heartbeat.whenUnchanged,
    },
    resume: undefined,
  });
}
