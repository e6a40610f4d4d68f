import { CheckpointError } from '../contract/errors.js';
import { fromBase64, toBase64 } from './base64.js';
import { inflateChunk, looksDeflated, packChunk } from './chunk-packing.js';

/**
 * The **edges** of a chunked document: its first and last bytes, stored inline in its envelope
 * instead of in its chunk tree.
 *
 * What changes at every version of a document sits at its ends (a checkpoint's header, ids,
 * versions and small channels), while the large middle (a conversation) changes less often. In
 * the tree, each changed end costs a leaf and a node per level above it, each a stored object
 * (a file on fs). Kept in the envelope, which is rewritten anyway, a version that changes only
 * its ends reuses the very same tree and stores no chunk at all.
 *
 * Where an edge ends is cut by content, as leaves are, so that the middle starts and ends at the
 * same bytes from one version to the next: at a **mark**, a place where the gear hash of the 32
 * bytes before it has its top bits zero, the first at or past {@link HEAD_MIN} bytes from the
 * start, and the last at or before {@link TAIL_MIN} bytes from the end. A change within those
 * bounds that keeps the document's length leaves the marks, and so the middle, in place.
 */

/** The head ends at the first head mark this many bytes or more from the start (a header of ids, times and a seal fits). */
export const HEAD_MIN = 384;
/** No head mark by then: no head (low-entropy text, where marks are rare). */
const HEAD_MAX = 2048;
/**
 * Top bits of the gear hash that are zero at a head mark: 9, one every ~512 bytes. A change of
 * length in the head (LangGraph's `__start__` channel comes and goes) moves the bytes after it
 * past the fixed HEAD_MIN; the first mark stays the same content unless one falls within the
 * shift of HEAD_MIN, which rare marks make unlikely.
 */
const HEAD_MARK = 0xff800000;
/** The tail starts at the last tail mark this many bytes or more from the end (a LangGraph checkpoint's versions and ids fit). */
export const TAIL_MIN = 1024;
/** No tail mark by then: no tail. */
const TAIL_MAX = 2048;
/** Top bits of the gear hash that are zero at a tail mark: 6, one every ~64 bytes (what follows the middle changes length by a few bytes at most). */
const TAIL_MARK = 0xfc000000;
/** The edges never hold more than this. */
export const EDGES_MAX_BYTES = HEAD_MAX + TAIL_MAX;
/**
 * Edges whose member (see {@link encodeEdges}) is longer than this are not kept: the document is
 * stored without edges. So an envelope stays within `ENVELOPE_MAX_BYTES` (4 KiB with 4 ids), the
 * size by which a sweep or `verify` of an earlier version, which knows no edges, still finds it
 * and marks its chunks.
 */
export const EDGES_MEMBER_MAX = 3400;

/** Where a document's middle (its chunk tree) starts and ends. */
export interface EdgeCut {
  /** Bytes of the head: the middle starts here. */
  readonly head: number;
  /** Bytes of the tail: the middle ends this many bytes before the end. */
  readonly tail: number;
}

/** An envelope's edges, as read. */
export interface DocumentEdges {
  readonly head: Uint8Array;
  readonly tail: Uint8Array;
}

/** The gear hash of the 32 bytes before `at` (`gear` is the leaves' table: one hash family). */
function windowHash(bytes: Uint8Array, at: number, gear: Uint32Array): number {
  let h = 0;
  for (let j = at - 32; j < at; j++) h = ((h << 1) + gear[bytes[j]!]!) | 0;
  return h;
}

/**
 * The edges to cut from `bytes` (zero-length where no mark falls within bounds, or the document
 * is too small for both). The hash is rolled from one place to the next, not made again from 32
 * bytes: each step shifts it one bit, so a byte's share has left the 32 bits 32 steps later.
 */
export function edgeCut(bytes: Uint8Array, gear: Uint32Array): EdgeCut {
  const n = bytes.length;
  if (n < 4 * EDGES_MAX_BYTES) return { head: 0, tail: 0 };
  let head = 0;
  for (let at = HEAD_MIN, h = windowHash(bytes, at, gear); ; h = ((h << 1) + gear[bytes[at++]!]!) | 0) {
    if ((h & HEAD_MARK) === 0) {
      head = at;
      break;
    }
    if (at === HEAD_MAX) break;
  }
  // The last tail mark from the end's side: the one nearest TAIL_MIN.
  let tail = 0;
  for (let at = n - TAIL_MAX, h = windowHash(bytes, at, gear); ; h = ((h << 1) + gear[bytes[at++]!]!) | 0) {
    if ((h & TAIL_MARK) === 0) tail = n - at;
    if (at === n - TAIL_MIN) break;
  }
  return { head, tail };
}

/**
 * The envelope member holding `head` and `tail` (canonical JSON): their lengths, and their bytes
 * in base64, stored deflated as a leaf is (codec/chunk-packing.ts) when `compress` (never on a
 * store with keyed addressing: a compressed length says something of the content).
 */
export function encodeEdges(head: Uint8Array, tail: Uint8Array, compress: boolean): string {
  const both = new Uint8Array(head.length + tail.length);
  both.set(head);
  both.set(tail, head.length);
  return `{"head":${head.length},"tail":${tail.length},"text":"${toBase64(compress ? packChunk(both) : both)}"}`;
}

/** The edges an envelope's member holds; `checkpoint_integrity_mismatch` when it is damaged. */
export function decodeEdges(value: unknown, key: string): DocumentEdges {
  const damaged = (): CheckpointError =>
    new CheckpointError('checkpoint_integrity_mismatch', `${key}: damaged chunk envelope (edges)`, { details: { key } });
  const body = value as { head?: unknown; tail?: unknown; text?: unknown } | null;
  if (typeof body !== 'object' || body === null) throw damaged();
  const { head, tail, text } = body;
  if (!Number.isSafeInteger(head) || !Number.isSafeInteger(tail) || typeof text !== 'string') throw damaged();
  const h = head as number;
  const t = tail as number;
  if (h < 0 || t < 0 || h + t > EDGES_MAX_BYTES) throw damaged();
  const stored = fromBase64(text);
  if (!stored) throw damaged();
  let both = stored;
  if (stored.length !== h + t && looksDeflated(stored)) {
    const inflated = inflateChunk(stored);
    if (!('content' in inflated)) throw damaged();
    both = inflated.content;
  }
  if (both.length !== h + t) throw damaged();
  return { head: both.subarray(0, h), tail: both.subarray(h) };
}
