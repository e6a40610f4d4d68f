import { z } from 'zod';
import type { JsonObject } from '../contract/json.js';
import { documentValidator } from '../codec/document-validator.js';
import * as generated from '../codec/generated/langgraph-document.js';
import { jsonDocumentFormat } from '../codec/json-document.js';
import { IntegritySchema, Rfc3339Schema, TriggerRecordSchema } from '../contract/snapshot.js';
import { defineProfile } from '../profiles/define-profile.js';
import { type Profile } from '../contract/profile.js';
import { historyBySnapshotId, standardLayout } from '../snapshot-io/layout.js';
import { JsonValueSchema } from '../profiles/default-document-schema.js';
import { keepLast } from '../retention/policy.js';
import { LANGGRAPH_ROOT } from './keys.js';
import { langGraphResumeRule } from './resume-rule.js';

/**
 * Checkpoints per thread namespace that the langgraph profile's retention policy keeps
 * (`runRetention({ profile: langGraphProfile })`, `savepoint prune --profile langgraph`;
 * snapshot-lifecycle.md's 50 per run). `SavepointSaver` itself keeps every checkpoint unless
 * given `keepLast`.
 */
export const DEFAULT_KEEP_LAST = 50;

const serializedType = z.string().min(1);
/** The serializer's bytes in base64: any type tag, and JSON bytes that are not exact UTF-8. */
const base64Form = { type: serializedType, data: z.string() };
/** The serializer's JSON output as the UTF-8 text it is (`type: 'json'`): readable, and no base64 to write or read. */
const textForm = { type: serializedType, text: z.string() };

/**
 * Bytes LangGraph's serializer produced (`serde.dumpsTyped`): its type tag and the bytes,
 * as UTF-8 `text` when the type is `json` and the bytes are exact UTF-8 (nearly always),
 * else as base64 `data`. Stored as they are: reading gives back the same bytes.
 * Documents written before the text form hold `data` only; both are read.
 */
export const SerializedValueSchema = z.union([z.object(textForm).strict(), z.object(base64Form).strict()]);
/** The TypeScript type of {@link SerializedValueSchema}. */
export type SerializedValue = z.infer<typeof SerializedValueSchema>;

const channelVersion = z.union([z.number(), z.string().min(0)]);
/** A channel's value and the channel version it was written at (so unchanged channels carry over by version). */
export const StoredChannelSchema = z.union([
  z.object({ ...textForm, version: channelVersion }).strict(),
  z.object({ ...base64Form, version: channelVersion }).strict(),
]);
/** The TypeScript type of {@link StoredChannelSchema}. */
export type StoredChannel = z.infer<typeof StoredChannelSchema>;

/** What a LangGraph checkpoint is in savepoint's model: the snapshot payload of {@link langGraphProfile}. */
export interface LangGraphPayload {
  thread_id: string;
  checkpoint_ns: string;
  parent_checkpoint_id?: string;
  /** The checkpoint without its `channel_values`, as the serializer wrote it. */
  checkpoint: SerializedValue;
  /** Each channel's value, serialized on its own (unchanged channels are copied from the parent, not re-serialized). */
  channel_values: Record<string, StoredChannel>;
  /** The checkpoint's metadata (`source`, `step`, `parents`, your own keys) when the serializer writes JSON: filters read it. */
  metadata: JsonObject;
  /** The metadata as the serializer wrote it, when that is not plain JSON (an encrypting serializer). */
  metadata_blob?: SerializedValue;
}

/** Sources LangGraph writes into `metadata.source`. */
export const LANGGRAPH_SOURCES = ['input', 'loop', 'update', 'fork'] as const;

/** The stored document of one LangGraph checkpoint: the snapshot header, the checkpoint, and the seal. */
export const LangGraphDocumentSchema = z
  .object({
    snapshot_id: z.string().min(1),
    run_id: z.string().min(1),
    sequence: z.number().int().min(1),
    created_at: Rfc3339Schema,
    source: z.enum(LANGGRAPH_SOURCES),
    source_details: z.array(TriggerRecordSchema),
    status: z.literal('in_progress'),
    thread_id: z.string(),
    checkpoint_ns: z.string(),
    parent_checkpoint_id: z.string().min(1).optional(),
    checkpoint: SerializedValueSchema,
    channel_values: z.record(z.string(), StoredChannelSchema),
    metadata: z.record(z.string(), JsonValueSchema),
    metadata_blob: SerializedValueSchema.optional(),
    integrity: IntegritySchema,
  })
  .strict();
/** The TypeScript type of {@link LangGraphDocumentSchema}. */
export type LangGraphDocument = z.infer<typeof LangGraphDocumentSchema>;

/**
 * The profile of stores written by `SavepointSaver`: one run per (thread, namespace)
 * under `langgraph/<run_id>/`, one sealed document per checkpoint in `history/<checkpoint_id>.json`,
 * and each task's pending writes as part files `parts/<sequence>/w_<task>.json`, so
 * retention deletes them with their checkpoint and keeps them with it. `savepoint
 * verify|ls|prune --profile langgraph` and `runRetention({ profile: langGraphProfile })`
 * work on such a store.
 */
export const langGraphProfile: Profile<LangGraphPayload> = defineProfile<LangGraphPayload>({
  name: 'langgraph',
  description: 'LangGraph checkpoints written by SavepointSaver (savepoint/langgraph)',
  payload: z.custom<LangGraphPayload>(() => true),
  triggers: { input: {}, loop: {}, update: {}, fork: {} },
  statuses: { all: ['in_progress'], terminal: [], active: 'in_progress' },
  heartbeat: false,
  // History files are looked up by name (`<checkpoint_id>.json`): a gzipped `.gz` form would hide them.
  compressHistory: false,
  layout: standardLayout({ root: LANGGRAPH_ROOT, history: historyBySnapshotId(), indexName: false }),
  retention: { name: 'langgraph', rules: [keepLast(DEFAULT_KEEP_LAST)] },
  // A finished graph (no node scheduled) is not "in progress": see langGraphResumeRule.
  resume: (snapshot, context) => langGraphResumeRule(snapshot, context),
  document: jsonDocumentFormat<LangGraphPayload, LangGraphDocument>({
    schema: LangGraphDocumentSchema,
    // Loaded with the subpath, not at a replica's first read: a service's first request does not wait for it.
    validator: documentValidator(generated.validate),
    toDocument: (s) => ({
      snapshot_id: s.id,
      run_id: s.runId,
      sequence: s.sequence,
      created_at: s.createdAt,
      source: s.source as LangGraphDocument['source'],
      source_details: s.sourceDetails,
      status: 'in_progress',
      ...s.payload,
    }),
    fromDocument: (d) => {
      const { snapshot_id, run_id, sequence, created_at, source, source_details, status, integrity: _integrity, ...payload } = d;
      return {
        id: snapshot_id,
        runId: run_id,
        sequence,
        createdAt: created_at,
        source,
        sourceDetails: source_details,
        status,
        payload,
        metadata: payload.metadata,
      };
    },
  }),
});
