import { parseJson } from '../codec/canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { canonicalJsonBytes } from '../codec/json-pieces.js';
import { payloadSealerOf, payloadTextSyncEncoderOf } from '../codec/json-document.js';
import { splitDocument } from '../codec/parts.js';
import { type PartFile } from '../contract/split.js';
import { splitCanonicalText } from '../codec/split-text.js';
import { handOver } from '../storage/handed-over.js';
import { utf8Decode } from '../codec/utf8.js';
import { CheckpointError } from '../contract/errors.js';
import type { Integrity, Snapshot, SnapshotDraft } from '../contract/snapshot.js';
import type { Profile } from '../contract/profile.js';

/** What a released buffer is set to. */
const EMPTY = new Uint8Array(0);

/** A snapshot without its payload: what the writer keeps of one besides the payload's text. */
export type SnapshotHeader<P> = Omit<SnapshotDraft<P>, 'payload'>;

/** A snapshot ready to store: its main document and the part files it references. */
export interface StorableSnapshot<P> {
  /** Bytes of the main document (part references in place of moved values, if split). */
  readonly bytes: Uint8Array;
  /** The snapshot handed to the caller (a fresh object; the writer never reads it back). */
  readonly snapshot: Snapshot<P>;
  /** Part files, written create-only before the document that references them. */
  readonly parts: readonly PartFile[];
  /** When split: the size of the whole document, over the limit (what the `split` warning reports). */
  readonly splitFrom?: number;
}

/** The size policy applied by {@link encodeForStorage}. */
export interface SizePolicy {
  readonly maxBytes: number;
  readonly onOversize: 'split' | 'reject';
  /** Part key of part `n`; absent when the layout has no part files. */
  readonly partKey?: (n: number) => string;
}

/**
 * The snapshot object a checkpoint result carries. Its `payload` is parsed from the stored
 * text on first access (most callers never read it back), so handing it out costs nothing,
 * and the object belongs to the caller: mutating it cannot change what the writer stores.
 */
export function snapshotFromText<P>(header: SnapshotHeader<P>, integrity: Integrity, payloadText: string): Snapshot<P> {
  const sourceDetails = header.sourceDetails.length === 0 ? [] : header.sourceDetails.map((r) => ({ ...r }));
  // The usual header, written out member by member with the payload's accessors in the same
  // literal: a spread and a defineProperty cost five times as much, once per checkpoint.
  if (Object.keys(header).length === PLAIN_HEADER_MEMBERS && header.priority === undefined && header.metadata === undefined) {
    return {
      id: header.id,
      runId: header.runId,
      sequence: header.sequence,
      createdAt: header.createdAt,
      source: header.source,
      sourceDetails,
      status: header.status,
      integrity,
      get payload(): P {
        return settlePayload(this, parseJson(payloadText, 'payload') as P);
      },
      set payload(value: P) {
        settlePayload(this, value);
      },
    };
  }
  const snapshot = { ...header, sourceDetails, integrity } as Snapshot<P>;
  Object.defineProperty(snapshot, 'payload', {
    enumerable: true,
    configurable: true,
    get: () => settlePayload(snapshot, parseJson(payloadText, 'payload') as P),
    set: (value: P) => settlePayload(snapshot, value),
  });
  return snapshot;
}

/** Members of a header without `priority` and `metadata`: id, runId, sequence, createdAt, source, sourceDetails, status. */
const PLAIN_HEADER_MEMBERS = 7;

/** Replaces the lazy `payload` accessor with a plain data member holding `value`. */
function settlePayload<P>(snapshot: object, value: P): P {
  Object.defineProperty(snapshot, 'payload', { value, writable: true, enumerable: true, configurable: true });
  return value;
}

function tooLarge(profile: { readonly name: string }, sequence: number, bytes: number, limit: number, why: string): CheckpointError {
  return new CheckpointError(
    'checkpoint_too_large',
    `snapshot ${sequence} is ${bytes} bytes, over the ${limit}-byte limit, and profile "${profile.name}" ${why}`,
    {
      details: { sequence, bytes, limit },
    },
  );
}

/**
 * Refuses, before any encoding, a payload whose canonical text alone is over the limit
 * when the snapshot could not be split anyway (`checkpoint_too_large`). `payloadText.length`
 * is a lower bound of its UTF-8 size, so nothing storable is refused.
 */
export function assertPayloadFits<P>(profile: Profile<P>, payloadText: string, policy: SizePolicy, sequence = 0): void {
  if (payloadText.length <= policy.maxBytes) return;
  if (policy.onOversize === 'reject') throw tooLarge(profile, sequence, payloadText.length, policy.maxBytes, 'rejects oversized snapshots');
  if (!policy.partKey || profile.document.extension !== '.json')
    throw tooLarge(profile, sequence, payloadText.length, policy.maxBytes, 'cannot split its documents');
}

/** The parts of a snapshot that has none (shared: nobody changes it). */
const NO_PARTS: readonly PartFile[] = Object.freeze([]);

/**
 * {@link encodeForStorage} without a promise, for the usual checkpoint: a format that seals
 * synchronously (`encodePayloadTextSync`) and a document within the size limit. Undefined
 * for anything else — a format without that method, an asynchronous runtime, a document
 * that must be split or refused — and the caller awaits `encodeForStorage`, which decides.
 * Same bytes and same errors as `encodeForStorage` (a test compares the two over random
 * headers and payloads).
 */
export function encodeForStorageSync<P>(
  profile: Profile<P>,
  header: SnapshotHeader<P>,
  payloadText: string,
  policy: SizePolicy,
  payloadPieces?: readonly string[],
): StorableSnapshot<P> | undefined {
  const encodeSync = payloadText.length > policy.maxBytes ? undefined : payloadTextSyncEncoderOf(profile.document);
  if (!encodeSync) return undefined;
  const sealed = encodeSync(header, payloadText, payloadPieces);
  if (sealed === undefined || sealed.bytes.length > policy.maxBytes) return undefined;
  // As in encodeForStorage: bytes the format's own encoder made for the writer alone may be kept by the store without a copy.
  return {
    bytes: payloadSealerOf(profile.document) ? handOver(sealed.bytes) : sealed.bytes,
    snapshot: snapshotFromText(header, sealed.integrity, payloadText),
    parts: NO_PARTS,
  };
}

/**
 * Encodes a snapshot through the profile and applies the size limit (phased-workflow-github.md
 * `size_management`: 10 MB; "split large arrays into separate files, store references in
 * main checkpoint"). The payload comes as its canonical text: a profile whose format stores
 * it unchanged (`encodePayloadText`) places that text in the document as is; others get a
 * private parsed copy. Over the limit, a JSON document is split with the profile's
 * `splitDocument` (phasedWorkflow moves `phase_outputs` first; others the largest values
 * first) when the profile allows it and its layout has part keys; otherwise
 * `checkpoint_too_large`. The checksum covers the reassembled document, so readers
 * (`decodeStoredSnapshot`) see exactly what was written.
 */
export async function encodeForStorage<P>(
  profile: Profile<P>,
  header: SnapshotHeader<P>,
  payloadText: string,
  policy: SizePolicy,
  payloadPieces?: readonly string[],
): Promise<StorableSnapshot<P>> {
  assertPayloadFits(profile, payloadText, policy, header.sequence);
  // Over the limit for certain (its UTF-8 is at least as long as the text), and allowed to split
  // (assertPayloadFits): sized, sealed and split without the whole document ever being encoded.
  const seal = payloadSealerOf(profile.document);
  if (payloadText.length > policy.maxBytes && seal) return splitSealed(profile, seal, header, payloadText, policy, payloadPieces);
  let bytes: Uint8Array;
  let integrity: Integrity;
  if (profile.document.encodePayloadText)
    ({ bytes, integrity } = await profile.document.encodePayloadText(header, payloadText, payloadPieces));
  else
    ({
      bytes,
      snapshot: { integrity },
    } = await profile.document.encode({ ...header, payload: parseJson(payloadText, 'payload') as P }));
  // The format's own encoding (it has a sealer) made these bytes for the writer alone: a store may keep them without a copy.
  if (bytes.length <= policy.maxBytes)
    return { bytes: seal ? handOver(bytes) : bytes, snapshot: snapshotFromText(header, integrity, payloadText), parts: [] };
  if (policy.onOversize === 'reject')
    throw tooLarge(profile, header.sequence, bytes.length, policy.maxBytes, 'rejects oversized snapshots');
  if (!policy.partKey || profile.document.extension !== '.json')
    throw tooLarge(profile, header.sequence, bytes.length, policy.maxBytes, 'cannot split its documents');
  const splitFrom = bytes.length;
  if (seal) {
    // The bytes go before the split: the parts are built from the payload's text instead.
    // eslint-disable-next-line no-useless-assignment -- an async function's locals live across its awaits: this lets the buffer go
    bytes = EMPTY;
    return splitSealed(profile, seal, header, payloadText, policy, payloadPieces);
  }
  // A format without a payload sealer: its document is read back from the bytes, to be split.
  const document = parseJson(utf8Decode(bytes), `snapshot ${header.sequence}`) as JsonObject;
  // eslint-disable-next-line no-useless-assignment -- as above
  bytes = EMPTY;
  const { main, parts } = await profile.splitDocument(document, policy.maxBytes, policy.partKey, { owned: true });
  return { bytes: canonicalJsonBytes(main), snapshot: snapshotFromText(header, integrity, payloadText), parts, splitFrom };
}

/**
 * Splits a snapshot over the limit from its payload's text: the format seals the document
 * without encoding it (`payloadSealerOf`: checksum and size from the text's pieces, big strings
 * shared). The core splitter then works on that canonical text itself (`splitCanonicalText`:
 * no object of the payload is built, each part is encoded straight from spans of the text); a
 * profile's own splitter gets the document parsed. Only the main document, within the limit,
 * is encoded as a whole: at no point are the whole document's bytes held beside the parts
 * (peak memory of a large payload).
 */
async function splitSealed<P>(
  profile: Profile<P>,
  seal: NonNullable<ReturnType<typeof payloadSealerOf<P>>>,
  header: SnapshotHeader<P>,
  payloadText: string,
  policy: SizePolicy,
  payloadPieces?: readonly string[],
): Promise<StorableSnapshot<P>> {
  const sealed = await seal(header, payloadText, payloadPieces);
  const snapshot = snapshotFromText(header, sealed.integrity, payloadText);
  if (profile.splitDocument === splitDocument) {
    const { main, parts } = await splitCanonicalText(sealed.text, policy.maxBytes, policy.partKey!);
    // The parts and the main document are the writer's alone and never change: a store may keep them without a copy.
    for (const part of parts) handOver(part.data);
    return { bytes: handOver(main), snapshot, parts, splitFrom: sealed.bytes };
  }
  const { main, parts } = await profile.splitDocument(sealed.document(), policy.maxBytes, policy.partKey!, { owned: true });
  return { bytes: handOver(canonicalJsonBytes(main)), snapshot, parts, splitFrom: sealed.bytes };
}
