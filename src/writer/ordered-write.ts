import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import {
  createRunIndexEncoder,
  decodeRunIndexToKeep,
  emptyRunIndex,
  mergeRunIndex,
  pruneRunIndex,
  type RunIndex,
  type RunIndexEncoder,
  type RunIndexEntry,
} from '../codec/run-index.js';
import type { BatchOperation, KnownMetadata, StorageAdapter } from '../contract/storage.js';
import { isPendingResult } from '../contract/buffered-storage.js';
import { utf8Encode } from '../codec/utf8.js';
import { includesBytes } from '../snapshot-io/read-snapshot.js';
import type { WriteFence } from './run-lock.js';
import { chunkPlan, chunksDurable, type ChunkedPlan } from './chunk-step.js';

/** One key to create (history entry, part file, batch file): create-only, idempotent on equal bytes. */
export interface CreateOp {
  readonly key: string;
  readonly bytes: Uint8Array;
  /**
   * Makes this a merge-on-conflict create (a LangGraph task's pending writes, which a task may
   * send more than once): when the key exists, its stored bytes are merged with ours and
   * replaced on their version, instead of the key being foreign unless it holds our bytes.
   * Called with `undefined` when the key is gone again: it then returns our bytes, sealed anew
   * (`bytes` may be a view of a reused buffer, valid only until the first await).
   */
  readonly merge?: (stored: Uint8Array | undefined) => Uint8Array | Promise<Uint8Array>;
  /** Store this document as content chunks when it is large enough (see chunk-step.ts). */
  readonly chunk?: boolean;
  /** With `chunk`: the size from which it is large enough, when not `CHUNKED_MIN_BYTES` (codec/chunking.ts). */
  readonly chunkFrom?: number;
  /** With `chunk`: its chunk tree's node fanout, when not `NODE_FANOUT` (codec/chunking.ts). */
  readonly chunkFanout?: number;
  /** With `chunk`: too small for chunks, stored whole in an envelope, deflated, when that is smaller (snapshot-io/chunk-store.ts `packWhole`). */
  readonly packWhole?: boolean;
  /** Its metadata, known to the caller that built it, for the store (see {@link PutOp}). */
  readonly knownMetadata?: KnownMetadata | undefined;
}

/** One key to put unconditionally (a document only its writer names: the LangGraph saver's checkpoint document). */
export interface PutOp {
  readonly key: string;
  readonly bytes: Uint8Array;
  /** Store this document as content chunks when it is large enough (see chunk-step.ts). */
  readonly chunk?: boolean;
  /** With `chunk`: the size from which it is large enough, when not `CHUNKED_MIN_BYTES` (codec/chunking.ts). */
  readonly chunkFrom?: number;
  /** With `chunk`: its chunk tree's node fanout, when not `NODE_FANOUT` (codec/chunking.ts). */
  readonly chunkFanout?: number;
  /** Its metadata, known to the caller that built it, for the store (a put's `knownMetadata`; it describes `bytes` only, so it falls away when they are chunked). */
  readonly knownMetadata?: KnownMetadata | undefined;
}

/** One key to replace only if it still holds `ifVersion` (rewrite of the still-open snapshot). */
export interface ReplaceOp {
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly ifVersion: string;
  /** Store this document as content chunks when it is large enough (see chunk-step.ts). */
  readonly chunk?: boolean;
  /** Its metadata, known to the caller that built it, for the store (see {@link PutOp}). */
  readonly knownMetadata?: KnownMetadata | undefined;
}

/** Everything one group commit stores, in the order it is stored. */
export interface WritePlan {
  /**
   * Content chunks, stored before anything else (chunk-step.ts fills this in): a chunk's key
   * names its bytes, so putting one that exists stores the same bytes again, and a document is
   * never durable before a chunk it references.
   */
  readonly chunks?: readonly PutOp[];
  /** Part files first, then history entries (or one batch file) in sequence order. */
  readonly creates: readonly CreateOp[];
  /** Rewrites of the open snapshot's stored entry, adding coalesced triggers to its `source_details`. */
  readonly replaces: readonly ReplaceOp[];
  /** Unconditional puts, after the replaces (and the fence's confirmation), before `latest`. */
  readonly puts?: readonly PutOp[];
  /** A critical trigger's checkpoint: the batch is `urgent` (never held by the store). */
  readonly urgent?: boolean;
  /** The new `latest` document. */
  readonly latest?: { readonly key: string; readonly bytes: Uint8Array; readonly chunk?: boolean };
  /**
   * Entries to merge into the run index (conditional replace), and the `file_path`s of
   * entries to drop from it (the writer's automatic per-run retention; their files are
   * deleted only after this plan is durable).
   */
  readonly index?: { readonly key: string; readonly entries: readonly RunIndexEntry[]; readonly remove?: ReadonlySet<string> };
  /**
   * Keys to delete, after the index that no longer lists them: the files of snapshots the
   * per-run retention bound lets go. With an atomic batch they go in the same batch (one
   * commit instead of one more per checkpoint); on the sequential path they are deleted one by
   * one, in order, after everything else is stored (the writer deletes its own after the plan
   * is durable instead, and passes none there).
   */
  readonly deletes?: readonly string[];
}

/** The writer's cached copy of the run index and the version it was read or written at. */
export interface IndexState {
  doc?: RunIndex;
  version?: string;
  /** Reuses the bytes of the entries the previous rewrite shared (see createRunIndexEncoder). */
  encoder?: RunIndexEncoder;
}

/** What a successful {@link executeWrite} reports. */
export interface WriteReport {
  /** Version of every key written. */
  readonly versions: ReadonlyMap<string, string>;
  /** True when any put was accepted into the adapter's local durable-later queue. */
  readonly pending: boolean;
  readonly mode: 'sequential' | 'batch';
  /** Keys of merge-on-conflict creates ({@link CreateOp.merge}) that were merged into what was stored, not created. */
  readonly merged?: ReadonlySet<string>;
}

const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

const isConflict = (err: unknown): boolean => isCheckpointError(err, 'checkpoint_conflict');

function foreign(key: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `${key} holds content this writer did not write (another writer on the run?)`, {
    details: { key },
  });
}

/**
 * After a conditional write lost, tells whether the key already holds exactly our bytes —
 * an earlier attempt that landed although it reported failure ("timed out but landed").
 * Returns its version then; throws `checkpoint_conflict` when it holds something else.
 */
async function landedVersion(storage: StorageAdapter, key: string, bytes: Uint8Array): Promise<string | undefined> {
  const current = await storage.get(key);
  if (!current) return undefined;
  if (bytesEqual(current.bytes, bytes)) return current.version;
  throw foreign(key);
}

async function readIndex(storage: StorageAdapter, key: string, state: IndexState): Promise<void> {
  const current = await storage.get(key);
  state.version = current?.version;
  state.doc = undefined;
  if (current) {
    try {
      state.doc = decodeRunIndexToKeep(current.bytes, key);
    } catch {
      // A corrupt index is replaced (conditionally, on its version) by one rebuilt from our entries.
    }
  }
}

function mergedIndex(
  runId: string,
  state: IndexState,
  plan: NonNullable<WritePlan['index']>,
  now: string,
): { doc: RunIndex; bytes: Uint8Array } {
  let base = state.doc ?? emptyRunIndex(runId, now);
  let entries = plan.entries;
  const remove = plan.remove;
  if (remove && remove.size > 0) {
    base = pruneRunIndex(base, remove, now);
    // Entries re-indexed after a crash (unindexed files) may be the very ones being pruned.
    entries = entries.filter((e) => !remove.has(e.file_path));
  }
  const doc = mergeRunIndex(base, entries, now);
  return { doc, bytes: (state.encoder ??= createRunIndexEncoder()).encode(doc) };
}

/**
 * The index's metadata for a store that indexes documents' metadata (postgresStorage's column): an
 * index names none, so `'{}'`, which spares the store a parse of the whole index at each rewrite.
 * Left to the store where a `\u` escape could spell a member's name or a character `jsonb` refuses.
 */
export function indexMetadata(storage: StorageAdapter, bytes: Uint8Array): KnownMetadata | undefined {
  return storage.capabilities.metadataListing === true && !includesBytes(bytes, UNICODE_ESCAPE, 0) ? { bytes, json: '{}' } : undefined;
}

/** `\u`, as the store's own check reads it (client-metadata.ts): found anywhere, the store decides. */
const UNICODE_ESCAPE = utf8Encode('\\u');

/** The index put of one round: the merged index, conditional on the version last read or written. */
interface IndexPut {
  readonly key: string;
  readonly merged: { doc: RunIndex; bytes: Uint8Array };
  readonly version: string | undefined;
  readonly knownMetadata: KnownMetadata | undefined;
}

/**
 * One round's batch, in the crash-safe order: creates, replaces, unconditional puts, `latest`,
 * the fence's check, the index, then the deletes the index no longer lists.
 */
export function batchOperations(
  plan: WritePlan,
  creates: readonly CreateOp[],
  replaces: readonly ReplaceOp[],
  fence?: WriteFence,
  indexPut?: IndexPut,
): BatchOperation[] {
  const ops: BatchOperation[] = [];
  if (plan.chunks) for (const c of plan.chunks) ops.push({ type: 'put', key: c.key, bytes: c.bytes });
  for (const c of creates) ops.push({ type: 'put', key: c.key, bytes: c.bytes, ifAbsent: true, knownMetadata: c.knownMetadata });
  for (const r of replaces) ops.push({ type: 'put', key: r.key, bytes: r.bytes, ifVersion: r.ifVersion, knownMetadata: r.knownMetadata });
  if (plan.puts) for (const p of plan.puts) ops.push({ type: 'put', key: p.key, bytes: p.bytes, knownMetadata: p.knownMetadata });
  if (plan.latest) ops.push({ type: 'put', key: plan.latest.key, bytes: plan.latest.bytes });
  if (fence?.check) ops.push(fence.check);
  if (indexPut)
    ops.push({
      type: 'put',
      key: indexPut.key,
      bytes: indexPut.merged.bytes,
      knownMetadata: indexPut.knownMetadata,
      ...(indexPut.version !== undefined ? { ifVersion: indexPut.version } : { ifAbsent: true }),
    });
  if (plan.deletes) for (const key of plan.deletes) ops.push({ type: 'delete', key });
  return ops;
}

/**
 * Stores a group in the crash-safe order: history entries create-only (parts before the
 * document that references them), then the rewrite of the open snapshot, then unconditional
 * puts and `latest` (replace), then the index (conditional replace, merged with
 * `mergeRunIndex` and retried on a conflict), then the deletes. A crash between any two calls
 * leaves the previous `latest` intact or the new one complete, and every acknowledged snapshot
 * in history.
 *
 * With `useBatch` (adapter declares `atomicBatch`), the same operations go in one `batch()`.
 * Every step is idempotent, so the whole plan can be retried after an ambiguous failure.
 *
 * `fence` (the run lease, see run-lock.ts) adds its `check` to the batch, and is confirmed
 * after a batch conflict and, on the sequential path, before `latest` is replaced.
 */
export function executeWrite(
  storage: StorageAdapter,
  runId: string,
  plan: WritePlan,
  index: IndexState,
  now: () => string,
  useBatch: boolean,
  fence?: WriteFence,
): Promise<WriteReport> {
  let prepared: ChunkedPlan | Promise<ChunkedPlan> | undefined;
  try {
    prepared = chunkPlan(storage, plan);
  } catch (err) {
    return Promise.reject(err); // as an async function would: callers see every failure as a rejection
  }
  // Nothing to store as chunks (a small checkpoint): the write's own promise, no step around it.
  if (prepared === undefined) return writePlan(storage, runId, plan, index, now, useBatch, fence);
  return writeChunked(storage, runId, prepared, index, now, useBatch, fence);
}

const writePlan = (
  storage: StorageAdapter,
  runId: string,
  plan: WritePlan,
  index: IndexState,
  now: () => string,
  useBatch: boolean,
  fence?: WriteFence,
): Promise<WriteReport> =>
  useBatch && storage.batch
    ? writeBatch(storage, runId, plan, index, now, fence)
    : writeSequential(storage, runId, plan, index, now, fence);

/** A plan with documents stored as chunks: its chunks are known stored once it is durable. */
async function writeChunked(
  storage: StorageAdapter,
  runId: string,
  prepared: ChunkedPlan | Promise<ChunkedPlan>,
  index: IndexState,
  now: () => string,
  useBatch: boolean,
  fence?: WriteFence,
): Promise<WriteReport> {
  const chunked = prepared instanceof Promise ? await prepared : prepared;
  const report = await writePlan(storage, runId, chunked.plan, index, now, useBatch, fence);
  chunksDurable(storage, chunked);
  return report;
}

/** Chunks stored at once on the sequential path (each is its own durable put). */
const CHUNK_PUTS_AT_ONCE = 16;

/** Puts `chunks` (a few at once); returns whether any was queued. */
async function putChunks(storage: StorageAdapter, chunks: readonly PutOp[], versions: Map<string, string>): Promise<boolean> {
  let pending = false;
  for (let i = 0; i < chunks.length; i += CHUNK_PUTS_AT_ONCE) {
    const slice = chunks.slice(i, i + CHUNK_PUTS_AT_ONCE);
    const results = await Promise.all(slice.map((c) => storage.put(c.key, c.bytes)));
    results.forEach((r, j) => {
      versions.set(slice[j]!.key, r.version);
      pending ||= isPendingResult(r);
    });
  }
  return pending;
}

const URGENT = Object.freeze({ urgent: true });

/** The batch path of {@link executeWrite}: one `batch()` a round, retried after finding out which condition lost. */
async function writeBatch(
  storage: StorageAdapter,
  runId: string,
  plan: WritePlan,
  index: IndexState,
  now: () => string,
  fence?: WriteFence,
): Promise<WriteReport> {
  const versions = new Map<string, string>();
  // Filled only after a conflict (merge-on-conflict creates): made then.
  let merged: Set<string> | undefined;
  let creates = plan.creates;
  let replaces = plan.replaces;
  for (let round = 0; ; round++) {
    let indexPut: IndexPut | undefined;
    if (plan.index) {
      const merged = mergedIndex(runId, index, plan.index, now());
      indexPut = { key: plan.index.key, merged, version: index.version, knownMetadata: indexMetadata(storage, merged.bytes) };
    }
    const ops = batchOperations(plan, creates, replaces, fence, indexPut);
    try {
      const outcomes = ops.length > 0 ? await (plan.urgent ? storage.batch!(ops, URGENT) : storage.batch!(ops)) : [];
      for (const o of outcomes) if (o.type === 'put') versions.set(o.key, o.version);
      if (indexPut) {
        index.doc = indexPut.merged.doc;
        index.version = versions.get(indexPut.key);
      }
      // An adapter with a durable-later queue (githubStorage under an exhausted rate limit) marks queued puts.
      let queued = false;
      for (const o of outcomes) if (o.type === 'put' && isPendingResult(o)) queued = true;
      return merged && merged.size > 0
        ? { versions, pending: queued, mode: 'batch', merged }
        : { versions, pending: queued, mode: 'batch' };
    } catch (err) {
      if (!isConflict(err) || round >= 4) throw err;
      await fence?.confirm(); // the lease's check lost: checkpoint_run_locked, nothing to reconcile
      merged ??= new Set<string>();
      ({ creates, replaces } = await reconcile(storage, creates, replaces, versions, merged));
      if (plan.index) await readIndex(storage, plan.index.key, index);
    }
  }
}

/**
 * After a batch conflict, finds out which condition lost: keys an earlier attempt already
 * stored drop out, foreign content is a real conflict, a merge-on-conflict create that finds
 * its key taken becomes a replace of what it merged with.
 */
async function reconcile(
  storage: StorageAdapter,
  creates: readonly CreateOp[],
  replaces: readonly ReplaceOp[],
  versions: Map<string, string>,
  merged: Set<string>,
): Promise<{ creates: CreateOp[]; replaces: ReplaceOp[] }> {
  const keptCreates: CreateOp[] = [];
  const keptReplaces: ReplaceOp[] = [];
  for (const c of creates) {
    if (c.merge) {
      const current = await storage.get(c.key);
      if (!current) keptCreates.push({ key: c.key, bytes: await c.merge(undefined), merge: c.merge });
      else {
        keptReplaces.push({ key: c.key, bytes: await c.merge(current.bytes), ifVersion: current.version });
        merged.add(c.key);
      }
      continue;
    }
    const landed = await landedVersion(storage, c.key, c.bytes);
    if (landed === undefined) keptCreates.push(c);
    else versions.set(c.key, landed);
  }
  for (const r of replaces) {
    const current = await storage.get(r.key);
    if (current && bytesEqual(current.bytes, r.bytes)) versions.set(r.key, current.version);
    else if (!current || current.version !== r.ifVersion) throw foreign(r.key);
    else keptReplaces.push(r);
  }
  return { creates: keptCreates, replaces: keptReplaces };
}

/** The sequential path of {@link executeWrite}: one call a key, in the crash-safe order. */
async function writeSequential(
  storage: StorageAdapter,
  runId: string,
  plan: WritePlan,
  index: IndexState,
  now: () => string,
  fence?: WriteFence,
): Promise<WriteReport> {
  const versions = new Map<string, string>();
  const merged = new Set<string>();
  let pending = plan.chunks && plan.chunks.length > 0 ? await putChunks(storage, plan.chunks, versions) : false;
  for (const c of plan.creates) {
    try {
      const r = await storage.put(c.key, c.bytes, { ifAbsent: true, knownMetadata: c.knownMetadata });
      versions.set(c.key, r.version);
      pending ||= isPendingResult(r);
    } catch (err) {
      if (!isConflict(err)) throw err;
      if (c.merge) {
        if (await mergeCreate(storage, c, versions, merged)) pending = true;
        continue;
      }
      const landed = await landedVersion(storage, c.key, c.bytes);
      if (landed === undefined) throw err;
      versions.set(c.key, landed);
    }
  }
  for (const r of plan.replaces) {
    try {
      const res = await storage.put(r.key, r.bytes, { ifVersion: r.ifVersion, knownMetadata: r.knownMetadata });
      versions.set(r.key, res.version);
      pending ||= isPendingResult(res);
    } catch (err) {
      if (!isConflict(err)) throw err;
      const landed = await landedVersion(storage, r.key, r.bytes);
      if (landed === undefined) throw err;
      versions.set(r.key, landed);
    }
  }
  // A writer that lost its lease while creating history must not replace another writer's latest.
  await fence?.confirm();
  for (const p of plan.puts ?? []) {
    const r = await storage.put(p.key, p.bytes, { knownMetadata: p.knownMetadata });
    versions.set(p.key, r.version);
    if (isPendingResult(r)) pending = true;
  }
  if (plan.latest) {
    const r = await storage.put(plan.latest.key, plan.latest.bytes);
    versions.set(plan.latest.key, r.version);
    pending ||= isPendingResult(r);
  }
  if (plan.index && (await writeIndex(storage, runId, plan.index, index, now, versions))) pending = true;
  for (const key of plan.deletes ?? []) await storage.delete(key);
  return { versions, pending, mode: 'sequential', ...(merged.size > 0 ? { merged } : {}) };
}

/** Replaces the run index (merged with our entries), re-read and merged again on a conflict. Returns whether the put was queued. */
async function writeIndex(
  storage: StorageAdapter,
  runId: string,
  plan: NonNullable<WritePlan['index']>,
  index: IndexState,
  now: () => string,
  versions: Map<string, string>,
): Promise<boolean> {
  for (let round = 0; ; round++) {
    const merged = mergedIndex(runId, index, plan, now());
    try {
      const knownMetadata = indexMetadata(storage, merged.bytes);
      const r = await storage.put(
        plan.key,
        merged.bytes,
        index.version !== undefined ? { ifVersion: index.version, knownMetadata } : { ifAbsent: true, knownMetadata },
      );
      index.doc = merged.doc;
      index.version = r.version;
      versions.set(plan.key, r.version);
      return isPendingResult(r);
    } catch (err) {
      if (!isConflict(err) || round >= 4) throw err;
      await readIndex(storage, plan.key, index);
    }
  }
}

/**
 * A merge-on-conflict create whose key was taken: merges with what is stored and replaces it
 * on its version (or creates it again when it is gone), as often as the key moves meanwhile,
 * three times at most. Returns whether the put was queued.
 */
async function mergeCreate(
  storage: StorageAdapter,
  create: CreateOp,
  versions: Map<string, string>,
  merged: Set<string>,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const existing = await storage.get(create.key);
    const bytes = await create.merge!(existing?.bytes);
    try {
      const r = await storage.put(create.key, bytes, existing ? { ifVersion: existing.version } : { ifAbsent: true });
      versions.set(create.key, r.version);
      if (existing) merged.add(create.key);
      else merged.delete(create.key);
      return isPendingResult(r);
    } catch (err) {
      if (!isConflict(err) || attempt >= 3) throw err;
    }
  }
}
