import { canonicalJson } from '../codec/canonical-json.js';
import { sha256Hex, sha256HexSync } from '../codec/sha256.js';
import { utf8Encode, utf8EncodeInto } from '../codec/utf8.js';
import { FORMAT_VERSION } from '../model/snapshot-constants.js';
import type { LangGraphPayload, StoredChannel } from './profile.js';
import { channelText, valueText } from './serialized.js';

const quote = JSON.stringify;
/** The integrity member up to where the checksum goes, and from after it: how `sealMembers` lays out every sealed document. */
const SEAL_OPEN = '"integrity":{"algorithm":"sha256",';
const SEAL_CLOSE = `"format_version":${quote(FORMAT_VERSION)}}`;

/** Length of `"checksum":"<64 hex>",` (ASCII). */
const CHECKSUM_SPAN = '"checksum":"'.length + 64 + '",'.length;

/**
 * The stored bytes of a canonical document given as its text before the `integrity` member
 * (`{…,`) and after it (`,…}`), members in code-unit order: the text without
 * `"checksum":"…",` (what `documentChecksum` covers) is encoded once and hashed as bytes,
 * then copied around the checksum member into the stored bytes. The same bytes as
 * `sealMembers` makes of the same members (property tests hold them equal), without its
 * general layout work. Synchronous where the runtime hashes synchronously (Node): no promise
 * on a put's path.
 */
export function sealCanonical(before: string, after: string): Uint8Array | Promise<Uint8Array> {
  const head = before + SEAL_OPEN;
  const unsealed = utf8Encode(head + SEAL_CLOSE + after);
  // JSON text is ASCII nearly always: then characters are bytes.
  const at = unsealed.length === head.length + SEAL_CLOSE.length + after.length ? head.length : utf8Encode(head).length;
  const checksum = sha256HexSync(unsealed);
  return checksum !== undefined ? withChecksum(unsealed, at, checksum) : sha256Hex(unsealed).then((hex) => withChecksum(unsealed, at, hex));
}

/** `unsealed` with `"checksum":"<checksum>",` inserted at byte `at`. */
function withChecksum(unsealed: Uint8Array, at: number, checksum: string): Uint8Array {
  const bytes = new Uint8Array(unsealed.length + CHECKSUM_SPAN);
  bytes.set(unsealed.subarray(0, at));
  utf8EncodeInto(`"checksum":"${checksum}",`, bytes.subarray(at));
  bytes.set(unsealed.subarray(at), at + CHECKSUM_SPAN);
  return bytes;
}

/** The snapshot header of a checkpoint document (what `SnapshotDraft` holds besides the payload). */
export interface CheckpointHeader {
  readonly id: string;
  readonly runId: string;
  readonly sequence: number;
  readonly createdAt: string;
  readonly source: string;
}

/** Canonical text of each stored channel, by name, where the saver has it already (a channel carried from the parent). */
export type ChannelTexts = Readonly<Record<string, string>>;

/** Canonical JSON of `channel_values`: names in code-unit order, each channel's known text or its text now. */
function channelValuesText(channels: Readonly<Record<string, StoredChannel>>, texts: ChannelTexts | undefined): string {
  const names = Object.keys(channels).sort();
  let text = '{';
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!;
    text += `${i > 0 ? ',' : ''}${quote(name)}:${texts?.[name] ?? channelText(channels[name]!)}`;
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
export function encodeCheckpointDocument(header: CheckpointHeader, payload: LangGraphPayload, texts?: ChannelTexts): Uint8Array | Promise<Uint8Array> {
  const before =
    `{"channel_values":${channelValuesText(payload.channel_values, texts)},"checkpoint":${valueText(payload.checkpoint)},` +
    `"checkpoint_ns":${quote(payload.checkpoint_ns)},"created_at":${quote(header.createdAt)},`;
  const after =
    `,"metadata":${canonicalJson(payload.metadata)}` +
    (payload.metadata_blob !== undefined ? `,"metadata_blob":${valueText(payload.metadata_blob)}` : '') +
    (payload.parent_checkpoint_id !== undefined ? `,"parent_checkpoint_id":${quote(payload.parent_checkpoint_id)}` : '') +
    `,"run_id":${quote(header.runId)},"sequence":${quote(header.sequence)},"snapshot_id":${quote(header.id)},"source":${quote(header.source)}` +
    `,"source_details":[],"status":"in_progress","thread_id":${quote(payload.thread_id)}}`;
  return sealCanonical(before, after);
}
