import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { holdsWrites } from '../contract/buffered-storage.js';
import { WIDE_FANOUT } from '../codec/chunking.js';
import type { Clock } from '../contract/clock.js';
import type { Snapshot } from '../contract/snapshot.js';
import { documentReadLimit, getBounded } from '../snapshot-io/bounded-read.js';
import { decodeStoredSnapshot } from '../snapshot-io/read-snapshot.js';
import { createDecodedCache, decodeCached, keepWritten, readCached, type DecodedCache } from './decoded-cache.js';
import type { StorageAdapter, StoredObject } from '../contract/storage.js';
import { copiesOnPut } from '../contract/synchronous-storage.js';
import { assertCheckpointId } from './keys.js';
import { snapshotOf, type SealedMembers } from './document.js';
import { writesPlainAsJson } from './plain-json.js';
import { langGraphProfile, type LangGraphPayload } from './profile.js';
import type { RunState } from './run-state.js';
import type { WriteReport } from '../writer/ordered-write.js';
import { decodeStoredWrites, type WritesDocument } from './writes.js';

/** Size of a saver's sealing buffer (see {@link sealBuffer}): larger documents get a buffer of their own. */
const SCRATCH_BYTES = 32 * 1024;

/**
 * Everything a `SavepointSaver` holds between calls: its options, what it knows of the runs it
 * met, and the caches that keep a steady-state put free of awaits. The saver's steps are plain
 * functions over it (saver-put.ts, saver-writes.ts, saver-retention.ts, saver-reads.ts).
 */
export interface SaverState {
  readonly storage: StorageAdapter;
  readonly keepLast: number | false;
  readonly clock: Clock;
  /** The saver itself, for its serializer (`serde`, which LangGraph lets a caller set) and `getNextVersion`. */
  readonly saver: BaseCheckpointSaver;
  /** Each run's state as it loads (see saver-runs.ts). */
  readonly runs: Map<string, Promise<RunState>>;
  /** The run states of `runs` that have loaded, so a put or putWrites of a known run needs no await for it. */
  readonly loaded: Map<string, RunState>;
  /** Run ids of recent (thread, namespace) pairs: runIdOf is async (a long id is hashed). Cleared when it grows. */
  readonly runIds: Map<string, string>;
  /** The (thread, namespace) pair the last put or putWrites named, and its run id: a graph names the same one call after call. */
  lastRun: { readonly threadId: string; readonly ns: string; readonly runId: string } | undefined;
  /** The last two checkpoint ids that passed `assertCheckpointId` (see {@link assertId}). */
  checkedId: string | undefined;
  checkedIdBefore: string | undefined;
  /** Whether the store copies a put's bytes before the call returns (a `SynchronousStorage`), so documents may be sealed in {@link sealBuffer}. */
  readonly storeCopies: boolean;
  /** Made at the first seal (see {@link sealBuffer}): a saver that never puts holds none. */
  scratch: Uint8Array | undefined;
  /** Whether plain JSON data is written as its JSON text without calling the serializer (`writesPlainAsJson`): decided at the first put or putWrites. */
  plainAsJson: boolean | undefined;
  /** Checkpoint documents are stored as content chunks when large enough (the `dedup` option). */
  readonly dedup: boolean;
  /** Checkpoint documents as decoded, with the bytes they were decoded from (see decoded-cache.ts). */
  readonly documents: DecodedCache<Snapshot<LangGraphPayload>>;
  /** Writes documents as decoded, likewise. */
  readonly writes: DecodedCache<WritesDocument>;
}

/**
 * The sizes from which the saver stores a task's writes document and a checkpoint document as
 * content chunks when a long string starts in them (`isChunkable`; the writer's documents, from
 * 16 KiB). A message a task writes is then its own leaves in the writes document (its ends kept
 * in the envelope, codec/chunk-edges.ts), which the next checkpoint, holding the same message,
 * finds stored: it is stored once, not once more in every writes document, and a short
 * conversation's checkpoints share their messages too. Not smaller: a small state's documents
 * (1–2 KB, changing every step) would cost a chunk put more each and share nothing. On the dedup
 * bench's conversation, checkpoints from 2 KiB stored 1 % less than from 4 KiB (its first
 * checkpoints, 2–4 KB, share their first message's leaves), from 1 KiB hardly less again.
 */
export const WRITES_CHUNKED_FROM = 2048;
export const CHECKPOINTS_CHUNKED_FROM = 2048;
/**
 * The node fanout of the saver's chunk trees: 4, not the writer's 8. A conversation appends at
 * the end, rewriting the last node of each level with every message, and a smaller node is fewer
 * ids rewritten: the 200-turn conversation of the dedup bench stored 0.866 MB with 4, 0.898 with 8.
 */
export const CHUNK_FANOUT = 4;
/** Whether the store indexes its documents' metadata (`metadataListing`: postgresStorage's column), so the saver's `knownMetadata` spares it a parse. */
export const indexesMetadata = (state: SaverState): boolean => state.storage.capabilities.metadataListing === true;

/**
 * Below what length of a document's text the saver works out its metadata column for the store
 * (a put's `knownMetadata`): only for a store that {@link indexesMetadata}, and only for a document
 * it may be given whole — from `chunkedFrom` on, with dedup, it may go as content chunks, which
 * name no metadata (a shorter one may still be packed whole into an envelope: the store then
 * drops what was said, as it is for other bytes). Elsewhere 0: the check scans the document's
 * whole text, a cost for nothing on any other store.
 */
export function metadataColumnBelow(state: SaverState, chunkedFrom: number): number {
  if (!indexesMetadata(state)) return 0;
  return state.dedup ? chunkedFrom : Number.POSITIVE_INFINITY;
}

/**
 * The saver's fanout on `storage`: where each key is a file (`keysAreFiles`: fsStorage's file
 * layout), a node is a file created, and fewer levels ({@link WIDE_FANOUT}, with up to 4 ids in
 * the envelope) make fewer: the 200-turn conversation of the dedup bench made 3.4 chunk files a
 * turn instead of 7.0, storing about 11 % more bytes. Elsewhere, {@link CHUNK_FANOUT}: bytes
 * count there.
 */
export const chunkFanoutOf = (storage: StorageAdapter): number => (storage.capabilities.keysAreFiles === true ? WIDE_FANOUT : CHUNK_FANOUT);

/** What a saver keeps of decoded checkpoint documents (a chunked one counts the size of the whole) and of writes documents. */
const DOCUMENTS_CACHE_BYTES = 16 * 1024 * 1024;
const WRITES_CACHE_BYTES = 4 * 1024 * 1024;

export function createSaverState(
  saver: BaseCheckpointSaver,
  storage: StorageAdapter,
  keepLast: number | false,
  clock: Clock,
  dedup = true,
): SaverState {
  return {
    storage,
    keepLast,
    clock,
    saver,
    runs: new Map(),
    loaded: new Map(),
    runIds: new Map(),
    lastRun: undefined,
    checkedId: undefined,
    checkedIdBefore: undefined,
    storeCopies: copiesOnPut(storage),
    scratch: undefined,
    plainAsJson: undefined,
    dedup,
    documents: createDecodedCache(DOCUMENTS_CACHE_BYTES),
    writes: createDecodedCache(WRITES_CACHE_BYTES),
  };
}

/**
 * Where documents are sealed when the store copies a put's bytes before the call returns:
 * one buffer per saver, made at its first put, instead of a new one per document, whose
 * allocation and collection cost more than sealing a small document. Each sealed view goes
 * straight into one store call, in the same synchronous run, and is never kept.
 */
export function sealBuffer(state: SaverState): Uint8Array | undefined {
  return state.storeCopies ? (state.scratch ??= new Uint8Array(SCRATCH_BYTES)) : undefined;
}

/**
 * Whether a group of writes goes in one batch that the store commits as one (one statement, one
 * WAL flush on PostgreSQL): a checkpoint with its head claim, a writes document with its chunks.
 * Not where the store may hold writes (githubStorage), settling a batch's conditions later,
 * while a claim needs its answer before the put returns. fsStorage's journal holds nothing (its
 * `flush` waits for files already durable in its journal): one commit there, not two.
 */
export const oneCommit = (state: SaverState): boolean =>
  state.storage.capabilities.atomicBatch && typeof state.storage.batch === 'function' && !holdsWrites(state.storage);

/**
 * `assertCheckpointId`, skipped for the last two ids that passed it (a pure check): LangGraph
 * names each checkpoint id three times — put's id, the next put's parent, putWrites' checkpoint.
 */
export function assertId(state: SaverState, id: unknown, field?: string): asserts id is string {
  if (typeof id === 'string' && (id === state.checkedId || id === state.checkedIdBefore)) return;
  assertCheckpointId(id, field);
  state.checkedIdBefore = state.checkedId;
  state.checkedId = id;
}

export async function decidePlain(state: SaverState): Promise<boolean> {
  return (state.plainAsJson ??= await writesPlainAsJson(state.saver.serde));
}

/** Bytes of a checkpoint document the saver reads at most (the profile's limit). */
export const DOCUMENT_READ_LIMIT = documentReadLimit(langGraphProfile);

/** The checkpoint document stored under `key` (readSnapshot's read, decoded once per stored bytes). */
export function readCheckpoint(state: SaverState, key: string): Promise<Snapshot<LangGraphPayload> | undefined> {
  return readCached(
    state.documents,
    state.storage,
    key,
    (storage, k) => getBounded(storage, k, DOCUMENT_READ_LIMIT),
    (bytes) => decodeStoredSnapshot(state.storage, langGraphProfile, key, bytes),
  );
}

/**
 * The checkpoint document in `stored`, just read from `key` by another read than
 * {@link readCheckpoint}'s (a linked read): decoded as readCheckpoint decodes it; a document over
 * the read limit is read again by readCheckpoint, which refuses it as it refuses any.
 */
export function checkpointFrom(
  state: SaverState,
  key: string,
  stored: StoredObject | undefined,
): Promise<Snapshot<LangGraphPayload> | undefined> {
  if (stored && stored.bytes.length > DOCUMENT_READ_LIMIT) return readCheckpoint(state, key);
  return decodeCached(state.documents, key, stored, (bytes) => decodeStoredSnapshot(state.storage, langGraphProfile, key, bytes));
}

/** The writes document in `stored`, just read from `key` (see {@link checkpointFrom}). */
export function writesDocumentFrom(state: SaverState, key: string, stored: StoredObject): Promise<WritesDocument | undefined> {
  return decodeCached(state.writes, key, stored, (bytes) => decodeStoredWrites(state.storage, key, bytes));
}

/**
 * Keeps the checkpoint document just written under `key` (sealed as `bytes` from `read`) for the
 * next read of it, by the version `report` gives the key: the next turn's read of the newest
 * checkpoint then neither reassembles its chunks nor parses and hashes it again. Not when the
 * store only queued the write (its versions may not be final yet).
 */
export function keepWrittenCheckpoint(
  state: SaverState,
  key: string,
  report: WriteReport,
  written: { readonly bytes: Uint8Array; readonly members: SealedMembers },
): void {
  const version = report.versions.get(key);
  if (version === undefined || report.pending) return;
  // The members alone are kept, not `written`: its sealed bytes (a buffer of their own on most stores) would stay alive with them.
  const members = written.members;
  keepWritten(state.documents, key, version, () => snapshotOf(members), written.bytes.length);
}

/** The writes document stored under `key`, decoded once per stored bytes. */
export function readWritesDocument(state: SaverState, key: string): Promise<WritesDocument | undefined> {
  return readCached(
    state.writes,
    state.storage,
    key,
    (storage, k) => storage.get(k),
    (bytes) => decodeStoredWrites(state.storage, key, bytes),
  );
}
