import { CheckpointError } from '../contract/errors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** UTF-8 bytes of `text`. */
export function utf8Encode(text: string): Uint8Array {
  // encodeInto a buffer of the right size, not encode(): Node 20's encode() costs ~20× more
  // (1 KB: 3.7 µs against 0.2 µs). ASCII text (the usual JSON) fits in text.length bytes.
  if (typeof text !== 'string') return encoder.encode(text); // what encode() makes of a non-string
  const bytes = new Uint8Array(text.length);
  if (encoder.encodeInto(text, bytes).read === text.length) return bytes;
  const wide = new Uint8Array(text.length * 3);
  return wide.slice(0, encoder.encodeInto(text, wide).written);
}

/** Encodes `text` into the start of `into` as far as it fits: UTF-16 units read, bytes written. */
export function utf8EncodeInto(text: string, into: Uint8Array): { read: number; written: number } {
  return encoder.encodeInto(text, into);
}

/** Decodes UTF-8, refusing malformed bytes with `checkpoint_schema_invalid` instead of inserting U+FFFD. */
export function utf8Decode(bytes: Uint8Array, where = 'document'): string {
  try {
    return decoder.decode(bytes);
  } catch (err) {
    throw new CheckpointError('checkpoint_schema_invalid', `${where} is not valid UTF-8`, { cause: err });
  }
}

/** UTF-16 units encoded per step by {@link utf8Chunks}: its scratch buffer is three times this. */
const CHUNK_UNITS = 16384;
let scratch: Uint8Array | undefined;

/**
 * The UTF-8 of the concatenation of `pieces`, handed to `sink` a chunk at a time in one reused
 * scratch buffer (the sink must use a chunk before it returns), and its total length: a
 * large text is hashed and measured without its bytes ever existing whole (a split
 * checkpoint is sized and sealed before any part is encoded). A chunk never ends between the
 * two halves of a surrogate pair, so the bytes are those `utf8Encode` makes of the whole.
 */
export function utf8Chunks(pieces: readonly string[], sink?: (chunk: Uint8Array) => void): number {
  const buffer = (scratch ??= new Uint8Array(CHUNK_UNITS * 3));
  let total = 0;
  for (const piece of pieces) {
    for (let at = 0; at < piece.length;) {
      let end = Math.min(piece.length, at + CHUNK_UNITS);
      const last = piece.charCodeAt(end - 1);
      if (end < piece.length && last >= 0xd800 && last <= 0xdbff) end--;
      // A slice of a flat string is a view in V8, not a copy.
      const { written } = encoder.encodeInto(at === 0 && end === piece.length ? piece : piece.slice(at, end), buffer);
      total += written;
      sink?.(buffer.subarray(0, written));
      at = end;
    }
  }
  return total;
}

/** UTF-8 length of `text`, without building its bytes. */
export function utf8Length(text: string): number {
  return utf8Chunks([text]);
}

/**
 * UTF-8 of the concatenation of `pieces` in one buffer of exactly its length: the text is never
 * joined into one string first (big strings stay the caller's, see `canonicalJsonOf`).
 */
export function utf8EncodePieces(pieces: readonly string[]): Uint8Array {
  let chars = 0;
  for (const p of pieces) chars += p.length;
  // ASCII (the usual JSON) fits in chars bytes; otherwise measure first, then encode into the
  // exact size (not into the worst case's three bytes a unit: a 10 MiB part would take 30 MiB).
  const size = (bytes: Uint8Array): number => {
    let at = 0;
    for (const p of pieces) {
      const { read, written } = encoder.encodeInto(p, at === 0 ? bytes : bytes.subarray(at));
      at += written;
      if (read !== p.length) return -1;
    }
    return at;
  };
  const ascii = new Uint8Array(chars);
  if (size(ascii) === chars) return ascii;
  const exact = new Uint8Array(utf8Chunks(pieces));
  size(exact);
  return exact;
}
