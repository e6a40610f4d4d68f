import { contentAddressingOf, type ContentAddressing } from '../contract/content-address.js';
import type { StorageAdapter, StoredObject } from '../contract/storage.js';
import { isCheckpointError } from '../contract/errors.js';
import { getBounded } from './bounded-read.js';
import { utf8Encode } from '../codec/utf8.js';
import { sha256Hex, sha256HexSync } from '../codec/sha256.js';
import { inflateChunk, looksDeflated, packChunk } from '../codec/chunk-packing.js';
import { EDGES_MEMBER_MAX, encodeEdges, headAtText } from '../codec/chunk-edges.js';
import {
  chunkDamaged,
  chunkKey,
  CHUNKED_MARKER,
  CHUNKED_MIN_BYTES,
  decodeEnvelope,
  decodeNode,
  edgesOf,
  encodeEnvelope,
  encodeNode,
  ENVELOPE_MAX_BYTES,
  leafBoundaries,
  needsLevel,
  NODE_FANOUT,
  nodeGroups,
  type ChunkEnvelope,
} from '../codec/chunking.js';

/** SHA-256 hex: the addressing of every store that does not declare its own. */
export const SHA256_ADDRESSING: ContentAddressing = Object.freeze({
  scheme: 'sha256',
  id: (bytes: Uint8Array) => sha256Hex(bytes),
  idSync: (bytes: Uint8Array) => sha256HexSync(bytes),
});

/** The addressing chunks of `storage` are named and verified by. */
export const addressingOf = (storage: StorageAdapter): ContentAddressing => contentAddressingOf(storage) ?? SHA256_ADDRESSING;

/** A chunk's id under `addressing`, without a promise when it hashes synchronously. */
const idOf = (addressing: ContentAddressing, bytes: Uint8Array): string | Promise<string> =>
  addressing.idSync?.(bytes) ?? addressing.id(bytes);

/** What checking a stored chunk against its id found: its content, or what is wrong with it. */
export type CheckedChunk = { readonly content: Uint8Array } | { readonly damage: string };

/**
 * The content of chunk `id` from its stored bytes (see codec/chunk-packing.ts): the inflated
 * bytes when the chunk is stored deflated and they hash to `id`, else the stored bytes when
 * they do. Every read of a stored chunk goes through here, as do `verify` and the sweep.
 */
export async function checkChunk(addressing: ContentAddressing, id: string, stored: Uint8Array): Promise<CheckedChunk> {
  let tooLarge = false;
  if (looksDeflated(stored)) {
    const inflated = inflateChunk(stored);
    if ('content' in inflated && (await idOf(addressing, inflated.content)) === id) return { content: inflated.content };
    tooLarge = 'failed' in inflated && inflated.failed === 'too-large';
  }
  if ((await idOf(addressing, stored)) === id) return { content: stored };
  return { damage: tooLarge ? 'inflates past the largest chunk savepoint writes' : 'does not match its id' };
}

/**
 * The bytes to store for a chunk of `content`: a leaf deflated when that saves bytes. Nodes are
 * ids (they do not compress), and a store with keyed addressing (an encrypted one) stores every
 * chunk as it is: the length of compressed content is a side channel on what it holds (as
 * compression in TLS was), which such a store is there to hide.
 */
export const storedChunk = (addressing: ContentAddressing, content: Uint8Array, leaf: boolean): Uint8Array =>
  leaf && addressing === SHA256_ADDRESSING ? packChunk(content) : content;

/** A document split for chunking: its middle (the bytes its chunk tree holds), and what its envelope holds besides the tree. */
export interface DocumentSplit {
  /** A view of the document's bytes: copy it before awaiting. */
  readonly middle: Uint8Array;
  /** The whole document's size. */
  readonly total: number;
  /** The edges member (see codec/chunk-edges.ts), made now: it holds copies. */
  readonly edges: string | undefined;
  /** The chunk tree's node fanout (see `NODE_FANOUT`). */
  readonly fanout: number;
}

/** `bytes` split into edges, kept in the envelope, and the middle cut into chunks (stored as a leaf is: compressed unless the addressing is keyed). */
export function splitDocument(addressing: ContentAddressing, bytes: Uint8Array, fanout = NODE_FANOUT): DocumentSplit {
  const cut = edgesOf(bytes);
  const total = bytes.length;
  if (cut.head === 0 && cut.tail === 0) return { middle: bytes, total, edges: undefined, fanout };
  const end = bytes.length - cut.tail;
  const edges = encodeEdges(bytes.subarray(0, cut.head), bytes.subarray(end), addressing === SHA256_ADDRESSING);
  if (edges.length > EDGES_MEMBER_MAX) return { middle: bytes, total, edges: undefined, fanout };
  return { middle: bytes.subarray(cut.head, end), total, edges, fanout };
}

/**
 * How long a writer trusts that a chunk it wrote (or read) is still stored, and skips writing it
 * again. A sweep deletes a chunk only after it was hidden for longer than its grace period
 * (chunk-sweep.ts), which must exceed this plus the time one write takes: a writer that learned
 * of a chunk before the sweep hid it has written its document before the sweep looks again.
 */
export const KNOWN_CHUNK_TTL_MS = 10 * 60 * 1000;
/** Chunk ids remembered per store (about 100 bytes each). */
const KNOWN_MAX = 200_000;
/** Bytes of recently read chunks kept per store. */
const READ_CACHE_BYTES = 8 * 1024 * 1024;
/** Chunks fetched at once. */
const FETCH_AT_ONCE = 16;
/** Bytes of whole documents kept by their envelope per store (see {@link rememberDocument}). */
const DOCUMENTS_BYTES = 8 * 1024 * 1024;

/** What one process knows of a store's chunks. */
interface ChunkState {
  /** Chunk id → when it was last written or read (ms). */
  readonly known: Map<string, number>;
  /** Chunk id → bytes, in use order (oldest first), {@link READ_CACHE_BYTES} at most. */
  readonly cache: Map<string, Uint8Array>;
  cachedBytes: number;
  /** Envelope text → the document it stands for, for documents this process reassembled lately, in use order. */
  readonly documents: Map<string, Uint8Array>;
  documentBytes: number;
}

const states = new WeakMap<StorageAdapter, ChunkState>();

function stateOf(storage: StorageAdapter): ChunkState {
  let s = states.get(storage);
  if (!s) states.set(storage, (s = { known: new Map(), cache: new Map(), cachedBytes: 0, documents: new Map(), documentBytes: 0 }));
  return s;
}

/** Records that the chunks `ids` are stored now (call only once the write holding them is durable). */
export function rememberChunks(storage: StorageAdapter, ids: readonly string[]): void {
  const { known } = stateOf(storage);
  const now = Date.now();
  for (const id of ids) {
    known.delete(id);
    known.set(id, now);
  }
  if (known.size > KNOWN_MAX) for (const id of [...known.keys()].slice(0, known.size - KNOWN_MAX)) known.delete(id);
}

/** Forgets every chunk this process thinks `storage` holds (a sweep of this process removed some). */
export function forgetChunks(storage: StorageAdapter, ids?: Iterable<string>): void {
  const s = stateOf(storage);
  // A document kept by its envelope stands for chunks that may be gone now.
  s.documents.clear();
  s.documentBytes = 0;
  if (!ids) {
    s.known.clear();
    s.cache.clear();
    s.cachedBytes = 0;
    return;
  }
  for (const id of ids) {
    s.known.delete(id);
    const bytes = s.cache.get(id);
    if (bytes) {
      s.cache.delete(id);
      s.cachedBytes -= bytes.length;
    }
  }
}

function isKnown(state: ChunkState, id: string, now: number): boolean {
  const at = state.known.get(id);
  return at !== undefined && now - at < KNOWN_CHUNK_TTL_MS;
}

/** Whether this process knows `storage` holds a chunk (it wrote or read it within the trust window), as {@link chunkDocument} decides what to write. */
export function knownChunkTest(storage: StorageAdapter): (id: string) => boolean {
  const state = stateOf(storage);
  const now = Date.now();
  return (id) => isKnown(state, id, now);
}

/** One chunk to store: its id, key and bytes. */
export interface ChunkWrite {
  readonly id: string;
  readonly key: string;
  readonly bytes: Uint8Array;
}

/** A document as stored with chunks: its envelope, the chunks not known to be stored yet, and every chunk it references. */
export interface ChunkedDocument {
  readonly envelope: Uint8Array;
  readonly writes: readonly ChunkWrite[];
  readonly ids: readonly string[];
}

/** The pieces of a chunked document before their ids are known: leaves, then each level of nodes. */
class TreeBuilder {
  readonly all: { id: string; bytes: Uint8Array; leaf: boolean }[] = [];
  add(id: string, bytes: Uint8Array, leaf: boolean): string {
    this.all.push({ id, bytes, leaf });
    return id;
  }
  finish(storage: StorageAdapter, addressing: ContentAddressing, split: DocumentSplit, depth: number, ids: string[]): ChunkedDocument {
    const state = stateOf(storage);
    const now = Date.now();
    const writes: ChunkWrite[] = [];
    const seen = new Set<string>();
    for (const { id, bytes, leaf } of this.all) {
      if (seen.has(id)) continue;
      seen.add(id);
      if (!isKnown(state, id, now)) writes.push({ id, key: chunkKey(id), bytes: storedChunk(addressing, bytes, leaf) });
    }
    return { envelope: encodeEnvelope({ bytes: split.total, depth, ids, scheme: addressing.scheme }, split.edges), writes, ids: [...seen] };
  }
}

/**
 * Whether a document of `bytes` is stored as chunks (else whole, byte for byte as without
 * chunks): from {@link CHUNKED_MIN_BYTES}, or from `from` bytes when a long string starts in its
 * first 2 KiB (a message: its leaves are then shared with every other document holding it, and
 * the bytes around it go in the envelope; a small document without one gains nothing from chunks).
 */
export const isChunkable = (bytes: Uint8Array, from = CHUNKED_MIN_BYTES): boolean =>
  bytes.length >= CHUNKED_MIN_BYTES || (bytes.length >= from && headAtText(bytes) > 0);

/**
 * Whether a document too small for chunks is stored whole in an envelope when its writer allows
 * it (`packWhole`): one without a long string, all member names, ids, times, a seal and short
 * values, which the edges' dictionary holds most of. Not one holding a long string (a value of
 * the application's, whose deflating costs time in proportion to its length on every put).
 */
export const isPackable = (bytes: Uint8Array): boolean => bytes.length < CHUNKED_MIN_BYTES && headAtText(bytes) === 0;

const NO_CHUNKS: readonly string[] = [];
const NO_BYTES = new Uint8Array(0);

/**
 * `bytes` (a document too small for chunks) stored whole in an envelope: deflated with the edges'
 * preset dictionary and kept as its edges (codec/chunk-edges.ts), with no chunk tree, when that
 * is smaller than `bytes`; else `bytes` as they are. Never on a store with keyed addressing (a
 * compressed length says something of the content). A document of a few hundred bytes, its ids,
 * times and seal aside, is mostly member names the dictionary holds: a LangGraph task's writes
 * of 462 bytes are an envelope of about 272.
 */
export function packWhole(storage: StorageAdapter, bytes: Uint8Array): ChunkedDocument {
  const as = { envelope: bytes, writes: [], ids: NO_CHUNKS };
  if (bytes.length >= CHUNKED_MIN_BYTES || addressingOf(storage) !== SHA256_ADDRESSING) return as;
  const envelope = utf8Encode(`{"${CHUNKED_MARKER}":{"bytes":${bytes.length},${encodeEdges(bytes, NO_BYTES, true)}}}`);
  return envelope.length < bytes.length && envelope.length <= ENVELOPE_MAX_BYTES ? { ...as, envelope } : as;
}

/**
 * `bytes` as a chunked document of `storage` (see codec/chunking.ts), without a promise when the
 * store's addressing hashes synchronously here.
 */
export function chunkDocument(
  storage: StorageAdapter,
  bytes: Uint8Array,
  fanout = NODE_FANOUT,
): ChunkedDocument | Promise<ChunkedDocument> {
  const addressing = addressingOf(storage);
  return chunkSplit(storage, addressing, splitDocument(addressing, bytes, fanout));
}

/** {@link chunkDocument} of a document already split (by {@link splitDocument} with the store's addressing). */
export function chunkSplit(
  storage: StorageAdapter,
  addressing: ContentAddressing,
  split: DocumentSplit,
): ChunkedDocument | Promise<ChunkedDocument> {
  const middle = split.middle;
  const ends = leafBoundaries(middle);
  const leaves: Uint8Array[] = [];
  let start = 0;
  for (const end of ends) {
    leaves.push(middle.subarray(start, end));
    start = end;
  }
  const sync = addressing.idSync;
  if (sync) {
    const tree = new TreeBuilder();
    let ids: string[] | undefined = [];
    for (const leaf of leaves) {
      const id = sync(leaf);
      if (id === undefined) {
        ids = undefined;
        break;
      }
      ids.push(tree.add(id, leaf, true));
    }
    if (ids) {
      let depth = 0;
      let syncOk = true;
      while (needsLevel(ids, split.fanout) && syncOk) {
        const next: string[] = [];
        for (const group of nodeGroups(ids, split.fanout)) {
          const node = encodeNode(group);
          const id = sync(node);
          if (id === undefined) {
            syncOk = false;
            break;
          }
          next.push(tree.add(id, node, false));
        }
        ids = next;
        depth++;
      }
      if (syncOk) return tree.finish(storage, addressing, split, depth, ids);
    }
  }
  // Copies: the caller's buffer may be reused once this awaits (the saver's seal buffer).
  return chunkDocumentAsync(
    storage,
    addressing,
    split,
    leaves.map((leaf) => leaf.slice()),
  );
}

async function chunkDocumentAsync(
  storage: StorageAdapter,
  addressing: ContentAddressing,
  split: DocumentSplit,
  leaves: readonly Uint8Array[],
): Promise<ChunkedDocument> {
  const tree = new TreeBuilder();
  let ids: string[] = [];
  for (const leaf of leaves) ids.push(tree.add(await addressing.id(leaf), leaf, true));
  let depth = 0;
  while (needsLevel(ids, split.fanout)) {
    const next: string[] = [];
    for (const group of nodeGroups(ids, split.fanout)) {
      const node = encodeNode(group);
      next.push(tree.add(await addressing.id(node), node, false));
    }
    ids = next;
    depth++;
  }
  return tree.finish(storage, addressing, split, depth, ids);
}

const envelopeText = (envelope: Uint8Array): string => String.fromCharCode(...envelope);

/**
 * Keeps a whole document reassembled from its (verified) chunks by its envelope (`document` is
 * not copied: the caller's own), so that reading it again — a thread's newest checkpoint, read
 * every turn — needs neither its chunks nor their reassembly. An envelope names its chunks by
 * their content: it stands for these bytes and no others. Its seal is still checked by its
 * decoder, as for any document read. Only documents read are kept: every chunk is verified
 * when first read, also the chunks of a document this process wrote.
 */
function rememberDocument(state: ChunkState, envelope: Uint8Array, document: Uint8Array): void {
  if (document.length > DOCUMENTS_BYTES / 4 || envelope.length > ENVELOPE_MAX_BYTES) return;
  const key = envelopeText(envelope);
  const old = state.documents.get(key);
  if (old) {
    state.documents.delete(key);
    state.documentBytes -= old.length;
  }
  state.documents.set(key, document);
  state.documentBytes += document.length;
  for (const [k, d] of state.documents) {
    if (state.documentBytes <= DOCUMENTS_BYTES) break;
    state.documents.delete(k);
    state.documentBytes -= d.length;
  }
}

/** The document kept for `envelope` (see {@link rememberDocument}), marked as used. */
function rememberedDocument(state: ChunkState, envelope: Uint8Array): Uint8Array | undefined {
  if (state.documents.size === 0 || envelope.length > ENVELOPE_MAX_BYTES) return undefined;
  const key = envelopeText(envelope);
  const document = state.documents.get(key);
  if (document) {
    state.documents.delete(key);
    state.documents.set(key, document);
  }
  return document;
}

/** Keeps `bytes` of chunk `id` in the store's bounded cache of recently read chunks. */
function cacheChunk(state: ChunkState, id: string, bytes: Uint8Array): void {
  if (bytes.length > READ_CACHE_BYTES / 4 || state.cache.has(id)) return;
  state.cache.set(id, bytes);
  state.cachedBytes += bytes.length;
  for (const [old, b] of state.cache) {
    if (state.cachedBytes <= READ_CACHE_BYTES) break;
    state.cache.delete(old);
    state.cachedBytes -= b.length;
  }
}

/** Key prefix of a hidden chunk's copies (see chunk-sweep.ts): `chunks/<2>/<id>.hidden-<ms>`. */
export const HIDDEN_INFIX = '.hidden-';
export const hiddenKey = (id: string, atMs: number): string => `${chunkKey(id)}${HIDDEN_INFIX}${atMs}`;

/** No chunk savepoint writes comes near this: a larger file under `chunks/` is refused unread, not loaded whole. */
const MAX_CHUNK_READ_BYTES = 1 << 20;

async function getChunkBytes(storage: StorageAdapter, key: string, id: string): Promise<StoredObject | undefined> {
  try {
    return await getBounded(storage, key, MAX_CHUNK_READ_BYTES);
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_too_large')) throw chunkDamaged(id, 'is larger than any chunk savepoint writes');
    throw err;
  }
}

/**
 * The stored bytes of chunk `id`, verified against its id: from the cache, the chunk's key, or
 * a copy a sweep hid (a document written while the sweep ran may still reference it).
 * `checkpoint_integrity_mismatch` naming the chunk when it is missing or does not match.
 */
export async function readChunk(storage: StorageAdapter, id: string, addressing = addressingOf(storage)): Promise<Uint8Array> {
  const state = stateOf(storage);
  return cachedChunk(state, id) ?? readChunkStored(storage, state, id, addressing);
}

/** Chunk `id` from the cache of recently read chunks (verified when read), marked as used. */
function cachedChunk(state: ChunkState, id: string): Uint8Array | undefined {
  const cached = state.cache.get(id);
  if (cached) {
    state.cache.delete(id);
    state.cache.set(id, cached);
  }
  return cached;
}

/** Chunk `id` read from the store (its key, else a hidden copy) and verified against its id. */
async function readChunkStored(storage: StorageAdapter, state: ChunkState, id: string, addressing: ContentAddressing): Promise<Uint8Array> {
  let stored = await getChunkBytes(storage, chunkKey(id), id);
  if (!stored) {
    for await (const entry of storage.list(`${chunkKey(id)}${HIDDEN_INFIX}`)) {
      stored = await getChunkBytes(storage, entry.key, id);
      if (stored) break;
    }
  }
  if (!stored) throw chunkDamaged(id, 'is missing');
  const checked = await checkChunk(addressing, id, stored.bytes);
  if ('damage' in checked) throw chunkDamaged(id, checked.damage);
  const bytes = checked.content;
  cacheChunk(state, id, bytes);
  state.known.set(id, Date.now());
  return bytes;
}

/** Reads `ids` (each verified), in order: those in the cache at once, the others from the store a few at a time. */
async function readAll(storage: StorageAdapter, addressing: ContentAddressing, ids: readonly string[]): Promise<Uint8Array[]> {
  const state = stateOf(storage);
  const out: Uint8Array[] = new Array<Uint8Array>(ids.length);
  const missing: number[] = [];
  ids.forEach((id, i) => {
    const cached = cachedChunk(state, id);
    if (cached) out[i] = cached;
    else missing.push(i);
  });
  for (let at = 0; at < missing.length; at += FETCH_AT_ONCE) {
    const batch = missing.slice(at, at + FETCH_AT_ONCE);
    const read = await Promise.all(batch.map((i) => readChunkStored(storage, state, ids[i]!, addressing)));
    batch.forEach((i, k) => (out[i] = read[k]!));
  }
  return out;
}

/** The leaf ids of an envelope, reading its nodes level by level (each level's nodes at once). */
export async function leafIdsOf(storage: StorageAdapter, envelope: ChunkEnvelope, onNode?: (id: string) => void): Promise<string[]> {
  const addressing = addressingOf(storage);
  let ids = [...envelope.ids];
  for (let depth = envelope.depth; depth > 0; depth--) {
    const nodes = await readAll(storage, addressing, ids);
    const next: string[] = [];
    nodes.forEach((node, i) => {
      onNode?.(ids[i]!);
      for (const child of decodeNode(node, ids[i]!)) next.push(child);
    });
    ids = next;
  }
  return ids;
}

/**
 * The document an envelope stands for, reassembled from its chunks (each verified against its
 * id); undefined when `stored` is not an envelope. The document's own seal is then checked
 * over the reassembled bytes by its decoder, as for any document.
 */
export async function resolveChunked(storage: StorageAdapter, key: string, stored: Uint8Array): Promise<Uint8Array | undefined> {
  const envelope = decodeEnvelope(stored, key);
  if (!envelope) return undefined;
  const addressing = addressingOf(storage);
  if (envelope.ids.length > 0 && envelope.scheme !== addressing.scheme)
    throw chunkDamaged(envelope.ids[0]!, `is named by ${envelope.scheme}, not by this store's ${addressing.scheme}`);
  const state = stateOf(storage);
  // A copy: the decoder the caller hands it to (a custom profile's) may write into its buffer.
  const remembered = rememberedDocument(state, stored);
  if (remembered) return remembered.slice();
  const leaves = await readAll(storage, addressing, await leafIdsOf(storage, envelope));
  const parts = envelope.edges ? [envelope.edges.head, ...leaves, envelope.edges.tail] : leaves;
  let total = 0;
  for (const part of parts) total += part.length;
  if (total !== envelope.bytes)
    throw chunkDamaged(envelope.ids[0]!, `and its siblings hold ${total} bytes where ${key} expects ${envelope.bytes}`);
  const out = new Uint8Array(total);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  rememberDocument(state, stored.slice(), out.slice());
  return out;
}
