import { z } from 'zod';
import type { JsonObject } from './json.js';
import { PRIORITIES, type Priority } from './snapshot-constants.js';

export { PRIORITIES, FORMAT_VERSION, type Priority } from './snapshot-constants.js';

/** RFC 3339 UTC timestamp (`Z` offset), as every spec asks for. */
export const Rfc3339Schema = z.iso.datetime({ offset: false, precision: undefined });

/**
 * One trigger that fired. The first trigger of a snapshot is its `source`; triggers
 * coalesced into it later (snapshot-lifecycle.md: "append trigger source to
 * source_details") are appended, so no trigger is ever dropped unrecorded.
 *
 * `coalesced_into` marks a record that belongs to the *previous* snapshot: on a profile with
 * immutable history, a trigger coalesced into a snapshot whose history entry is already
 * written is recorded in `latest` only, and copied into the next snapshot's history entry
 * with the id of the snapshot it joined (see `ProfileDefinition.immutableHistory`).
 */
export const TriggerRecordSchema = z
  .object({
    source: z.string().min(1),
    at: Rfc3339Schema,
    priority: z.enum(PRIORITIES).optional(),
    coalesced_into: z.string().min(1).optional(),
  })
  .strict();
/** One trigger that fired: its `source`, when (`at`, RFC 3339) and its `priority` where the profile's spec gives one. */
export type TriggerRecord = z.infer<typeof TriggerRecordSchema>;

/** Integrity metadata as stored in a document's `integrity` object. */
export const IntegritySchema = z
  .object({
    format_version: z.string().min(1),
    algorithm: z.literal('sha256'),
    checksum: z.string().regex(/^[0-9a-f]{64}$/),
  })
  .strict();
/** The TypeScript type of {@link IntegritySchema}. */
export type Integrity = z.infer<typeof IntegritySchema>;

/**
 * The one internal snapshot model every profile maps to and from its own document.
 * `payload` is the profile's business (its zod schema); everything else is common.
 */
export interface Snapshot<P = unknown> {
  /** Snapshot id in the profile's format (`cp_<timestamp>_<suffix>`, a UUID v4, `chk-003`, …). */
  id: string;
  /** The run (session, plan, workflow execution) this snapshot belongs to. */
  runId: string;
  /** 1, 2, 3… within the run; never reused. */
  sequence: number;
  /** RFC 3339 UTC creation time. */
  createdAt: string;
  /** The trigger that created the snapshot. */
  source: string;
  /** Triggers coalesced into this snapshot after `source`, in firing order. */
  sourceDetails: TriggerRecord[];
  /** The trigger's priority, where the profile's spec gives one. */
  priority?: Priority;
  /** Execution status (`in_progress`, `completed`, …: the profile's set). */
  status: string;
  /** The profile's payload. */
  payload: P;
  /**
   * Free-form metadata of this snapshot, for filters (`listRunSnapshots({ filter })`): the
   * LangGraph profile keeps a checkpoint's metadata here. Absent for profiles without it.
   */
  metadata?: JsonObject;
  /** Format version and checksum of the stored document. */
  integrity: Integrity;
}

/** A snapshot before it is sealed: everything but the integrity block. */
export type SnapshotDraft<P = unknown> = Omit<Snapshot<P>, 'integrity'>;

/**
 * The snapshot fields that Markdown-bodied profiles (hand-off, progress protocol) carry
 * beside the spec's own text, in the snake_case of the stored formats. Their documents
 * have no JSON body to hold them, so each keeps them in its own metadata block.
 */
export const storedSnapshotMetaShape = {
  run_id: z.string().min(1),
  sequence: z.number().int().min(1),
  source: z.string().min(1),
  source_details: z.array(TriggerRecordSchema).optional(),
  priority: z.enum(PRIORITIES).optional(),
  status: z.string().min(1),
  integrity: IntegritySchema,
};
