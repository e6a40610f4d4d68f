import { canonicalJson, parseJson, quotedKey, sortKeys } from '../codec/canonical-json.js';
import { sealTextAroundIntegrity, type SealedText } from '../codec/json-document.js';
import { mayDifferAsJsonb } from '../codec/jsonb-refusals.js';
import type { JsonObject } from '../contract/json.js';
import { FORMAT_VERSION } from '../contract/snapshot-constants.js';
import type { Snapshot } from '../contract/snapshot.js';
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
  /**
   * Work out the document's metadata column (`SealedCheckpoint.metadataColumn`) only when its text
   * is shorter than this: for a store that indexes metadata, and a document it may be given whole
   * (a longer one may go as content chunks, which name no metadata). Absent: never (a scan of the
   * whole text a checkpoint, for nothing on any other store).
   */
  readonly metadataColumnBelow?: number;
}

/**
 * The document's canonical text from its start through `channel_values`, in pieces (a channel's
 * text over {@link LARGE_CHANNEL} a piece of its own: see `sealTextAroundIntegrity`), and the
 * channels by name in that order (as a read of the document gives them).
 */
function channelValuesText(
  channels: Readonly<Record<string, StoredChannel>>,
  texts: ChannelTexts | undefined,
): { pieces: string[]; sorted: Record<string, StoredChannel> } {
  const names = Object.keys(channels);
  sortKeys(names);
  const sorted: Record<string, StoredChannel> = {};
  const pieces: string[] = [];
  let text = '{"channel_values":{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    const channel = channels[name]!;
    // As the document's text gives it back: a version of -0 is written, and read, as 0.
    sorted[name] = Object.is(channel.version, -0) ? { ...channel, version: 0 } : channel;
    const value = texts?.[name] ?? channelText(channel);
    text += `${i > 0 ? ',' : ''}${quotedKey(name)}:`;
    if (value.length > LARGE_CHANNEL) {
      pieces.push(text, value);
      text = '';
    } else text += value;
  }
  pieces.push(`${text}}`);
  return { pieces, sorted };
}

/** Channel texts longer than this are sealed as pieces of their own (see {@link channelValuesText}). */
const LARGE_CHANNEL = 4096;

/** A checkpoint document as sealed: its stored bytes, and what the snapshot a read of them decodes to is made from. */
export interface SealedCheckpoint {
  readonly bytes: Uint8Array;
  /** The members the snapshot a read of `bytes` decodes to is made of ({@link snapshotOf}): made only if it is read again. */
  readonly members: SealedMembers;
  /** The document's metadata as a store that indexes it works it out from `bytes` (a `KnownMetadata`'s `json`), or undefined where the store should work it out itself. */
  readonly metadataColumn: string | null | undefined;
}

/**
 * The characters a piece of a document's text (after the first) may start with for a scan of
 * each piece to find what a scan of the whole would: a value or a member's separator, never the
 * middle of a number or of an escape.
 */
const CLEAN_START = /^["{[,}tfn]/;

/**
 * The metadata column of the document sealed from `before` (its pieces), the integrity member
 * and `after`, whose metadata member is `metadata` (canonical text of a JSON object), as the
 * store's rules compute it from the bytes (storage/postgres/client-metadata.ts and the column's
 * function): null with a `metadata_blob` or metadata naming `lc`, else its text. Undefined when
 * `jsonb` might read the document otherwise than `JSON.parse` (an escape, a number it refuses):
 * the store then decides as it does for any bytes. The integrity member holds neither.
 */
function metadataColumnOf(
  before: readonly string[],
  after: string,
  metadata: string,
  blob: boolean,
  below: number,
): string | null | undefined {
  let length = after.length;
  for (const piece of before) length += piece.length;
  if (length >= below) return undefined;
  for (let i = 0; i < before.length; i++) {
    const piece = before[i]!;
    if (mayDifferAsJsonb(piece) || (i > 0 && !CLEAN_START.test(piece))) return undefined;
  }
  if (mayDifferAsJsonb(after)) return undefined;
  return blob || metadata.includes('"lc"') ? null : metadata;
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
  const sealed = sealCheckpointDocument(header, payload, known);
  return sealed instanceof Promise ? sealed.then((s) => s.bytes) : sealed.bytes;
}

/**
 * {@link encodeCheckpointDocument}, with the members the document was sealed from
 * ({@link snapshotOf} makes from them the snapshot a read of the bytes decodes to; a property test
 * holds them equal): the saver keeps them for the next read of the checkpoint it just wrote, which
 * then neither reassembles nor parses nor hashes the document again. The metadata is kept as the
 * canonical text sealed, not as the caller's object (it may change, and it may be large).
 */
export function sealCheckpointDocument(
  header: CheckpointHeader,
  payload: LangGraphPayload,
  known: KnownText = {},
): SealedCheckpoint | Promise<SealedCheckpoint> {
  const channels = channelValuesText(payload.channel_values, known.texts);
  const metadata = known.metadata ?? canonicalJson(payload.metadata);
  const before = channels.pieces;
  before[before.length - 1] +=
    `,"checkpoint":${valueText(payload.checkpoint)},` +
    `"checkpoint_ns":${quote(payload.checkpoint_ns)},"created_at":"${header.createdAt}",`;
  const after =
    `,"metadata":${metadata}` +
    (payload.metadata_blob !== undefined ? `,"metadata_blob":${valueText(payload.metadata_blob)}` : '') +
    (payload.parent_checkpoint_id !== undefined ? `,"parent_checkpoint_id":${quote(payload.parent_checkpoint_id)}` : '') +
    // The header's strings need no escaping (see CheckpointHeader): no JSON.stringify call each.
    `,"run_id":"${header.runId}","sequence":${header.sequence},"snapshot_id":"${header.id}","source":"${header.source}"` +
    `,"source_details":[],"status":"in_progress","thread_id":${quote(payload.thread_id)}}`;
  const metadataColumn = metadataColumnOf(before, after, metadata, payload.metadata_blob !== undefined, known.metadataColumnBelow ?? 0);
  const sealed = sealTextAroundIntegrity(before, after, known.scratch);
  // No closure for the synchronous case: a put seals once a superstep, cache-cold.
  return sealed instanceof Promise
    ? sealed.then((s) => sealedCheckpoint(s, header, payload, channels.sorted, metadata, metadataColumn))
    : sealedCheckpoint(sealed, header, payload, channels.sorted, metadata, metadataColumn);
}

/** The payload's members a snapshot takes as they are: not the metadata (kept as text) nor the channels (kept as stored). */
type KeptPayload = Pick<LangGraphPayload, 'thread_id' | 'checkpoint_ns' | 'checkpoint' | 'parent_checkpoint_id' | 'metadata_blob'>;

/** The members a sealed checkpoint document was made of, as {@link snapshotOf} needs them. */
export interface SealedMembers {
  readonly header: CheckpointHeader;
  readonly payload: KeptPayload;
  /** The stored channels in the document's order. */
  readonly channels: Record<string, StoredChannel>;
  /** Canonical text of the metadata (parsed only when the snapshot is made: the caller's object may change). */
  readonly metadataText: string;
  readonly checksum: string;
}

function sealedCheckpoint(
  sealed: SealedText,
  header: CheckpointHeader,
  payload: LangGraphPayload,
  channels: Record<string, StoredChannel>,
  metadataText: string,
  metadataColumn: string | null | undefined,
): SealedCheckpoint {
  const { thread_id, checkpoint_ns, checkpoint, parent_checkpoint_id, metadata_blob } = payload;
  const kept: KeptPayload = { thread_id, checkpoint_ns, checkpoint, parent_checkpoint_id, metadata_blob };
  return { bytes: sealed.bytes, members: { header, payload: kept, channels, metadataText, checksum: sealed.checksum }, metadataColumn };
}

/**
 * The snapshot `langGraphProfile.document.decode` makes of the document sealed from `members`
 * (a property test holds them equal). Made on demand: most checkpoints a saver writes are never
 * read back by it, and making one costs a parse of the metadata and a few objects.
 */
export function snapshotOf(members: SealedMembers): Snapshot<LangGraphPayload> {
  const { header, payload, channels, checksum } = members;
  const metadata = parseJson(members.metadataText, 'metadata') as JsonObject;
  const read: LangGraphPayload = {
    thread_id: payload.thread_id,
    checkpoint_ns: payload.checkpoint_ns,
    checkpoint: payload.checkpoint,
    channel_values: channels,
    metadata,
  };
  if (payload.parent_checkpoint_id !== undefined) read.parent_checkpoint_id = payload.parent_checkpoint_id;
  if (payload.metadata_blob !== undefined) read.metadata_blob = payload.metadata_blob;
  return {
    id: header.id,
    runId: header.runId,
    sequence: header.sequence,
    createdAt: header.createdAt,
    source: header.source,
    sourceDetails: [],
    status: 'in_progress',
    payload: read,
    metadata,
    integrity: { format_version: FORMAT_VERSION, algorithm: 'sha256', checksum },
  };
}
