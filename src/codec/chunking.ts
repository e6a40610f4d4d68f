import { CheckpointError } from '../contract/errors.js';
import { edgeCut, edgesOfBody, TEXT_RUN, type DocumentEdges, type EdgeCut, type EdgesMembers } from './chunk-edges.js';
import { utf8Decode, utf8Encode } from './utf8.js';

/**
 * Content-defined chunking of a stored document's bytes, and the chunk tree that lists them.
 *
 * A document of {@link CHUNKED_MIN_BYTES} or more is stored as a small envelope naming its
 * content chunks; the chunks live once in a store-wide namespace (`chunks/<2 hex>/<id>`),
 * shared by every document holding the same bytes. Boundaries are cut where a rolling (gear)
 * hash of the last 32 bytes matches a mask, so they depend on the bytes around them only: an
 * append or a small edit changes the chunks it touches and no others. The list of leaf ids is
 * itself cut into nodes by the ids' own bytes (a prolly tree): a node changes only when one of
 * its children does, so a new version of a long document writes its changed leaves and the one
 * path of nodes above them.
 */

/** Documents smaller than this are stored whole (byte-identical to a store without chunks). */
export const CHUNKED_MIN_BYTES = 16 * 1024;
/** No gear-hash boundary before this many bytes (a long string's start or end may come sooner: see {@link nextLeafEnd}). */
const LEAF_MIN = 256;
/** A leaf is cut here at the latest. */
const LEAF_MAX = 8 * 1024;
/**
 * High bits of the gear hash that must be zero at a boundary: 12 bits, one every ~4 KiB past the
 * minimum. Most boundaries of a JSON document fall at the starts and ends of its long strings,
 * which cut a changed message or item off its neighbours exactly; the hash's boundaries bound
 * long strings and string-less stretches. Fewer of them keep a message in one leaf (one id in a
 * node, not two or three), at the cost of rewriting more of a long string changed inside (on the
 * dedup bench's conversation and writer, 11 bits and 4 KiB leaves stored 2 % and 5 % less than
 * 10 bits and 2 KiB; 12 bits and 8 KiB 0.4 % and 2 % less again).
 */
const LEAF_MASK = 0xfff00000;
/**
 * A node boundary follows an id whose last byte is a multiple of the fanout (a divisor of 16:
 * that many ids per node on average). A change rewrites one node per level above it, so it costs
 * about fanout × levels ids (hashes: they do not compress), least near a fanout of 4 (on the
 * 200-turn conversation of the dedup bench, 2 and 8 stored 3 % and 5 % more); but each node is
 * one more stored object (a file on fs), and the writer's 200 KB state stored 1.6 times as many
 * with 4 as with 8, its checkpoints taking 1.03× the time of the writer without chunks against
 * 0.94×. So 8 unless the caller asks otherwise (the LangGraph saver: 4, or {@link WIDE_FANOUT} where
 * each key is a file).
 */
export const NODE_FANOUT = 8;
/** A node holds at most this many ids. */
const NODE_MAX = 64;
/**
 * The envelope lists at most this many ids; more are cut into one more level of nodes. One: an
 * envelope is rewritten with every version (a LangGraph turn writes three checkpoints, the
 * messages changing in one), an id there in hex, while a node is rewritten only when what is
 * below it changes, an id there in 32 bytes.
 */
const ROOT_MAX = 1;
/**
 * A wide tree: from this fanout, asked where each key is a file (`StorageCapabilities.keysAreFiles`)
 * and files made count more than bytes, the envelope lists up to {@link WIDE_ROOT_MAX} ids. The
 * envelope is a file written with every version anyway, so its ids cost no file, and they spare a
 * level of nodes: a file less for each version that changes the tree.
 */
export const WIDE_FANOUT = 16;
/** Root ids of a wide tree: 4 keep an envelope with the longest edges within `ENVELOPE_MAX_BYTES`. */
const WIDE_ROOT_MAX = 4;

const QUOTE = 0x22;

/** The envelope's one member. */
export const CHUNKED_MARKER = '$savepoint_chunked';
const ENVELOPE_PREFIX = utf8Encode(`{"${CHUNKED_MARKER}":`);
/** An envelope is never larger than this (ROOT_MAX ids, a scheme name, and edges within `EDGES_MEMBER_MAX`): larger documents are not envelopes. */
export const ENVELOPE_MAX_BYTES = 4096;

/** Where a chunk is stored: `chunks/<first two hex digits>/<id>`. */
export const CHUNK_PREFIX = 'chunks/';
export const chunkKey = (id: string): string => `${CHUNK_PREFIX}${id.slice(0, 2)}/${id}`;

/**
 * A chunked document's envelope: the ids at `depth` (0: leaves) whose content, in order, is the
 * document's `bytes` bytes, between its `edges` when it has them (see codec/chunk-edges.ts). A
 * document stored whole in an envelope has no tree: no ids, no scheme, its edges the whole of it.
 */
export interface ChunkEnvelope {
  readonly bytes: number;
  readonly depth: number;
  readonly ids: readonly string[];
  readonly scheme: string;
  readonly edges?: DocumentEdges;
}

/** 256 pseudo-random 32-bit values (a fixed xorshift sequence: boundaries must never change between versions). */
export const GEAR: Uint32Array = (() => {
  const table = new Uint32Array(256);
  let x = 0x9e3779b9;
  for (let i = 0; i < 256; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    table[i] = x >>> 0;
  }
  return table;
})();

/**
 * The end of the leaf of `bytes` that starts at `start` (< `bytes.length`). A boundary depends on
 * the leaf's own bytes and the {@link TEXT_RUN} bytes after it alone ({@link LEAF_LOOKAHEAD}), so a
 * leaf another version of the document holds at another offset, followed by the same bytes, is
 * cut the same way there.
 *
 * Besides the gear hash's boundaries, a leaf ends right after a quote that closes {@link TEXT_RUN}
 * quote-free bytes or more (within the leaf): the end of a long JSON string, a message or an item
 * of a list; and right after a quote that opens as many (the start of one). A long string then
 * starts and ends on leaf boundaries whatever surrounds it: the same message is the same leaves
 * in a task's writes document (`[\"…\"]`) and in every checkpoint holding it (`,\"…\"`), and
 * a changed or appended string leaves its neighbours' leaves as they were. What lies between two
 * long strings (`","`, `\",\"`) is a short leaf of its own, the same chunk everywhere.
 */
export function nextLeafEnd(bytes: Uint8Array, start: number): number {
  const last = Math.min(bytes.length, start + LEAF_MAX);
  let i = Math.min(bytes.length, start + LEAF_MIN);
  let h = 0;
  // The window before the minimum still feeds the hash, so a boundary depends on the 32 bytes before it alone.
  for (let j = Math.max(start, i - 32); j < i; j++) h = ((h << 1) + GEAR[bytes[j]!]!) | 0;
  // A long string may end or start before the minimum: a leaf ends there all the same.
  let run = start;
  for (let j = start; j < i; j++)
    if (bytes[j] === QUOTE) {
      if (j - run >= TEXT_RUN || opensText(bytes, j + 1)) return j + 1;
      run = j + 1;
    }
  for (; i < last; i++) {
    const b = bytes[i]!;
    h = ((h << 1) + GEAR[b]!) | 0;
    if ((h & LEAF_MASK) === 0) return i + 1;
    if (b === QUOTE) {
      if (i - run >= TEXT_RUN || opensText(bytes, i + 1)) return i + 1;
      run = i + 1;
    }
  }
  return i;
}

/** Bytes after a leaf that its end depends on (see {@link opensText}). */
export const LEAF_LOOKAHEAD = TEXT_RUN;

/** Whether the {@link TEXT_RUN} bytes from `at` hold no quote (a long string starts at `at`): not when the document ends sooner. */
function opensText(bytes: Uint8Array, at: number): boolean {
  const end = at + TEXT_RUN;
  if (end > bytes.length) return false;
  for (let j = at; j < end; j++) if (bytes[j] === QUOTE) return false;
  return true;
}

/** Where the edges of a document of `bytes` end and start (see codec/chunk-edges.ts): the same gear hash as the leaves. */
export const edgesOf = (bytes: Uint8Array): EdgeCut => edgeCut(bytes, GEAR);

/** End offsets of the leaves of `bytes` (the last is `bytes.length`). */
export function leafBoundaries(bytes: Uint8Array): number[] {
  const ends: number[] = [];
  for (let start = 0; start < bytes.length;) ends.push((start = nextLeafEnd(bytes, start)));
  return ends;
}

/** Whether an id's last byte is a multiple of `fanout`, a divisor of 16: read from its last hex digit, the byte's low nibble. */
const endsNode = (id: string, fanout: number): boolean => NIBBLE[id.charCodeAt(id.length - 1)]! % fanout === 0;

/** Cuts a list of ids into nodes by the ids' last byte (see {@link NODE_FANOUT}). */
export function nodeGroups(ids: readonly string[], fanout = NODE_FANOUT): string[][] {
  const groups: string[][] = [];
  let group: string[] = [];
  for (const id of ids) {
    group.push(id);
    if (group.length >= NODE_MAX || endsNode(id, fanout)) {
      groups.push(group);
      group = [];
    }
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/** Whether the tree of node fanout `fanout` needs one more level above `ids`. */
export const needsLevel = (ids: readonly string[], fanout = NODE_FANOUT): boolean =>
  ids.length > (fanout >= WIDE_FANOUT ? WIDE_ROOT_MAX : ROOT_MAX);

/** Hex digit (code unit) → its value. */
const NIBBLE: Uint8Array = (() => {
  const table = new Uint8Array(128);
  for (let i = 0; i < 16; i++) table['0123456789abcdef'.charCodeAt(i)] = i;
  return table;
})();

/** A node's bytes: one byte giving the id length in bytes, then the ids, binary. */
export function encodeNode(ids: readonly string[]): Uint8Array {
  const width = ids[0]!.length / 2;
  const out = new Uint8Array(1 + ids.length * width);
  out[0] = width;
  let at = 1;
  for (const id of ids) for (let i = 0; i < id.length; i += 2) out[at++] = (NIBBLE[id.charCodeAt(i)]! << 4) | NIBBLE[id.charCodeAt(i + 1)]!;
  return out;
}

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** The ids a node lists (see {@link encodeNode}); `checkpoint_integrity_mismatch` when it is not a node. */
export function decodeNode(bytes: Uint8Array, id: string): string[] {
  const width = bytes[0] ?? 0;
  if (width === 0 || (bytes.length - 1) % width !== 0) throw chunkDamaged(id, 'is not a chunk-tree node');
  const ids: string[] = [];
  for (let at = 1; at < bytes.length; at += width) {
    let s = '';
    for (let i = 0; i < width; i++) s += HEX[bytes[at + i]!];
    ids.push(s);
  }
  return ids;
}

/** The envelope's bytes (canonical JSON: members in code-unit order); `edges` is the edges member as `encodeEdges` makes it (its name sorts between `depth` and `ids`). */
export function encodeEnvelope(envelope: Omit<ChunkEnvelope, 'edges'>, edges?: string): Uint8Array {
  const ids = envelope.ids.map((id) => `"${id}"`).join(',');
  const edgesMember = edges === undefined ? '' : `${edges},`;
  return utf8Encode(
    `{"${CHUNKED_MARKER}":{"bytes":${envelope.bytes},"depth":${envelope.depth},${edgesMember}"ids":[${ids}],"scheme":${JSON.stringify(envelope.scheme)}}}`,
  );
}

/** Whether `bytes` start like an envelope (cheap; {@link decodeEnvelope} checks the rest). */
export function looksChunked(bytes: Uint8Array): boolean {
  if (bytes.length < ENVELOPE_PREFIX.length || bytes.length > ENVELOPE_MAX_BYTES) return false;
  for (let i = 0; i < ENVELOPE_PREFIX.length; i++) if (bytes[i] !== ENVELOPE_PREFIX[i]) return false;
  return true;
}

const ID = /^[0-9a-f]{2,256}$/;

/** The envelope `bytes` hold, or undefined when they are not one; `checkpoint_integrity_mismatch` for a damaged one. */
export function decodeEnvelope(bytes: Uint8Array, key: string): ChunkEnvelope | undefined {
  if (!looksChunked(bytes)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(utf8Decode(bytes, key));
  } catch {
    return undefined; // not JSON: the document's own decoder reports it
  }
  const body = (parsed as Record<string, unknown>)[CHUNKED_MARKER] as (Omit<Partial<ChunkEnvelope>, 'edges'> & EdgesMembers) | undefined;
  const damaged = (): CheckpointError =>
    new CheckpointError('checkpoint_integrity_mismatch', `${key}: damaged chunk envelope`, { details: { key } });
  if (typeof body !== 'object' || body === null || Object.keys(parsed as object).length !== 1 || !Number.isSafeInteger(body.bytes))
    throw damaged();
  if (body.depth === undefined && body.ids === undefined && body.scheme === undefined) return wholeEnvelope(body, key, damaged);
  const ok =
    Number.isSafeInteger(body.depth) &&
    body.depth! >= 0 &&
    body.depth! < 16 &&
    typeof body.scheme === 'string' &&
    Array.isArray(body.ids) &&
    body.ids.length > 0 &&
    body.ids.every((id) => typeof id === 'string' && ID.test(id));
  if (!ok) throw damaged();
  const envelope = { bytes: body.bytes!, depth: body.depth!, ids: body.ids!, scheme: body.scheme! };
  const edges = edgesOfBody(body, key);
  return edges ? { ...envelope, edges } : envelope;
}

/**
 * A document stored whole in an envelope (snapshot-io/chunk-store.ts `packWhole`): no tree, its
 * edges the whole of it (all head, no tail), smaller than {@link CHUNKED_MIN_BYTES}.
 */
function wholeEnvelope(body: { readonly bytes?: number } & EdgesMembers, key: string, damaged: () => CheckpointError): ChunkEnvelope {
  const edges = edgesOfBody(body, key, CHUNKED_MIN_BYTES);
  if (!edges || edges.tail.length > 0 || edges.head.length !== body.bytes) throw damaged();
  return { bytes: body.bytes!, depth: 0, ids: [], scheme: '', edges };
}

/** `checkpoint_integrity_mismatch` naming a damaged or missing chunk. */
export function chunkDamaged(id: string, why: string): CheckpointError {
  const key = chunkKey(id);
  return new CheckpointError('checkpoint_integrity_mismatch', `chunk ${key} ${why}`, { details: { key } });
}
