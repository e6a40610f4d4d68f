import { parseJson } from '../codec/canonical-json.js';
import { canonicalJsonBytes } from '../codec/json-pieces.js';
import { assertBytesArgument, assertProfileArgument, assertStorageArgument, assertStringArgument } from '../contract/arguments.js';
import { gunzip, isGzip } from '../codec/gzip.js';
import { PART_MARKER, PARTS_MARKER, resolveParts } from '../codec/parts.js';
import { resolvePartsOfText } from '../codec/resolve-text.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { decodeTolerant, parsedDecoderOf, verifyStoredBytes } from '../codec/json-document.js';
import { type ForeignRead } from '../contract/document-format.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { Profile } from '../contract/profile.js';
import { documentReadLimit, getBounded } from './bounded-read.js';
import { looksChunked } from '../codec/chunking.js';
import { resolveChunked } from './chunk-store.js';

/**
 * Decodes the stored bytes of a snapshot document: gunzips `.gz` content, resolves part
 * references of oversized snapshots (loading and checksum-checking each part), then
 * validates and verifies through the profile's document format — strictly first, then
 * tolerantly when the format reads foreign documents (see {@link decodeStoredSnapshotTolerant}).
 * This is the one read path every component (resume, retention, CLI) uses, so every read is validated.
 */
export async function decodeStoredSnapshot<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  key: string,
  stored: Uint8Array,
): Promise<Snapshot<P>> {
  assertStorageArgument(storage, 'decodeStoredSnapshot');
  assertProfileArgument(profile, 'decodeStoredSnapshot');
  assertStringArgument(key, 'decodeStoredSnapshot', 'key');
  assertBytesArgument(stored, 'decodeStoredSnapshot', 'stored');
  return (await decodeStored(storage, profile, key, stored)).snapshot;
}

/**
 * {@link decodeStoredSnapshot}, with the warnings of a tolerant read: a document another tool
 * wrote (`checkpoint_unsealed`, `checkpoint_foreign_seal`) or, in a single-artifact format, a
 * sealed document edited since (`checkpoint_integrity_mismatch`). `warnings` is empty for a
 * document savepoint sealed and nobody changed.
 */
export async function decodeStoredSnapshotTolerant<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  key: string,
  stored: Uint8Array,
): Promise<ForeignRead<P>> {
  assertStorageArgument(storage, 'decodeStoredSnapshotTolerant');
  assertProfileArgument(profile, 'decodeStoredSnapshotTolerant');
  assertStringArgument(key, 'decodeStoredSnapshotTolerant', 'key');
  assertBytesArgument(stored, 'decodeStoredSnapshotTolerant', 'stored');
  return decodeStored(storage, profile, key, stored);
}

/**
 * The top-level members of a sealed JSON document stored whole (not gzipped, chunked or split
 * into parts) whose seal verifies, parsed without the profile's validation: for a caller that
 * needs a member or two of a document it will not hand on (a saver learning the sequence of a
 * checkpoint it is about to delete). Undefined for anything else, which such a caller decodes
 * with {@link decodeStoredSnapshot}.
 */
export async function sealedDocumentMembers(stored: Uint8Array): Promise<Readonly<Record<string, unknown>> | undefined> {
  if (isGzip(stored) || looksChunked(stored) || includesBytes(stored, MARKER_PREFIX, 1)) return undefined;
  let text: string;
  let doc: unknown;
  try {
    text = utf8Decode(stored, 'document');
    doc = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return undefined;
  const checksum = (doc as { integrity?: { checksum?: unknown } }).integrity?.checksum;
  return (await verifyStoredBytes(stored, text, checksum)) ? (doc as Readonly<Record<string, unknown>>) : undefined;
}

/** What both part markers start with, quoted as a JSON key or value would be. */
const MARKER_PREFIX = utf8Encode(`"${PART_MARKER}`);

/**
 * Whether `needle` occurs in `haystack`, looked for by its byte at `anchor`: anchored on a
 * byte that is rare in the haystack, the scan stays inside `indexOf` (native) instead of
 * stepping through every occurrence of a common one in JavaScript — for the part marker,
 * its `$` rather than its opening quote, of which a JSON document holds dozens.
 */
export function includesBytes(haystack: Uint8Array, needle: Uint8Array, anchor: number): boolean {
  const key = needle[anchor]!;
  const last = haystack.length - needle.length + anchor;
  for (let at = haystack.indexOf(key, anchor); at >= 0 && at <= last; at = haystack.indexOf(key, at + 1)) {
    const start = at - anchor;
    let i = 0;
    while (i < needle.length && haystack[start + i] === needle[i]) i++;
    if (i === needle.length) return true;
  }
  return false;
}

async function decodeStored<P>(storage: StorageAdapter, profile: Profile<P>, key: string, stored: Uint8Array): Promise<ForeignRead<P>> {
  // Bounded by the profile's limit while inflating: a small planted .gz must not cost gigabytes.
  const unzipped = isGzip(stored) ? gunzip(stored, key, { maxBytes: profile.maxSnapshotBytes }) : stored;
  // A document stored as content chunks is reassembled first; its seal is then checked as any document's.
  const bytes = looksChunked(unzipped) ? ((await resolveChunked(storage, key, unzipped)) ?? unzipped) : unzipped;
  // Only JSON documents can be split into parts; a Markdown document may mention the marker in its text.
  if (profile.document.extension !== '.json') return decodeTolerant(profile.document, bytes, key);
  // Looked for in the bytes: decoding the text here too would decode every read twice.
  if (!includesBytes(bytes, MARKER_PREFIX, 1)) return decodeTolerant(profile.document, bytes, key);
  const text = utf8Decode(bytes, key);
  if (!text.includes(`"${PART_MARKER}"`) && !text.includes(`"${PARTS_MARKER}"`)) return decodeTolerant(profile.document, bytes, key);
  const decodeParsed = parsedDecoderOf(profile.document);
  // A JSON document format's own split snapshot, as savepoint stores it: the checksum is verified
  // over the reassembled text as the parts stream past, each part parsed once.
  const main = parseJson(text, key);
  const checksum = (main as { integrity?: { checksum?: unknown } } | null)?.integrity?.checksum;
  const verified =
    decodeParsed && typeof checksum === 'string'
      ? await resolvePartsOfText(
          text,
          main,
          checksum,
          async (partKey) => (await getBounded(storage, partKey, documentReadLimit(profile)))?.bytes,
        )
      : undefined;
  const resolved =
    verified ??
    (await resolveParts(
      verified === undefined && decodeParsed && typeof checksum === 'string' ? parseJson(text, key) : main,
      async (partKey) => {
        const part = await getBounded(storage, partKey, documentReadLimit(profile));
        return part ? { bytes: part.bytes, value: () => parseJson(utf8Decode(part.bytes, partKey), partKey) } : undefined;
      },
    ));
  // The reassembled document is decoded as it is, not encoded and parsed again: the same schema
  // and checksum checks without two more copies of a large snapshot.
  if (decodeParsed && typeof resolved === 'object' && resolved !== null && !Array.isArray(resolved)) {
    try {
      return { snapshot: await decodeParsed(resolved, key, verified !== undefined), warnings: [] };
    } catch (err) {
      if (!profile.document.decodeForeign) throw err; // else the tolerant read decides, from the bytes
    }
  }
  return decodeTolerant(profile.document, canonicalJsonBytes(resolved), key);
}

/**
 * Reads and decodes the snapshot stored under `key`; `undefined` when there is no such key. A
 * file over the profile's limit is refused unread (`checkpoint_too_large`, see {@link documentReadLimit}).
 */
export async function readSnapshot<P>(storage: StorageAdapter, profile: Profile<P>, key: string): Promise<Snapshot<P> | undefined> {
  assertStorageArgument(storage, 'readSnapshot');
  assertProfileArgument(profile, 'readSnapshot');
  assertStringArgument(key, 'readSnapshot', 'key');
  const stored = await getBounded(storage, key, documentReadLimit(profile));
  return stored ? decodeStoredSnapshot(storage, profile, key, stored.bytes) : undefined;
}
