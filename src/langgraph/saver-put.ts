import type { RunnableConfig } from '@langchain/core/runnables';
import type { ChannelVersions, Checkpoint, CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { toRfc3339 } from '../contract/clock.js';
import type { KnownMetadata } from '../contract/storage.js';
import { isCheckpointError } from '../contract/errors.js';
import type { WritePlan, WriteReport } from '../writer/ordered-write.js';
import { handOver } from '../storage/handed-over.js';
import { writeGroup } from '../writer/write-step.js';
import { checkpointIdOf, configurableOf, namespaceOf, requireThreadId } from './config.js';
import { sealCheckpointDocument, type SealedCheckpoint, type SealedMembers } from './document.js';
import { encodeHead, encodeHeadInto, HEAD_METADATA_COLUMN, type Head, type InOrder } from './head.js';
import { claimedInOrder, withoutLeaving } from './in-order.js';
import { checkpointKey, headKey } from './keys.js';
import { dumpAll, plainJsonWithout, plainObjectCanonicalJson, type Dumped } from './plain-json.js';
import { LANGGRAPH_SOURCES, type LangGraphPayload, type StoredChannel } from './profile.js';
import { holdsId, insertId, refreshRunState, reserveSequence, topIdWith, unreserve, type RunState } from './run-state.js';
import { forget, learnLeaving, leavingWith, prune } from './saver-retention.js';
import { holdsIdNow, knownRunId, runIdFor, runOf, sequenceNow, sequenceOf } from './saver-runs.js';
import { moveWrites } from './saver-writes.js';
import {
  assertId,
  CHECKPOINTS_CHUNKED_FROM,
  chunkFanoutOf,
  decidePlain,
  indexesMetadata,
  keepWrittenCheckpoint,
  metadataColumnBelow,
  oneCommit,
  readCheckpoint,
  sealBuffer,
  type SaverState,
} from './saver-state.js';
import { storedValue } from './serialized.js';
import { storedChannels, storedMetadata, withoutChannelValues, type Parent } from './stored-checkpoint.js';

const NONE: readonly never[] = Object.freeze([]);

/** Where a checkpoint goes: its run, its sequence there, its parent. */
interface Placement {
  readonly threadId: string;
  readonly ns: string;
  readonly runId: string;
  readonly sequence: number;
  readonly parentId: string | undefined;
  readonly parent: Parent | undefined;
}

/** A checkpoint document's sealed bytes, and the channels it stores (kept as the run's last checkpoint). */
interface Encoded {
  readonly bytes: Uint8Array;
  /** What a read of `bytes` decodes to is made of (kept for the next read, see `keepWrittenCheckpoint`). */
  readonly members: SealedMembers;
  readonly channels: Record<string, StoredChannel>;
  readonly texts: Record<string, string>;
  /** What the document's metadata is to a store that indexes it, where the saver knows it (see `KnownMetadata`). */
  readonly knownMetadata: KnownMetadata | undefined;
}

/** Serialized channels of the parent checkpoint (with their texts when the saver wrote it last and still holds it). */
async function parentChannels(state: SaverState, run: RunState, parentId: string): Promise<Parent | undefined> {
  if (run.last?.id === parentId) return run.last;
  const channels = (await readCheckpoint(state, checkpointKey(run.runId, parentId)))?.payload.channel_values;
  return channels && { channels };
}

/** LangGraph's `put`: one sealed document per checkpoint, written by the engine's write step with what `keepLast` lets go. */
export async function putCheckpoint(
  state: SaverState,
  config: RunnableConfig,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
): Promise<RunnableConfig> {
  const threadId = requireThreadId(config, 'put');
  const ns = namespaceOf(config);
  const parentId = checkpointIdOf(configurableOf(config, 'put'));
  if (parentId !== undefined) assertId(state, parentId, 'parent checkpoint_id');
  assertId(state, checkpoint?.id);
  // Known runs, sequences and parents are answered without an await (each is a microtask per put).
  const runId = knownRunId(state, threadId, ns) ?? (await runIdFor(state, threadId, ns));
  const run = state.loaded.get(runId) ?? (await runOf(state, runId));
  const request: PutRequest = { threadId, ns, runId, parentId, checkpoint, metadata, newVersions };
  const claims = !(holdsId(run, checkpoint.id) ?? (await holdsIdNow(state, run, checkpoint.id)));
  const now = putNow(state, run, request, claims);
  const putting = now === false ? placeAndStore(state, run, request, claims) : now;
  if (putting && claims) {
    // A new checkpoint claims a sequence: writes for it wait until the claim holds (see RunState.claiming).
    run.claiming.set(checkpoint.id, putting);
    try {
      await putting;
    } finally {
      if (run.claiming.get(checkpoint.id) === putting) run.claiming.delete(checkpoint.id);
    }
  } else if (putting) await putting;
  return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
}

/** What one `put` was asked to store. */
interface PutRequest {
  readonly threadId: string;
  readonly ns: string;
  readonly runId: string;
  readonly parentId: string | undefined;
  readonly checkpoint: Checkpoint;
  readonly metadata: CheckpointMetadata;
  readonly newVersions: ChannelVersions;
}

/** How many times a put learns the run again after another saver claimed the sequence it meant to. */
const CLAIM_ATTEMPTS = 64;

/**
 * The steady-state put, without a promise when the store is synchronous: sequence, parent and
 * serializer mode known, the document sealed and stored in one go. Returns `false` when
 * something must be awaited first ({@link placeAndStore} does it), a promise when the
 * encoding or the write went asynchronous, undefined when the checkpoint is stored.
 */
function putNow(state: SaverState, run: RunState, request: PutRequest, claims: boolean): Promise<void> | undefined | false {
  const { checkpoint, parentId } = request;
  const sequence = sequenceNow(run, checkpoint.id);
  const plain = state.plainAsJson;
  if (sequence === undefined || plain === undefined || (claims && sequence <= run.headSequence)) return false;
  const parent = parentId === undefined ? undefined : run.last?.id === parentId ? run.last : false;
  if (parent === false) return false;
  const at: Placement = { threadId: request.threadId, ns: request.ns, runId: request.runId, sequence, parentId, parent };
  const encoding = encodeCheckpoint(state, at, checkpoint, request.metadata, request.newVersions, plain);
  return encoding instanceof Promise
    ? encoding.then((encoded) => storeOrRetry(state, run, request, encoded, at, claims, plain))
    : storeOrRetry(state, run, request, encoding, at, claims, plain);
}

/**
 * Places a checkpoint (sequence, parent) when that needs a read or a listing, then seals and
 * stores it as {@link putNow} does. A sequence reserved (for early writes) before the run was
 * learned again may be another checkpoint's now: a new one is claimed above the head.
 */
async function placeAndStore(state: SaverState, run: RunState, request: PutRequest, claims: boolean): Promise<void> {
  const { checkpoint, parentId } = request;
  const id = checkpoint.id;
  let sequence = sequenceNow(run, id) ?? (await sequenceOf(state, run, id));
  if (claims && sequence <= run.headSequence) sequence = await reclaim(state, run, id);
  const parent = parentId === undefined ? undefined : run.last?.id === parentId ? run.last : await parentChannels(state, run, parentId);
  const plain = state.plainAsJson ?? (await decidePlain(state));
  const at: Placement = { threadId: request.threadId, ns: request.ns, runId: request.runId, sequence, parentId, parent };
  const encoding = encodeCheckpoint(state, at, checkpoint, request.metadata, request.newVersions, plain);
  const stored = storeOrRetry(state, run, request, encoding instanceof Promise ? await encoding : encoding, at, claims, plain);
  if (stored) await stored;
}

/**
 * Stores a sealed checkpoint; a new checkpoint (`claims`) that finds the head moved goes on
 * with {@link claimAgain}.
 */
function storeOrRetry(
  state: SaverState,
  run: RunState,
  request: PutRequest,
  encoded: Encoded,
  at: Placement,
  claims: boolean,
  plain: boolean,
): Promise<void> | undefined {
  const stored = storeCheckpoint(state, run, request.checkpoint.id, encoded, claims ? at.sequence : undefined);
  return stored && claims ? stored.catch((err: unknown) => claimAgain(state, run, request, at, plain, err)) : stored;
}

/**
 * After another saver on the thread claimed the sequence a new checkpoint meant to (the head
 * moved: `checkpoint_conflict`), learns the run again and claims the next sequence, as often as
 * it takes. Savers that collide take turns: a short random pause, longer as collisions repeat.
 */
async function claimAgain(
  state: SaverState,
  run: RunState,
  request: PutRequest,
  first: Placement,
  plain: boolean,
  err: unknown,
): Promise<void> {
  let failure = err;
  for (let attempt = 1; ; attempt++) {
    if (!isCheckpointError(failure, 'checkpoint_conflict') || attempt >= CLAIM_ATTEMPTS) throw failure;
    await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(attempt, 10)));
    await refreshRunState(state.storage, run, (key) => readCheckpoint(state, key), undefined, state.keepLast !== false);
    const at: Placement = { ...first, sequence: await reclaim(state, run, request.checkpoint.id) };
    const encoding = encodeCheckpoint(state, at, request.checkpoint, request.metadata, request.newVersions, plain);
    const encoded = encoding instanceof Promise ? await encoding : encoding;
    try {
      const stored = storeCheckpoint(state, run, request.checkpoint.id, encoded, at.sequence);
      if (stored) await stored;
      return;
    } catch (next) {
      failure = next;
    }
  }
}

/** A new sequence above the head for checkpoint `id`, its early writes moved along with it. */
async function reclaim(state: SaverState, run: RunState, id: string): Promise<number> {
  const before = unreserve(run, id);
  const sequence = reserveSequence(run, id);
  if (before !== undefined && before !== sequence) await moveWrites(state, run, before, sequence);
  return sequence;
}

/**
 * Serializes a checkpoint (every serialization at once: one await, none when all is plain
 * data; each await is a microtask, and LangGraph's AsyncLocalStorage makes those cost) and
 * seals its document.
 */
function encodeCheckpoint(
  state: SaverState,
  at: Placement,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
  plain: boolean,
): Encoded | Promise<Encoded> {
  const values = checkpoint.channel_values;
  const fresh = Object.keys(values ?? {}).filter((channel) => Object.hasOwn(newVersions, channel));
  // Plain metadata is stored as canonical JSON only: its JSON.stringify text would go unused.
  const metadataText = plain ? plainObjectCanonicalJson(metadata) : undefined;
  // The checkpoint without its channel values, as the serializer's text when plain (no copy of it made).
  const bareText = plain ? plainJsonWithout(checkpoint, 'channel_values') : undefined;
  const pending: unknown[] = [
    bareText === undefined ? withoutChannelValues(checkpoint) : null,
    metadataText === undefined ? metadata : null,
  ];
  for (const channel of fresh) pending.push(values[channel]);
  const all = dumpAll(state.saver.serde, pending, plain);
  const serialized: Serialized = { fresh, bareText, metadataText };
  // No closure on the plain path: it runs once a superstep, cache-cold.
  return Array.isArray(all)
    ? sealCheckpoint(state, at, checkpoint, metadata, newVersions, serialized, all)
    : all.then((dumped) => sealCheckpoint(state, at, checkpoint, metadata, newVersions, serialized, dumped));
}

/** What {@link encodeCheckpoint} made before the serializer's output: the fresh channels, and the texts made without it. */
interface Serialized {
  readonly fresh: readonly string[];
  readonly bareText: string | undefined;
  readonly metadataText: string | undefined;
}

/** A checkpoint's document from the serializer's output (`dumped`: checkpoint, metadata, fresh channels), sealed. */
function sealCheckpoint(
  state: SaverState,
  at: Placement,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  newVersions: ChannelVersions,
  serialized: Serialized,
  dumped: Dumped[],
): Encoded | Promise<Encoded> {
  if (serialized.bareText !== undefined) dumped[0] = serialized.bareText;
  const { channels, texts } = storedChannels(checkpoint, checkpoint.channel_values ?? {}, newVersions, at.parent, serialized.fresh, dumped);
  const stored = storedMetadata(metadata, dumped[1]!, serialized.metadataText);
  const payload: LangGraphPayload = {
    thread_id: at.threadId,
    checkpoint_ns: at.ns,
    checkpoint: storedValue(dumped[0]!),
    channel_values: channels,
    metadata: stored.json ?? {},
  };
  if (at.parentId !== undefined) payload.parent_checkpoint_id = at.parentId;
  if (stored.blob) payload.metadata_blob = stored.blob;
  const source = (LANGGRAPH_SOURCES as readonly string[]).includes(metadata?.source) ? metadata.source : 'update';
  const header = { id: checkpoint.id, runId: at.runId, sequence: at.sequence, createdAt: toRfc3339(state.clock.now()), source };
  const sealed = sealCheckpointDocument(header, payload, {
    texts,
    scratch: sealBuffer(state),
    metadata: stored.text,
    metadataColumnBelow: metadataColumnBelow(state, CHECKPOINTS_CHUNKED_FROM),
  });
  // Handed over: nothing changes a sealed document again, so the chunk step and the store keep it
  // rather than copy it (only a large buffer of its own is: never the seal buffer, see `handOver`).
  return sealed instanceof Promise ? sealed.then((s) => encodedOf(s, channels, texts)) : encodedOf(sealed, channels, texts);
}

/** A sealed document as the saver stores it: its bytes handed over, its metadata known for those very bytes. */
function encodedOf(sealed: SealedCheckpoint, channels: Record<string, StoredChannel>, texts: Record<string, string>): Encoded {
  const bytes = handOver(sealed.bytes);
  const json = sealed.metadataColumn;
  return { bytes, members: sealed.members, channels, texts, knownMetadata: json === undefined ? undefined : { bytes, json } };
}

/**
 * Stores a checkpoint document through the write step. A new checkpoint (`claimed`: its
 * sequence) replaces the run's head on the version last seen (creates it in a new run); the
 * step fails with `checkpoint_conflict` when another saver claimed first. With an atomic batch
 * the head, the document and the checkpoints `keepLast` lets go are one batch: one commit (one
 * statement, one WAL flush on PostgreSQL) per put, not one for the head and one for the
 * document (see `oneCommit`). Otherwise the head goes before the document and what `keepLast` lets go is
 * pruned after. Returns a promise only when something was awaited (a synchronous store's
 * steady-state put awaits nothing).
 */
function storeCheckpoint(
  state: SaverState,
  run: RunState,
  id: string,
  encoded: Encoded,
  claimed: number | undefined,
): Promise<void> | undefined {
  // On a thread another saver wrote, the sequences of the checkpoints leaving are read first, so they leave in this batch.
  const learning = learnLeaving(state, run);
  return learning ? learning.then(() => storeLearned(state, run, id, encoded, claimed)) : storeLearned(state, run, id, encoded, claimed);
}

/** {@link storeCheckpoint} once the sequences of the checkpoints leaving with it are known (where they can be). */
function storeLearned(
  state: SaverState,
  run: RunState,
  id: string,
  encoded: Encoded,
  claimed: number | undefined,
): Promise<void> | undefined {
  const leaving = leavingWith(state, run, id);
  // One string for the key: the store hashes it as a map key, and what keeps the document after it finds the hash made.
  const key = checkpointKey(run.runId, id);
  const puts = [
    {
      key,
      bytes: encoded.bytes,
      knownMetadata: encoded.knownMetadata,
      chunk: state.dedup,
      chunkFrom: CHECKPOINTS_CHUNKED_FROM,
      chunkFanout: chunkFanoutOf(state.storage),
    },
  ];
  const head = claimed === undefined ? undefined : headPut(state, run, id, claimed, encoded.bytes, leaving?.ids);
  const version = run.headVersion;
  // Written out member by member rather than spread (`{ ...head, ifVersion }`, `...(leaving ? … : {})`): no object copied or made for nothing, once a put.
  const plan: { -readonly [K in keyof WritePlan]: WritePlan[K] } = {
    creates: head && version === undefined ? [head] : NONE,
    replaces:
      head && version !== undefined ? [{ key: head.key, bytes: head.bytes, ifVersion: version, knownMetadata: head.knownMetadata }] : NONE,
    puts,
  };
  if (leaving) plan.deletes = leaving.keys;
  const written = writeGroup(state.storage, plan, leaving !== undefined || (head !== undefined && oneCommit(state)));
  return written instanceof Promise
    ? written.then((report) => stored(state, run, id, key, encoded, leaving?.ids, report, head))
    : stored(state, run, id, key, encoded, leaving?.ids, written, head);
}

/** The put of a run's head, with the head it stores. */
interface HeadPut {
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly knownMetadata: KnownMetadata | undefined;
  readonly head: Head;
}

/** The put of the run's head for checkpoint `id` claimed at `sequence` (with `leaving` deleted in its commit), with its metadata known. */
function headPut(
  state: SaverState,
  run: RunState,
  id: string,
  sequence: number,
  document: Uint8Array,
  leaving: readonly string[] | undefined,
): HeadPut {
  const head: Head = { checkpointId: id, sequence, topId: topIdWith(run, id), inOrder: inOrderOfClaim(run, id, sequence, leaving) };
  const bytes = headBytes(state, head, document);
  return {
    key: headKey(run.runId),
    bytes,
    knownMetadata: indexesMetadata(state) ? { bytes, json: HEAD_METADATA_COLUMN } : undefined,
    head,
  };
}

/** The head's in-order range once checkpoint `id` is claimed at `sequence` and `leaving` (the run's oldest) are deleted (see in-order.ts). */
function inOrderOfClaim(run: RunState, id: string, sequence: number, leaving: readonly string[] | undefined): InOrder | undefined {
  const before = run.headVersion === undefined ? undefined : { sequence: run.headSequence, topId: run.headTopId, inOrder: run.headInOrder };
  // Without a head the run was listed (it may hold checkpoints stored before heads): its ids are all known.
  const range = claimedInOrder(before, run.ids.at(-1), id, sequence);
  if (!leaving || leaving.length === 0) return range;
  // The leaving checkpoints are the oldest, so the one that stays first is the next id (or this one).
  const next = run.ids[leaving.length];
  return withoutLeaving(range, leaving, next === undefined ? { id, sequence } : { id: next, sequence: run.sequences.get(next) });
}

/**
 * The bytes of `head`. Where the store copies a put's
 * bytes before its call returns (see `sealBuffer`), they are encoded into the sealing buffer
 * right after the document sealed there (`document`), as the document is: no buffer of their
 * own to allocate and collect on every put.
 */
function headBytes(state: SaverState, head: Head, document: Uint8Array): Uint8Array {
  const scratch = sealBuffer(state);
  if (!scratch) return encodeHead(head);
  const from = document.buffer === scratch.buffer ? document.byteOffset + document.length : 0;
  return encodeHeadInto(head, scratch, from) ?? encodeHead(head);
}

/** The run's state once checkpoint `id` is stored under `key` (and `left` deleted with it); prunes what is still beyond `keepLast`. */
function stored(
  state: SaverState,
  run: RunState,
  id: string,
  key: string,
  encoded: Encoded,
  left: readonly string[] | undefined,
  report: WriteReport,
  claim: HeadPut | undefined,
): Promise<void> | undefined {
  keepWrittenCheckpoint(state, key, report, encoded);
  if (claim) {
    const { head } = claim;
    run.headVersion = report.versions.get(claim.key);
    run.headSequence = head.sequence;
    run.headId = id;
    run.headTopId = head.topId;
    run.headInOrder = head.inOrder;
    // Its early writes' keys stay only for pruning: the checkpoint stored, they no longer move (see putTaskWrites).
    if (state.keepLast === false) run.writeKeys.delete(head.sequence);
  }
  insertId(run, id);
  if (left) for (const old of left) forget(run, old);
  if (run.ids.at(-1) === id) run.last = { id, channels: encoded.channels, texts: encoded.texts };
  if (state.keepLast === false) return undefined;
  if (run.ids.length > state.keepLast) return prune(state, run);
  // What the next put lets go, learned while the graph runs its step (nothing to do on a thread this saver wrote).
  void learnLeaving(state, run);
  return undefined;
}
