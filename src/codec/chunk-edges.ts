import { CheckpointError } from '../contract/errors.js';
import { fromBase64, toBase64 } from './base64.js';
import { fromBase85, toBase85 } from './base85.js';
import { inflateChunk, looksDeflated, packChunk } from './chunk-packing.js';
import { EDGE_DICTIONARY } from './edge-dictionary.js';

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
 * same bytes from one version to the next. First choice, a **text mark**: a place inside a long
 * JSON string (a message, an item of a list), {@link TEXT_RUN} quote-free bytes or more past its
 * start, where the gear hash of the 32 bytes before has its top 6 bits zero; the head ends at the
 * first such mark, the tail starts at the last one. The ids, times, checksums and versions that
 * change at every version are short strings around the long ones, so the edges hold them and a
 * few dozen bytes of text, whatever their length: a writer's checkpoint changes its last 40
 * bytes or so, a LangGraph one about 890. A text mark depends on the text before it alone, so a
 * head that changes length (LangGraph's `__start__` channel comes and goes) still ends at the same
 * text. Where no text mark falls within {@link HEAD_MAX} of the start (or of the end), the edge
 * is cut as before text marks were: at the first **head mark** (top 9 bits zero) {@link HEAD_MIN}
 * bytes or more from the start, at the last **tail mark** (top 6 bits zero) {@link TAIL_MIN}
 * bytes or more from the end.
 */

/** No text mark in the head: it ends at the first head mark this many bytes or more from the start (a header of ids, times and a seal fits). */
export const HEAD_MIN = 384;
/** No head mark by then: no head (low-entropy text, where marks are rare). */
export const HEAD_MAX = 2048;
/**
 * Top bits of the gear hash that are zero at a head mark: 9, one every ~512 bytes. A change of
 * length in the head (LangGraph's `__start__` channel comes and goes) moves the bytes after it
 * past the fixed HEAD_MIN; the first mark stays the same content unless one falls within the
 * shift of HEAD_MIN, which rare marks make unlikely.
 */
const HEAD_MARK = 0xff800000;
/** No text mark in the tail: it starts at the last tail mark this many bytes or more from the end (a LangGraph checkpoint's versions and ids fit). */
export const TAIL_MIN = 1024;
/** No tail mark by then: no tail. */
export const TAIL_MAX = 2048;
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
 * Quote-free bytes before a text mark: past any id, checksum or timestamp (a SHA-256 in hex is 64),
 * inside text.
 */
export const TEXT_RUN = 128;
/** Top bits of the gear hash that are zero at a text mark: 6, one every ~64 bytes of text. */
const TEXT_MARK = 0xfc000000;
const QUOTE = 0x22;

/** Where the quote-free stretch ending at `at` (exclusive) starts, scanning back at most {@link TEXT_RUN} bytes. */
function runStartBefore(bytes: Uint8Array, at: number): number {
  for (let j = at - 1; j >= at - TEXT_RUN; j--) if (bytes[j] === QUOTE) return j + 1;
  return at - TEXT_RUN;
}

/** The first text mark in [TEXT_RUN, HEAD_MAX], else the first head mark in [HEAD_MIN, HEAD_MAX]; 0 when neither. */
function headCut(bytes: Uint8Array, gear: Uint32Array): number {
  let fallback = 0;
  let run = runStartBefore(bytes, TEXT_RUN);
  for (let at = TEXT_RUN, h = windowHash(bytes, at, gear); ; h = ((h << 1) + gear[bytes[at++]!]!) | 0) {
    if (bytes[at - 1] === QUOTE) run = at;
    if ((h & TEXT_MARK) === 0 && at - run >= TEXT_RUN) return at;
    if (fallback === 0 && at >= HEAD_MIN && (h & HEAD_MARK) === 0) fallback = at;
    if (at === HEAD_MAX) return fallback;
  }
}

/** The last text mark in [n − TAIL_MAX, n − 1] as a tail length, else the last tail mark in [n − TAIL_MAX, n − TAIL_MIN]; 0 when neither. */
function tailCut(bytes: Uint8Array, gear: Uint32Array): number {
  const n = bytes.length;
  let text = 0;
  let fallback = 0;
  let run = runStartBefore(bytes, n - TAIL_MAX);
  for (let at = n - TAIL_MAX, h = windowHash(bytes, at, gear); ; h = ((h << 1) + gear[bytes[at++]!]!) | 0) {
    if (bytes[at - 1] === QUOTE) run = at;
    if ((h & TEXT_MARK) === 0 && at - run >= TEXT_RUN) text = n - at;
    if (at <= n - TAIL_MIN && (h & TAIL_MARK) === 0) fallback = n - at;
    if (at === n - 1) return text || fallback;
  }
}

/**
 * Right after the first quote within {@link HEAD_MAX} that opens {@link TEXT_RUN} quote-free bytes (a long string starts there); 0 when none does.
 * One pass over the bytes: a small document's header holds dozens of quotes, and every put asks this of its documents.
 */
export function headAtText(bytes: Uint8Array): number {
  let quote = -1;
  const end = Math.min(bytes.length, HEAD_MAX + TEXT_RUN);
  for (let at = 0; at < end; at++) {
    if (bytes[at] === QUOTE) {
      if (at >= HEAD_MAX) return 0;
      quote = at;
    } else if (quote >= 0 && at - quote >= TEXT_RUN) return quote + 1;
  }
  return 0;
}

/** Bytes after the last quote within {@link TAIL_MAX} of the end that closes {@link TEXT_RUN} quote-free bytes (a long string ends there); -1 when none does. One pass back from the end, as {@link headAtText}. */
export function tailAtText(bytes: Uint8Array): number {
  const n = bytes.length;
  let quote = -1;
  for (let at = n - 1, stop = Math.max(0, n - TAIL_MAX - TEXT_RUN); at >= stop; at--) {
    if (bytes[at] === QUOTE) {
      if (at < n - TAIL_MAX) return -1;
      quote = at;
    } else if (quote >= 0 && quote - at >= TEXT_RUN) return n - quote - 1;
  }
  return -1;
}

/**
 * The edges to cut from `bytes` (zero-length where no mark falls within bounds, or the document
 * is too small for both). First choice, the ends of its long strings: the head ends where the
 * first one starts, the tail starts where the last one ends, as the leaves cut them
 * (codec/chunking.ts), so the edges hold no text and the text's leaves are those of any other
 * document holding it. Else the marks. The hash is rolled from one place to the next, not made
 * again from 32 bytes: each step shifts it one bit, so a byte's share has left the 32 bits 32
 * steps later.
 */
export function edgeCut(bytes: Uint8Array, gear: Uint32Array): EdgeCut {
  const atText = tailAtText(bytes);
  if (bytes.length >= 4 * EDGES_MAX_BYTES)
    return { head: headAtText(bytes) || headCut(bytes, gear), tail: atText >= 0 ? atText : tailCut(bytes, gear) };
  // Too small for marks on both sides: at long strings alone, between which lies one at least.
  const head = headAtText(bytes);
  const tail = Math.max(atText, 0);
  return head + tail + TEXT_RUN <= bytes.length ? { head, tail } : { head: 0, tail: 0 };
}

/** The envelope member of edges stored as they are (and of every edges an earlier version wrote, deflated or not). */
export const EDGES_MEMBER = 'edges';
/**
 * The envelope member of edges deflated with {@link EDGE_DICTIONARY}, in base64, as versions
 * before {@link PACKED_EDGES_MEMBER} wrote them (read, no longer written).
 */
export const DICTIONARY_EDGES_MEMBER = 'dict_edges';
/**
 * The envelope member of edges deflated with {@link EDGE_DICTIONARY} (as a leaf is, when that is
 * smaller), in Z85: `[head, tail, "text"]`. A member of its own, not a mark in `edges` or
 * `dict_edges`: an earlier version, which knows neither, then still finds the envelope's chunk
 * ids (its sweep and `verify` mark them), and refuses to read the document (its bytes do not add
 * up) instead of misreading it. Its name sorts where `edges` does (between `depth` and `ids`).
 */
export const PACKED_EDGES_MEMBER = 'edges_z85';

/** Head then tail, in one buffer. */
function joined(head: Uint8Array, tail: Uint8Array): Uint8Array {
  const both = new Uint8Array(head.length + tail.length);
  both.set(head);
  both.set(tail, head.length);
  return both;
}

/**
 * The envelope member holding `head` and `tail` (canonical JSON, name included): deflated with
 * the edges' preset dictionary as a leaf is deflated (codec/chunk-packing.ts), in Z85
 * ({@link PACKED_EDGES_MEMBER}), when `compress`; else their lengths and their bytes in base64
 * as they are ({@link EDGES_MEMBER}: a store with keyed addressing, where a compressed length
 * says something of the content).
 */
export function encodeEdges(head: Uint8Array, tail: Uint8Array, compress: boolean): string {
  const both = joined(head, tail);
  if (compress) return `"${PACKED_EDGES_MEMBER}":[${head.length},${tail.length},"${toBase85(packChunk(both, EDGE_DICTIONARY))}"]`;
  return `"${EDGES_MEMBER}":{"head":${head.length},"tail":${tail.length},"text":"${toBase64(both)}"}`;
}

/** An edges member as read: its lengths, and its stored bytes (deflated or as they are). */
interface StoredEdges {
  readonly head: number;
  readonly tail: number;
  readonly stored: Uint8Array | undefined;
}

/** The lengths and stored bytes of an edges member of either form; undefined when it is neither. */
function storedEdgesOf(value: unknown, packed: boolean): StoredEdges | undefined {
  if (packed) {
    if (!Array.isArray(value) || value.length !== 3 || typeof value[2] !== 'string') return undefined;
    const [head, tail, text] = value as [unknown, unknown, string];
    return Number.isSafeInteger(head) && Number.isSafeInteger(tail)
      ? { head: head as number, tail: tail as number, stored: fromBase85(text) }
      : undefined;
  }
  const body = value as { head?: unknown; tail?: unknown; text?: unknown } | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { head, tail, text } = body;
  if (!Number.isSafeInteger(head) || !Number.isSafeInteger(tail) || typeof text !== 'string') return undefined;
  return { head: head as number, tail: tail as number, stored: fromBase64(text) };
}

/** How an envelope's edges member was written: its name says its form and whether the dictionary deflated it. */
export type EdgesForm = 'plain' | 'dictionary' | 'packed';

/**
 * The edges an envelope's member holds, of `form` (see {@link EdgesForm}), at most `max` bytes in
 * all; `checkpoint_integrity_mismatch` when it is damaged.
 */
export function decodeEdges(value: unknown, key: string, form: EdgesForm = 'plain', max = EDGES_MAX_BYTES): DocumentEdges {
  const damaged = (): CheckpointError =>
    new CheckpointError('checkpoint_integrity_mismatch', `${key}: damaged chunk envelope (edges)`, { details: { key } });
  const edges = storedEdgesOf(value, form === 'packed');
  if (!edges?.stored) throw damaged();
  const { head: h, tail: t, stored } = edges;
  if (h < 0 || t < 0 || h + t > max) throw damaged();
  let both = stored;
  if (stored.length !== h + t && looksDeflated(stored)) {
    const inflated = inflateChunk(stored, form === 'plain' ? undefined : EDGE_DICTIONARY);
    if (!('content' in inflated)) throw damaged();
    both = inflated.content;
  }
  if (both.length !== h + t) throw damaged();
  return { head: both.subarray(0, h), tail: both.subarray(h) };
}

/** An envelope's body, as parsed: the members that may hold edges. */
export interface EdgesMembers {
  readonly edges?: unknown;
  readonly dict_edges?: unknown;
  readonly edges_z85?: unknown;
}

/**
 * The edges an envelope's body holds (undefined: none), at most `max` bytes;
 * `checkpoint_integrity_mismatch` when they are damaged or the body holds more than one member of them.
 */
export function edgesOfBody(body: EdgesMembers, key: string, max = EDGES_MAX_BYTES): DocumentEdges | undefined {
  const members: [unknown, EdgesForm][] = [];
  if (body.edges !== undefined) members.push([body.edges, 'plain']);
  if (body.dict_edges !== undefined) members.push([body.dict_edges, 'dictionary']);
  if (body.edges_z85 !== undefined) members.push([body.edges_z85, 'packed']);
  if (members.length > 1)
    throw new CheckpointError('checkpoint_integrity_mismatch', `${key}: damaged chunk envelope (two edges members)`, { details: { key } });
  const [member] = members;
  return member && decodeEdges(member[0], key, member[1], max);
}
