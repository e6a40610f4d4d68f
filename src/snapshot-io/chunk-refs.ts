import { isCheckpointError } from '../contract/errors.js';
import { listKeysOf, ownListKeysOf, type StorageAdapter, type StorageEntry } from '../contract/storage.js';
import { gunzip, isGzip } from '../codec/gzip.js';
import { CHUNK_PREFIX, decodeEnvelope, decodeNode, ENVELOPE_MAX_BYTES, looksChunked } from '../codec/chunking.js';
import { addressingOf, checkChunk, HIDDEN_INFIX, readChunk } from './chunk-store.js';
import { mapLimit } from '../storage/map-limit.js';

/** The chunks of a store as one listing saw them. */
export interface ChunkListing {
  /** Chunk id → its key, for every chunk stored under its own key. */
  readonly live: Map<string, string>;
  /**
   * Chunk id → the version listed, for every chunk in {@link ChunkListing.live} when the chunks
   * were listed with versions; listed by name ({@link listStore} on a store with `listKeys`),
   * only for the chunks {@link addVersions} looked up.
   */
  readonly liveVersions: Map<string, string>;
  /** Hidden copies a sweep made (see retention/chunk-sweep.ts): id → [{ key, hidden at (ms) }]. */
  readonly hidden: Map<string, { readonly key: string; readonly atMs: number }[]>;
}

/** Files `key` in `listing` when it is a chunk key (live or hidden), with its version when known; false when it is not one. */
function addChunk(listing: ChunkListing, key: string, version?: string): boolean {
  if (!key.startsWith(CHUNK_PREFIX)) return false;
  const name = key.slice(key.lastIndexOf('/') + 1);
  const at = name.indexOf(HIDDEN_INFIX);
  if (at < 0) {
    listing.live.set(name, key);
    if (version !== undefined) listing.liveVersions.set(name, version);
    return true;
  }
  const atMs = Number(name.slice(at + HIDDEN_INFIX.length));
  const id = name.slice(0, at);
  if (!Number.isSafeInteger(atMs)) return true;
  let copies = listing.hidden.get(id);
  if (!copies) listing.hidden.set(id, (copies = []));
  copies.push({ key, atMs });
  return true;
}

/** Every chunk key of `storage`, live and hidden. */
export async function listChunks(storage: StorageAdapter): Promise<ChunkListing> {
  const listing: ChunkListing = { live: new Map(), liveVersions: new Map(), hidden: new Map() };
  for await (const entry of storage.list(CHUNK_PREFIX)) addChunk(listing, entry.key, entry.version);
  return listing;
}

/**
 * Whether `storage` holds any chunk key, live or hidden: the first key of a listing of the
 * chunks' prefix alone (by name, where the store lists names for less). A sweep of a store that
 * holds none has nothing to free, and a listing of the whole store would cost it far more.
 */
export async function holdsChunks(storage: StorageAdapter): Promise<boolean> {
  for await (const key of listKeysOf(storage, CHUNK_PREFIX)) if (key.startsWith(CHUNK_PREFIX)) return true;
  return false;
}

/** A whole store as one listing saw it: its chunks, and the documents that may reference them. */
export interface StoreListing {
  readonly chunks: ChunkListing;
  /** Keys outside the chunks small enough to be envelopes (what {@link markChunks} reads). */
  readonly documents: StorageEntry[];
}

/**
 * The chunks and the documents of `storage` in one listing (every key once), instead of the
 * chunks and then everything again. A listing walks keys in order, so a document whose key
 * sorts before the chunks and that was written, with a new chunk, while the walk went between
 * them would be missed while its chunk is listed: the documents sorting before the chunks are
 * listed again once the walk is over (by their first segment), so such a chunk is not taken
 * for unreferenced. Missing one (under a first segment new since) costs a needless hide that
 * the next sweep undoes, never a chunk: that is the grace rule's case, as for a document
 * written after any listing.
 */
export async function listStore(storage: StorageAdapter): Promise<StoreListing> {
  const listKeys = ownListKeysOf(storage);
  if (listKeys) return listStoreByName(storage, listKeys);
  const chunks: ChunkListing = { live: new Map(), liveVersions: new Map(), hidden: new Map() };
  const documents = new Map<string, StorageEntry>();
  // The first segments of every key before the chunks, not only of the small ones: an envelope can appear among larger documents.
  const segments = new Set<string>();
  for await (const entry of storage.list('')) {
    if (addChunk(chunks, entry.key, entry.version)) continue;
    if (entry.key < CHUNK_PREFIX) segments.add(firstSegment(entry.key));
    if (mayReference(entry)) documents.set(entry.key, entry);
  }
  // Many segments (runs at the root) would be a listing call each: the whole store once more is fewer calls.
  for (const prefix of segments.size > RELIST_MAX_SEGMENTS ? [''] : segments)
    for await (const entry of storage.list(prefix)) if (mayReference(entry)) documents.set(entry.key, entry);
  return { chunks, documents: [...documents.values()] };
}

/**
 * {@link listStore} on a store that lists names for less than entries (fs: no `stat` of each
 * file): every key by name, then the documents with their sizes and versions by their first
 * segments — all of them after the chunks, which the argument above asks only of those sorting
 * before. The chunks' versions are left out: {@link addVersions} looks up the few a sweep needs.
 */
async function listStoreByName(storage: StorageAdapter, listKeys: (prefix: string) => AsyncIterable<string>): Promise<StoreListing> {
  const chunks: ChunkListing = { live: new Map(), liveVersions: new Map(), hidden: new Map() };
  const segments = new Set<string>();
  for await (const key of listKeys('')) if (!addChunk(chunks, key)) segments.add(firstSegment(key));
  const documents = new Map<string, StorageEntry>();
  // A listing call per segment, even for many: each lists only documents, where one of the whole store would stat every chunk again.
  for (const prefix of segments) for await (const entry of storage.list(prefix)) if (mayReference(entry)) documents.set(entry.key, entry);
  return { chunks, documents: [...documents.values()] };
}

/** Version lookups {@link addVersions} has in flight at once. */
const VERSION_LOOKUPS = 16;

/**
 * Looks up the versions that `listing` lacks of its live chunks `wanted` picks, each by a
 * listing of its own key as the prefix (one `stat` on fs, not one per chunk of the store), and
 * files them in `listing.liveVersions`. A chunk gone since is taken out of `listing.live`. The
 * number of lookups made.
 */
export async function addVersions(storage: StorageAdapter, listing: ChunkListing, wanted: (id: string) => boolean): Promise<number> {
  // Picked from listing.live itself: every id looked up has a key there.
  const missing = [...listing.live.keys()].filter((id) => !listing.liveVersions.has(id) && wanted(id));
  const versions = await mapLimit(missing, VERSION_LOOKUPS, (id) => versionOfKey(storage, listing.live.get(id)!));
  missing.forEach((id, i) => {
    const version = versions[i];
    if (version === undefined) listing.live.delete(id);
    else listing.liveVersions.set(id, version);
  });
  return missing.length;
}

/** The version `key` is listed at now, or undefined when it is not stored. */
async function versionOfKey(storage: StorageAdapter, key: string): Promise<string | undefined> {
  for await (const entry of storage.list(key)) if (entry.key === key) return entry.version;
  return undefined;
}

/** Most first segments {@link listStore} lists again one by one. */
const RELIST_MAX_SEGMENTS = 16;

/** The first segment of `key`: `run/`, or the whole key when it has no slash. */
function firstSegment(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? key : key.slice(0, slash + 1);
}

/** What marking found: every chunk the store's documents reference, and the ones it could not read. */
export interface ChunkMarks {
  /** Chunk id → a document that references it. */
  readonly referenced: Map<string, string>;
  /** Nodes of a chunk tree that could not be read (missing or damaged): what is below them is unknown. */
  readonly unreadable: { readonly id: string; readonly document: string; readonly reason: string }[];
}

/** Whether a listed key can be a document that references chunks (not a chunk; small enough to be an envelope, gzipped or not). */
const mayReference = (entry: StorageEntry): boolean => !entry.key.startsWith(CHUNK_PREFIX) && entry.size <= ENVELOPE_MAX_BYTES;

/** The envelope a stored document is, if it is one (gzipped envelopes too: retention compresses history). */
function envelopeOf(key: string, bytes: Uint8Array): ReturnType<typeof decodeEnvelope> {
  try {
    const plain = isGzip(bytes) ? gunzip(bytes, key, { maxBytes: ENVELOPE_MAX_BYTES }) : bytes;
    return looksChunked(plain) ? decodeEnvelope(plain, key) : undefined;
  } catch (err) {
    if (isCheckpointError(err)) return undefined; // not an envelope (or a damaged one: the read path reports it)
    throw err;
  }
}

/** What a document references: the ids of its envelope, at that depth of its chunk tree (none: not an envelope). */
type DocumentRefs = { readonly ids: readonly string[]; readonly depth: number } | undefined;

/**
 * What marking learned of a store that stays true, so that a sweep run again over the same
 * adapter (the automatic sweep, every few dozen checkpoints) reads only what changed: the
 * children of each tree node read and verified (a node is named by its content: its children
 * never change), and each document's references at the version listed (a version names one
 * stored value). Damage to a node after it was read is not seen here again; `savepoint verify`
 * reads every chunk.
 */
interface MarkMemory {
  readonly nodes: Map<string, readonly string[]>;
  /** Child ids held in `nodes` (bounded: see {@link MEMORY_MAX_IDS}). */
  nodeIds: number;
  documents: Map<string, { readonly version: string; readonly refs: DocumentRefs }>;
}

/** Most node children a store's mark memory holds (about 100 bytes each): past it, it starts afresh. */
const MEMORY_MAX_IDS = 1 << 17;

const memories = new WeakMap<StorageAdapter, MarkMemory>();

function memoryOf(storage: StorageAdapter): MarkMemory {
  let m = memories.get(storage);
  if (!m) memories.set(storage, (m = { nodes: new Map(), nodeIds: 0, documents: new Map() }));
  return m;
}

/** Options of {@link markChunks}. */
export interface MarkOptions {
  /** Keep what this marking learned for the next over the same adapter, and use what the last one learned. @default false */
  readonly remember?: boolean;
  /** The documents to read, as a listing already found them ({@link listStore}); else the store is listed. */
  readonly documents?: readonly StorageEntry[];
}

/** A fresh memory for one marking that keeps nothing. */
const forgetful = (): MarkMemory => ({ nodes: new Map(), nodeIds: 0, documents: new Map() });

/** The references of each listed document: read again only where its version is not the one remembered. */
async function documentRefs(storage: StorageAdapter, docs: readonly StorageEntry[], memory: MarkMemory): Promise<[string, DocumentRefs][]> {
  const seen = new Map<string, { readonly version: string; readonly refs: DocumentRefs }>();
  await mapLimit(docs, 8, async (entry) => {
    const known = memory.documents.get(entry.key);
    if (known && known.version === entry.version) return void seen.set(entry.key, known);
    const stored = await storage.get(entry.key);
    if (!stored) return; // deleted since the listing
    const envelope = envelopeOf(entry.key, stored.bytes);
    seen.set(entry.key, { version: stored.version, refs: envelope && { ids: envelope.ids, depth: envelope.depth } });
  });
  // Only the documents listed now: the deleted ones drop out.
  memory.documents = seen;
  return [...seen].map(([key, d]) => [key, d.refs]);
}

/** The children of tree node `id`, from memory or read and verified (then remembered). */
async function childrenOf(storage: StorageAdapter, id: string, addressing: ReturnType<typeof addressingOf>, memory: MarkMemory) {
  const known = memory.nodes.get(id);
  if (known) return known;
  const children = decodeNode(await readChunk(storage, id, addressing), id);
  if (memory.nodeIds + children.length > MEMORY_MAX_IDS) {
    memory.nodes.clear();
    memory.nodeIds = 0;
  }
  memory.nodes.set(id, children);
  memory.nodeIds += children.length;
  return children;
}

/**
 * Marks every chunk referenced by a document of `storage` (mark and sweep's mark): each
 * document that is an envelope, and every node of its chunk tree, read and verified (with
 * `remember`, only those the last marking of this adapter did not read). A node that cannot be
 * read is reported in `unreadable` (a sweep then deletes nothing).
 */
export async function markChunks(storage: StorageAdapter, options: MarkOptions = {}): Promise<ChunkMarks> {
  const referenced = new Map<string, string>();
  const unreadable: ChunkMarks['unreadable'] = [];
  const memory = options.remember ? memoryOf(storage) : forgetful();
  const docs: StorageEntry[] = options.documents ? [...options.documents] : [];
  if (!options.documents) for await (const entry of storage.list('')) if (mayReference(entry)) docs.push(entry);
  const addressing = addressingOf(storage);
  let level: { id: string; depth: number; document: string }[] = [];
  for (const [document, refs] of await documentRefs(storage, docs, memory))
    if (refs) for (const id of refs.ids) level.push({ id, depth: refs.depth, document });
  const visitedNodes = new Set<string>();
  while (level.length > 0) {
    const next: typeof level = [];
    const nodes: typeof level = [];
    for (const ref of level) {
      if (!referenced.has(ref.id)) referenced.set(ref.id, ref.document);
      if (ref.depth > 0 && !visitedNodes.has(ref.id)) {
        visitedNodes.add(ref.id);
        nodes.push(ref);
      }
    }
    await mapLimit(nodes, 16, async (ref) => {
      try {
        for (const child of await childrenOf(storage, ref.id, addressing, memory))
          next.push({ id: child, depth: ref.depth - 1, document: ref.document });
      } catch (err) {
        if (!isCheckpointError(err)) throw err;
        unreadable.push({ id: ref.id, document: ref.document, reason: err.message });
      }
    });
    level = next;
  }
  return { referenced, unreadable };
}

/** What {@link auditChunks} found. */
export interface ChunkAudit {
  /** Chunks some document references. */
  readonly referenced: number;
  /** Referenced chunks stored neither under their key nor hidden: id → a document that references it. */
  readonly missing: { readonly id: string; readonly document: string }[];
  /** Referenced chunks whose bytes do not match their id, or nodes that cannot be read. */
  readonly damaged: { readonly id: string; readonly document: string; readonly reason: string }[];
  /** Referenced chunks only a hidden copy holds (a sweep puts them back). */
  readonly hiddenReferenced: string[];
  /** Chunks stored under their key that no document references (a sweep frees them). */
  readonly unreferenced: string[];
}

/** Checks every chunk the store's documents reference (read and verified against its id) and lists those nothing references. */
export async function auditChunks(storage: StorageAdapter): Promise<ChunkAudit> {
  const chunks = await listChunks(storage);
  const marks = await markChunks(storage);
  const audit: ChunkAudit = {
    referenced: marks.referenced.size,
    missing: [],
    damaged: [...marks.unreadable],
    hiddenReferenced: [],
    unreferenced: [],
  };
  const addressing = addressingOf(storage);
  await mapLimit([...marks.referenced], 16, async ([id, document]) => {
    if (!chunks.live.has(id)) {
      if (chunks.hidden.has(id)) audit.hiddenReferenced.push(id);
      else audit.missing.push({ id, document });
      return;
    }
    const stored = await storage.get(chunks.live.get(id)!);
    const checked = stored && (await checkChunk(addressing, id, stored.bytes));
    if (!checked) audit.missing.push({ id, document });
    else if ('damage' in checked) audit.damaged.push({ id, document, reason: `chunk ${chunks.live.get(id)!} ${checked.damage}` });
  });
  for (const id of chunks.live.keys()) if (!marks.referenced.has(id)) audit.unreferenced.push(id);
  return audit;
}
