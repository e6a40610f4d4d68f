import { canonicalJson, quotedKey, sortKeys } from '../codec/canonical-json.js';
import { sealAroundIntegrity, sealAroundIntegrityInto } from '../codec/json-document.js';
import type { LangGraphPayload, StoredChannel } from './profile.js';
import { channelText, valueText } from './serialized.js';

const quote = JSON.stringify;

/**
 * The snapshot header of a checkpoint document (what `SnapshotDraft` holds besides the
 * payload). Its strings need no JSON escaping and are written between quotes as they are: a
 * checked checkpoint id (`[A-Za-z0-9-]`), a run id made of key segments, an RFC 3339 time, a
 * LangGraph source name; the sequence is a positive integer.
 */
export interface CheckpointHeader {
  readonly id: string;
  readonly runId: string;
  readonly sequence: number;
  readonly createdAt: string;
  readonly source: string;
}

/** Canonical text of each stored channel, by name, where the saver has it already (a channel carried from the parent). */
export type ChannelTexts = Readonly<Record<string, string>>;

/** What the saver already holds of a document's text, and where to seal it. */
export interface KnownText {
  /** Canonical text of the channels it has (see {@link ChannelTexts}). */
  readonly texts?: ChannelTexts;
  /** Canonical text of `payload.metadata`, when made from the caller's plain data (see `plainCanonicalJson`). */
  readonly metadata?: string;
  /** A reused buffer: the bytes are a view of it when they fit (see `sealAroundIntegrityInto`); hand them to a store that copies them before its call returns, and to nothing else. */
  readonly scratch?: Uint8Array;
}

/** Canonical JSON of `channel_values`: names in code-unit order, each channel's known text or its text now. */
function channelValuesText(channels: Readonly<Record<string, StoredChannel>>, texts: ChannelTexts | undefined): string {
  const names = Object.keys(channels);
  sortKeys(names);
  let text = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    text += `${i > 0 ? ',' : ''}${quotedKey(name)}:${texts?.[name] ?? channelText(channels[name]!)}`;
  }
  return `${text}}`;
}

/**
 * The sealed bytes of one checkpoint document, byte for byte what
 * `langGraphProfile.document.encode` makes of the same snapshot (a property test holds them
 * equal), assembled as text in the members' canonical order from what the saver holds: a
 * channel carried over from the parent keeps its text, nothing is walked or escaped twice.
 * Every member is valid by construction (ids checked, the time from `toRfc3339`, type tags
 * and versions checked where they are made), so the JSON Schema check is left to reads,
 * which all run it.
 */
export function encodeCheckpointDocument(
  header: CheckpointHeader,
  payload: LangGraphPayload,
  known: KnownText = {},
): Uint8Array | Promise<Uint8Array> {
  const { texts, scratch } = known;
  const before =
    `{"channel_values":${channelValuesText(payload.channel_values, texts)},"checkpoint":${valueText(payload.checkpoint)},` +
    `"checkpoint_ns":${quote(payload.checkpoint_ns)},"created_at":"${header.createdAt}",`;
  const after =
    `,"metadata":${known.metadata ?? canonicalJson(payload.metadata)}` +
    (payload.metadata_blob !== undefined ? `,"metadata_blob":${valueText(payload.metadata_blob)}` : '') +
    (payload.parent_checkpoint_id !== undefined ? `,"parent_checkpoint_id":${quote(payload.parent_checkpoint_id)}` : '') +
    // The header's strings need no escaping (see CheckpointHeader): no JSON.stringify call each.
    `,"run_id":"${header.runId}","sequence":${header.sequence},"snapshot_id":"${header.id}","source":"${header.source}"` +
    `,"source_details":[],"status":"in_progress","thread_id":${quote(payload.thread_id)}}`;
  return (scratch && sealAroundIntegrityInto(before, after, scratch)) || sealAroundIntegrity(before, after);
}
