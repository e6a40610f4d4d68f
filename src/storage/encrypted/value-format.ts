import { NONCE_BYTES, TAG_BYTES } from './primitives.js';

/**
 * The stored form of one encrypted value, in one of two formats of the same size:
 *
 * ```
 * magic "spe" (3 bytes) · format (1 byte) · key field (8 bytes) · nonce (12 bytes) · ciphertext · GCM tag (16 bytes)
 * ```
 *
 * - Format 1, a value sealed for one storage key: the key field is the data key id, and the
 *   associated data is the header and the storage key.
 * - Format 2, a shared value: one sealing stored, byte for byte, under the two keys a batch puts
 *   the same bytes to (a checkpoint's history file and `latest`). The key field is the XOR of
 *   the two keys' name tags (see `name-tag.ts`), and the associated data is the header and both
 *   name tags in order: it opens under either key, under no third one.
 *
 * The first 24 bytes are the header. AES-256-GCM authenticates the header and the storage
 * key(s) (the associated data), so a changed header byte, a changed ciphertext byte, or a value
 * moved under another key all fail to open. Both formats add the same bytes, so a listing
 * tells a value's plaintext size from its stored size without reading it.
 */

/** Format 1: a value sealed for one storage key. */
export const SINGLE_KEY_FORMAT = 1;
/** Format 2: one sealing stored under two storage keys. */
export const SHARED_FORMAT = 2;
/** Bytes of a data key id. */
export const DATA_KEY_ID_BYTES = 8;
/** Bytes of a storage key's name tag, and of the key field of a shared value. */
export const NAME_TAG_BYTES = DATA_KEY_ID_BYTES;
const MAGIC = [0x73, 0x70, 0x65] as const; // "spe"
/** Where the key field starts in a header. */
export const FIELD_START = MAGIC.length + 1;
/** Bytes of the header. */
export const HEADER_BYTES = FIELD_START + DATA_KEY_ID_BYTES + NONCE_BYTES;
/** What encryption adds to every value, in bytes (either format). */
export const VALUE_OVERHEAD_BYTES = HEADER_BYTES + TAG_BYTES;

/** A parsed header. */
export type ValueHeader =
  | {
      readonly version: typeof SINGLE_KEY_FORMAT;
      /** The data key id as lower-case hex. */
      readonly dataKeyId: string;
      readonly nonce: Uint8Array;
    }
  | {
      readonly version: typeof SHARED_FORMAT;
      /** The XOR of the two storage keys' name tags. */
      readonly pairTag: Uint8Array;
      readonly nonce: Uint8Array;
    };

/** Why a stored value is not in the encrypted format. */
export type MalformedValue = 'too-short' | 'not-encrypted' | 'unknown-version';

/** Where the nonce starts in a header. */
export const NONCE_AT = FIELD_START + DATA_KEY_ID_BYTES;

/** Writes a header of `format` with its 8-byte key field (data key id or pair tag) and `nonce` into the first bytes of `out`. */
export function writeHeader(
  out: Uint8Array,
  format: typeof SINGLE_KEY_FORMAT | typeof SHARED_FORMAT,
  field: Uint8Array,
  nonce: Uint8Array,
): void {
  writeMagic(out, format);
  out.set(field, FIELD_START);
  out.set(nonce, NONCE_AT);
}

/** Writes the magic and `format`, the first 4 bytes of a header, into `out` (the caller writes the key field and nonce). */
export function writeMagic(out: Uint8Array, format: typeof SINGLE_KEY_FORMAT | typeof SHARED_FORMAT): void {
  out[0] = MAGIC[0];
  out[1] = MAGIC[1];
  out[2] = MAGIC[2];
  out[MAGIC.length] = format;
}

/** Reads the header of a stored value, or says why it has none. */
export function readHeader(stored: Uint8Array): ValueHeader | MalformedValue {
  if (stored.length < MAGIC.length + 1) return 'too-short';
  if (stored[0] !== MAGIC[0] || stored[1] !== MAGIC[1] || stored[2] !== MAGIC[2]) return 'not-encrypted';
  const version = stored[MAGIC.length];
  if (version !== SINGLE_KEY_FORMAT && version !== SHARED_FORMAT) return 'unknown-version';
  if (stored.length < VALUE_OVERHEAD_BYTES) return 'too-short';
  const field = stored.subarray(FIELD_START, FIELD_START + DATA_KEY_ID_BYTES);
  const nonce = stored.subarray(FIELD_START + DATA_KEY_ID_BYTES, HEADER_BYTES);
  return version === SINGLE_KEY_FORMAT ? { version, dataKeyId: hex(field), nonce } : { version, pairTag: field, nonce };
}

const encoder = new TextEncoder();

/** The associated data of a format 1 value: its header and its storage key, so a value opens only under the key it was written to. */
export function associatedData(header: Uint8Array, key: string): Uint8Array {
  // Room for the key's UTF-8 (at most 3 bytes per UTF-16 unit), written in place: one allocation, no copy.
  const out = new Uint8Array(header.length + key.length * 3);
  out.set(header, 0);
  const { written } = encoder.encodeInto(key, out.subarray(header.length));
  return out.subarray(0, header.length + written);
}

/**
 * The associated data of a shared value read under a key whose name tag is `tag`: the header,
 * then the two name tags in byte order (`tag` and the partner's, `tag` XOR the pair tag). The
 * same bytes under either of the two keys it was sealed for; under any other key, other bytes.
 */
export function sharedAssociatedData(header: Uint8Array, tag: Uint8Array, pairTag: Uint8Array): Uint8Array {
  const out = new Uint8Array(header.length + 2 * NAME_TAG_BYTES);
  out.set(header, 0);
  // The partner's tag byte by byte: the first byte that differs says which tag comes first.
  let order = 0;
  for (let i = 0; i < NAME_TAG_BYTES && order === 0; i++) order = tag[i]! - (tag[i]! ^ pairTag[i]!);
  const [ownAt, partnerAt] = order <= 0 ? [header.length, header.length + NAME_TAG_BYTES] : [header.length + NAME_TAG_BYTES, header.length];
  for (let i = 0; i < NAME_TAG_BYTES; i++) {
    out[ownAt + i] = tag[i]!;
    out[partnerAt + i] = tag[i]! ^ pairTag[i]!;
  }
  return out;
}

function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}
