import { NONCE_BYTES, TAG_BYTES } from './primitives.js';

/**
 * The stored form of one encrypted value:
 *
 * ```
 * magic "spe" (3 bytes) · format version (1 byte) · data key id (8 bytes) · nonce (12 bytes) · ciphertext · GCM tag (16 bytes)
 * ```
 *
 * The first 24 bytes are the header. AES-256-GCM authenticates the header and the value's
 * storage key (the associated data, see {@link associatedData}), so a changed header byte, a
 * changed ciphertext byte, or a value moved under another key all fail to open.
 */

/** The format version this code writes and reads. */
export const VALUE_FORMAT_VERSION = 1;
/** Bytes of a data key id. */
export const DATA_KEY_ID_BYTES = 8;
const MAGIC = [0x73, 0x70, 0x65] as const; // "spe"
/** Bytes of the header. */
export const HEADER_BYTES = MAGIC.length + 1 + DATA_KEY_ID_BYTES + NONCE_BYTES;
/** What encryption adds to every value, in bytes. */
export const VALUE_OVERHEAD_BYTES = HEADER_BYTES + TAG_BYTES;

/** A parsed header. */
export interface ValueHeader {
  readonly version: number;
  /** The data key id as lower-case hex. */
  readonly dataKeyId: string;
  readonly nonce: Uint8Array;
}

/** Why a stored value is not in the encrypted format. */
export type MalformedValue = 'too-short' | 'not-encrypted' | 'unknown-version';

/** Writes a header for `dataKeyId` (raw bytes) and `nonce` into the first bytes of `out`. */
export function writeHeader(out: Uint8Array, dataKeyId: Uint8Array, nonce: Uint8Array): void {
  out.set(MAGIC, 0);
  out[MAGIC.length] = VALUE_FORMAT_VERSION;
  out.set(dataKeyId, MAGIC.length + 1);
  out.set(nonce, MAGIC.length + 1 + DATA_KEY_ID_BYTES);
}

/** Reads the header of a stored value, or says why it has none. */
export function readHeader(stored: Uint8Array): ValueHeader | MalformedValue {
  if (stored.length < MAGIC.length + 1) return 'too-short';
  if (stored[0] !== MAGIC[0] || stored[1] !== MAGIC[1] || stored[2] !== MAGIC[2]) return 'not-encrypted';
  if (stored[MAGIC.length] !== VALUE_FORMAT_VERSION) return 'unknown-version';
  if (stored.length < VALUE_OVERHEAD_BYTES) return 'too-short';
  const idStart = MAGIC.length + 1;
  return {
    version: VALUE_FORMAT_VERSION,
    dataKeyId: hex(stored.subarray(idStart, idStart + DATA_KEY_ID_BYTES)),
    nonce: stored.subarray(idStart + DATA_KEY_ID_BYTES, HEADER_BYTES),
  };
}

const encoder = new TextEncoder();

/** The associated data of a value: its header and its storage key, so a value opens only under the key it was written to. */
export function associatedData(header: Uint8Array, key: string): Uint8Array {
  const name = encoder.encode(key);
  const out = new Uint8Array(header.length + name.length);
  out.set(header, 0);
  out.set(name, header.length);
  return out;
}

function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}
