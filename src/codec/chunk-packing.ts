import { Inflate, inflateSync } from 'fflate';
import { deflateRaw, type DeflateLevel } from './deflate.js';
import { crc32 } from './gzip.js';

/**
 * How a content chunk's bytes are stored: as they are, or deflated between a two-byte mark and
 * the CRC-32 of the deflated bytes (little-endian). The CRC makes every changed byte of the stored
 * form show: a deflate stream ignores the padding bits of its last byte, so without it a flip
 * there would leave the content, and so the id check, intact.
 *
 * A chunk's id is always the hash of its content (its uncompressed bytes), so dedup and ids do
 * not depend on how it is stored, and a store may hold either form of the same chunk (old stores
 * hold every chunk as it is). The stored form does not say which it is beyond the mark: a reader
 * takes the deflated reading when it hashes to the id, else the bytes as they are — a chunk's
 * id settles which reading is its content, so a plain chunk that happens to start with the mark
 * reads as before.
 */

/** The mark of a deflated chunk: 0xff never starts a UTF-8 text nor a chunk-tree node (its first byte is an id width of at most 128). */
const DEFLATED_MARK = [0xff, 0x01] as const;

/**
 * No chunk savepoint writes holds more content than this (a leaf is at most 2 KiB, a node at
 * most 64 ids of 128 bytes): inflating stops past it, so a hostile stored chunk (a "zip bomb")
 * costs at most this much memory.
 */
export const CHUNK_CONTENT_MAX_BYTES = 16 * 1024;

/** Length of the CRC-32 after the deflated bytes. */
const CRC_BYTES = 4;

/** Deflate level: 6 (zlib's default) compresses JSON leaves within 1 % of 9, at half the time. */
const LEVEL: DeflateLevel = 6;

/** Stored bytes fed to the inflater at once, past {@link WHOLE_INFLATE_MAX_BYTES} (see {@link inflateChunk}). */
const INPUT_STEP = 256;

/**
 * Deflated bytes up to this many (every leaf savepoint writes: about 0.6–1.3 KB) are inflated in
 * one call into {@link INFLATE_OUT}, which a stream of more content cannot grow past: inflating in
 * steps allocated an output buffer of 128 KiB at each step and took several times as long. A
 * hostile stream still decodes to its end there (its output past the buffer dropped): at most
 * ~1032 bytes a stored byte, 4 MiB of decoding. Longer stored forms go in steps, which stop at the bound.
 */
const WHOLE_INFLATE_MAX_BYTES = 4096;

/** Where a short stored form is inflated, one byte past the largest content: content that reaches it is too large. */
const INFLATE_OUT = new Uint8Array(CHUNK_CONTENT_MAX_BYTES + 1);

/**
 * The stored form of a chunk whose content is `content`: deflated when that saves bytes, else
 * `content` itself. With `dictionary`, deflated with it as a preset dictionary (which the stored
 * form does not say: its reader knows it, as it knows the chunk's id).
 */
export function packChunk(content: Uint8Array, dictionary?: Uint8Array): Uint8Array {
  const deflated = deflateRaw(content, LEVEL, dictionary);
  if (deflated.length + DEFLATED_MARK.length + CRC_BYTES >= content.length) return content;
  const out = new Uint8Array(DEFLATED_MARK.length + deflated.length + CRC_BYTES);
  out.set(DEFLATED_MARK);
  out.set(deflated, DEFLATED_MARK.length);
  new DataView(out.buffer).setUint32(out.length - CRC_BYTES, crc32(deflated), true);
  return out;
}

/** Whether `stored` starts with the mark of a deflated chunk. */
export const looksDeflated = (stored: Uint8Array): boolean =>
  stored.length > DEFLATED_MARK.length + CRC_BYTES && stored[0] === DEFLATED_MARK[0] && stored[1] === DEFLATED_MARK[1];

/** What inflating a stored chunk gave: its content, or why there is none. */
export type Inflated = { readonly content: Uint8Array } | { readonly failed: 'crc' | 'not-deflate' | 'too-large' };

/**
 * The content of a chunk stored deflated (`looksDeflated`), inflated in bounded steps: output
 * past {@link CHUNK_CONTENT_MAX_BYTES} stops it (`too-large`); deflated bytes that do not match
 * their CRC-32 are `crc`, and those that are not a complete deflate stream `not-deflate`. The
 * caller checks the content against the chunk's id. `dictionary`: the one it was deflated with.
 */
export function inflateChunk(stored: Uint8Array, dictionary?: Uint8Array): Inflated {
  const body = stored.subarray(DEFLATED_MARK.length, stored.length - CRC_BYTES);
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength);
  if (view.getUint32(stored.length - CRC_BYTES, true) !== crc32(body)) return { failed: 'crc' };
  return body.length <= WHOLE_INFLATE_MAX_BYTES ? inflateWhole(body, dictionary) : inflateInSteps(body, dictionary);
}

/** {@link inflateChunk} of a short deflate stream, in one call (see {@link WHOLE_INFLATE_MAX_BYTES}). */
function inflateWhole(body: Uint8Array, dictionary?: Uint8Array): Inflated {
  let out: Uint8Array;
  try {
    out = inflateSync(body, dictionary ? { out: INFLATE_OUT, dictionary } : { out: INFLATE_OUT });
  } catch {
    // A stored block past the buffer throws too: it is content past the bound as well.
    return { failed: 'not-deflate' };
  }
  if (out.length > CHUNK_CONTENT_MAX_BYTES) return { failed: 'too-large' };
  // A copy: the buffer is this module's, for the next call.
  return { content: out.slice() };
}

/** {@link inflateChunk} of a longer deflate stream, in bounded steps that stop once the content passes the bound. */
function inflateInSteps(body: Uint8Array, dictionary?: Uint8Array): Inflated {
  const parts: Uint8Array[] = [];
  let total = 0;
  let tooLarge = false;
  let ended = false;
  const inflater = new Inflate(dictionary ? { dictionary } : {}, (part, final) => {
    total += part.length;
    if (total > CHUNK_CONTENT_MAX_BYTES) {
      tooLarge = true;
      throw new RangeError('chunk inflates past its limit');
    }
    parts.push(part);
    if (final) ended = true;
  });
  try {
    // Small steps: deflate expands at most ~1032:1, so one step overshoots the bound by ~260 KB at worst.
    for (let at = 0; at < body.length; at += INPUT_STEP) inflater.push(body.subarray(at, at + INPUT_STEP), at + INPUT_STEP >= body.length);
  } catch {
    return { failed: tooLarge ? 'too-large' : 'not-deflate' };
  }
  if (!ended) return { failed: 'not-deflate' };
  if (parts.length === 1) return { content: parts[0]! };
  const content = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    content.set(part, at);
    at += part.length;
  }
  return { content };
}
