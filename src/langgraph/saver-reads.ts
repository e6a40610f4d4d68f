import type { RunnableConfig } from '@langchain/core/runnables';
import {
  TASKS,
  compareWritesSortKeys,
  getCheckpointId,
  maxChannelVersion,
  writesSortKey,
  type Checkpoint,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
} from '@langchain/langgraph-checkpoint';
import { canonicalJson } from '../codec/canonical-json.js';
import type { Snapshot } from '../contract/snapshot.js';
import { configurableOf, namespaceOf, requireThreadId } from './config.js';
import { LANGGRAPH_ROOT, assertCheckpointId, checkpointKey, plainSegment, runIdOf, writesDir } from './keys.js';
import type { LangGraphPayload } from './profile.js';
import { readHead } from './head.js';
import { compareIds, insertId, refreshRunState } from './run-state.js';
import { runOf } from './saver-runs.js';
import { decidePlain, readCheckpoint, readWritesDocument, writesDocumentFrom, type SaverState } from './saver-state.js';
import { loadPlain, loadValue, plainDecided, USE_SERDE } from './plain-load.js';
import { readNewest, readsNewestLinked, type Newest, type PrefetchedWrites } from './newest.js';
import { readCheckpointWithWrites } from './checkpoint-read.js';
import { keptValue } from './decoded-cache.js';
import { serializedInput } from './serialized.js';
import type { StoredWrite, WritesDocument } from './writes.js';

/** LangGraph's `getTuple`: the checkpoint `config` names, else the thread's newest (the last one put). */
export async function getCheckpointTuple(state: SaverState, config: RunnableConfig): Promise<CheckpointTuple | undefined> {
  const threadValue = configurableOf(config, 'getTuple')?.thread_id;
  if (threadValue === undefined || threadValue === null) return undefined;
  const threadId = requireThreadId(config, 'getTuple');
  const ns = namespaceOf(config);
  // A plain thread id in the root namespace is its run id: no promise (runIdOf's hash) for the common case.
  const runId = (ns === '' ? plainSegment(threadId) : undefined) ?? (await runIdOf(threadId, ns, state.storage));
  const named: string | undefined = getCheckpointId(config) || undefined;
  let id = named;
  let newest: Newest | undefined;
  if (id === undefined && readsNewestLinked(state)) {
    // The head, its checkpoint and that checkpoint's writes in one read; a run without a head is found as below.
    const read = await readNewest(state, runId);
    if (read && 'run' in read) id = (await read.run).headId;
    else {
      newest = read;
      id =
        newest?.stored.head?.checkpointId ??
        (state.runs.has(runId) ? await newestListedId(state, runId) : (await runOf(state, runId, newest === undefined)).headId);
    }
    if (id === undefined) return undefined;
  }
  // A run the saver has not listed yet: its head names the newest (one read, no listing); a run
  // without a head (new, or stored before heads) is listed, once, shared with the puts that follow.
  if (id === undefined && !state.runs.has(runId)) {
    id = (await readHead(state.storage, runId))?.head?.checkpointId ?? (await runOf(state, runId)).headId;
    if (id === undefined) return undefined;
  }
  id ??= await newestId(state, runId);
  if (id === undefined) return undefined;
  assertCheckpointId(id);
  const read = newest?.snapshot?.id === id ? newest : await readCheckpointWithWrites(state, runId, id);
  let snapshot = read.snapshot;
  // The head names a checkpoint whose document is not there (a put cut short between the two): the newest listed is.
  if (!snapshot && named === undefined) {
    id = await newestListedId(state, runId);
    snapshot = id === undefined ? undefined : await readCheckpoint(state, checkpointKey(runId, id));
  }
  if (!snapshot || snapshot.payload.thread_id !== threadId || snapshot.payload.checkpoint_ns !== ns) return undefined;
  noteStored(state, runId, snapshot);
  const writes = snapshot === read.snapshot ? read.writes : undefined;
  return tupleNow(state, snapshot, writes) ?? toTuple(state, snapshot, writes);
}

/**
 * Tells a run's state about a checkpoint read: its sequence, so writes for it (a graph
 * resumed by this saver from a checkpoint another one stored) go to its folder without a read.
 */
function noteStored(state: SaverState, runId: string, snapshot: Snapshot<LangGraphPayload>): void {
  const run = state.loaded.get(runId);
  if (!run || run.sequences.has(snapshot.id)) return;
  run.sequences.set(snapshot.id, snapshot.sequence);
  insertId(run, snapshot.id);
}

/**
 * The newest checkpoint of a run: the one its head names, read now. When the head moved since
 * this saver last saw it (another saver on the thread stored a checkpoint), the run's state
 * is learned again here, so the puts of the turn that follows claim the next sequence at once.
 */
async function newestId(state: SaverState, runId: string): Promise<string | undefined> {
  const stored = await readHead(state.storage, runId);
  const run = state.loaded.get(runId);
  if (run && run.claiming.size === 0 && stored?.version !== run.headVersion) {
    await refreshRunState(state.storage, run, (key) => readCheckpoint(state, key), stored, state.keepLast !== false);
  }
  return stored?.head?.checkpointId ?? (await newestListedId(state, runId));
}

/** The newest checkpoint id stored in a run, listed now. */
async function newestListedId(state: SaverState, runId: string): Promise<string | undefined> {
  let id: string | undefined;
  for await (const entry of state.storage.list(`${LANGGRAPH_ROOT}/${runId}/history/`)) {
    const name = entry.key.slice(entry.key.lastIndexOf('/') + 1);
    if (name.endsWith('.json')) {
      const candidate = name.slice(0, -'.json'.length);
      if (id === undefined || compareIds(candidate, id) > 0) id = candidate;
    }
  }
  return id;
}

/**
 * The metadata's JSON text, made once per decoded document: a document read again is the same
 * decoded payload (decoded-cache.ts), whose metadata every read hands out as a fresh value.
 */
const metadataTexts = new WeakMap<LangGraphPayload, string>();

function metadataText(p: LangGraphPayload): string {
  let text = metadataTexts.get(p);
  if (text === undefined) metadataTexts.set(p, (text = canonicalJson(p.metadata)));
  return text;
}

export async function metadataOf(state: SaverState, p: LangGraphPayload): Promise<CheckpointMetadata> {
  if (p.metadata_blob)
    return (await loadValue(state, p.metadata_blob.type, serializedInput(p.metadata_blob, 'metadata'))) as CheckpointMetadata;
  return (await loadValue(state, 'json', metadataText(p))) as CheckpointMetadata;
}

/** {@link metadataOf} without a promise when the metadata is plain JSON read with `JSON.parse` (plain-load.ts), else {@link USE_SERDE}. */
function plainMetadata(state: SaverState, p: LangGraphPayload): CheckpointMetadata | typeof USE_SERDE {
  return p.metadata_blob ? USE_SERDE : (loadPlain(state, 'json', metadataText(p)) as CheckpointMetadata | typeof USE_SERDE);
}

/**
 * The most text {@link tupleNow} parses before it knows it can answer: past it, a value that
 * needs the serializer (a `DeltaChannel` snapshot, a LangChain message) would be parsed again by
 * {@link toTuple}, which costs more than the promises saved.
 */
const TUPLE_NOW_MAX_CHARS = 8 * 1024;

/**
 * {@link toTuple} without a promise, for a small checkpoint whose values all read with
 * `JSON.parse` alone (plain-load.ts) and whose pending writes came with it, each document decoded
 * before (an old checkpoint's `getState` read again): undefined otherwise, or for a checkpoint
 * older than format v4, and the caller awaits {@link toTuple}. Each promise costs a read more
 * than its work where LangGraph's async hooks are on.
 */
export function tupleNow(state: SaverState, snapshot: Snapshot<LangGraphPayload>, writes?: PrefetchedWrites): CheckpointTuple | undefined {
  if (state.plainAsJson !== true) return undefined;
  const p = snapshot.payload;
  const where = checkpointKey(snapshot.runId, snapshot.id);
  const checkpointInput = serializedInput(p.checkpoint, where);
  const channels = Object.entries(p.channel_values).map(
    ([channel, value]) => [channel, value.type, serializedInput(value, where)] as const,
  );
  const docs = keptWritesDocuments(state, writesDir(snapshot.runId, snapshot.sequence), writes);
  if (!docs) return undefined;
  const pendingInputs = writesInOrder(docs, snapshot.id).map(({ taskId, write, key }) => ({
    taskId,
    write,
    input: serializedInput(write, key),
  }));
  let chars = checkpointInput.length;
  for (const [, , input] of channels) chars += input.length;
  for (const { input } of pendingInputs) chars += input.length;
  if (chars > TUPLE_NOW_MAX_CHARS) return undefined;
  const checkpoint = loadPlain(state, p.checkpoint.type, checkpointInput) as Checkpoint | typeof USE_SERDE;
  if (checkpoint === USE_SERDE || checkpoint.v < 4) return undefined;
  const values: Record<string, unknown> = {};
  for (const [channel, type, input] of channels) {
    const revived = loadPlain(state, type, input);
    if (revived === USE_SERDE) return undefined;
    values[channel] = revived;
  }
  checkpoint.channel_values = values;
  const metadata = plainMetadata(state, p);
  if (metadata === USE_SERDE) return undefined;
  const pending: CheckpointPendingWrite[] = [];
  for (const { taskId, write, input } of pendingInputs) {
    const value = loadPlain(state, write.type, input);
    if (value === USE_SERDE) return undefined;
    pending.push([taskId, write.channel, value]);
  }
  return tupleOf(snapshot, checkpoint, metadata, pending);
}

export async function toTuple(
  state: SaverState,
  snapshot: Snapshot<LangGraphPayload>,
  writes?: PrefetchedWrites,
): Promise<CheckpointTuple> {
  if (!plainDecided(state)) await decidePlain(state);
  const serde = state.saver.serde;
  const p = snapshot.payload;
  const where = checkpointKey(snapshot.runId, snapshot.id);
  const checkpointInput = serializedInput(p.checkpoint, where);
  let loaded = loadPlain(state, p.checkpoint.type, checkpointInput);
  if (loaded === USE_SERDE) loaded = await serde.loadsTyped(p.checkpoint.type, checkpointInput);
  const checkpoint = loaded as Checkpoint;
  checkpoint.channel_values = {};
  for (const [channel, value] of Object.entries(p.channel_values)) {
    const input = serializedInput(value, where);
    let revived = loadPlain(state, value.type, input);
    if (revived === USE_SERDE) revived = await serde.loadsTyped(value.type, input);
    checkpoint.channel_values[channel] = revived;
  }
  const parentId = p.parent_checkpoint_id;
  if (checkpoint.v < 4 && parentId !== undefined) await migratePendingSends(state, checkpoint, snapshot.runId, parentId);
  const metadata = plainMetadata(state, p);
  return tupleOf(
    snapshot,
    checkpoint,
    metadata === USE_SERDE ? await metadataOf(state, p) : metadata,
    await pendingWrites(state, snapshot.runId, snapshot.sequence, snapshot.id, writes),
  );
}

function tupleOf(
  snapshot: Snapshot<LangGraphPayload>,
  checkpoint: Checkpoint,
  metadata: CheckpointMetadata,
  pendingWrites: CheckpointPendingWrite[],
): CheckpointTuple {
  const p = snapshot.payload;
  const tuple: CheckpointTuple = {
    config: { configurable: { thread_id: p.thread_id, checkpoint_ns: p.checkpoint_ns, checkpoint_id: snapshot.id } },
    checkpoint,
    metadata,
    pendingWrites,
  };
  const parentId = p.parent_checkpoint_id;
  if (parentId !== undefined)
    tuple.parentConfig = { configurable: { thread_id: p.thread_id, checkpoint_ns: p.checkpoint_ns, checkpoint_id: parentId } };
  return tuple;
}

/** A checkpoint's writes documents with their keys (undefined where a document is absent or not a writes document). */
interface WritesDocuments {
  readonly keys: readonly string[];
  readonly docs: readonly (WritesDocument | undefined)[];
}

/** The writes documents read with the checkpoint (newest.ts, checkpoint-read.ts), when each was decoded before from the same bytes; else undefined. */
function keptWritesDocuments(state: SaverState, dir: string, prefetched: PrefetchedWrites | undefined): WritesDocuments | undefined {
  if (prefetched?.prefix !== dir) return undefined;
  const docs: WritesDocument[] = [];
  for (const object of prefetched.objects) {
    const doc = keptValue(state.writes, object.key, object);
    if (doc === undefined) return undefined;
    docs.push(doc);
  }
  return { keys: prefetched.objects.map((object) => object.key), docs };
}

/** A checkpoint's writes documents: those read with it (decoded here, without another read), else its folder listed and read now. */
async function writesDocuments(state: SaverState, dir: string, prefetched: PrefetchedWrites | undefined): Promise<WritesDocuments> {
  if (prefetched?.prefix === dir) {
    const keys = prefetched.objects.map((object) => object.key);
    // Documents read before are taken as kept without a promise each; only the others are decoded.
    const kept = prefetched.objects.map((object) => keptValue(state.writes, object.key, object));
    if (!kept.includes(undefined)) return { keys, docs: kept };
    const docs = await Promise.all(prefetched.objects.map((object, i) => kept[i] ?? writesDocumentFrom(state, object.key, object)));
    return { keys, docs };
  }
  const keys: string[] = [];
  for await (const entry of state.storage.list(dir)) keys.push(entry.key);
  return { keys, docs: await Promise.all(keys.map((key) => readWritesDocument(state, key))) };
}

/** One stored write of a task, with the key of its document. */
interface TaskWrite {
  readonly taskId: string;
  readonly write: StoredWrite;
  readonly key: string;
}

/** The writes of the documents made against `checkpointId`, in LangGraph's `writesSortKey` order (the order live execution applies them). */
function writesInOrder({ keys, docs }: WritesDocuments, checkpointId: string): TaskWrite[] {
  const sorted: (TaskWrite & { sortKey: ReturnType<typeof writesSortKey> })[] = [];
  for (const [i, doc] of docs.entries()) {
    if (!doc || doc.checkpoint_id !== checkpointId) continue;
    for (const write of doc.writes)
      sorted.push({ sortKey: writesSortKey(doc.task_path, doc.task_id, write.idx), taskId: doc.task_id, write, key: keys[i]! });
  }
  return sorted.sort((a, b) => compareWritesSortKeys(a.sortKey, b.sortKey));
}

/** A checkpoint's pending writes, in LangGraph's `writesSortKey` order (the order live execution applies them). */
async function pendingWrites(
  state: SaverState,
  runId: string,
  sequence: number,
  checkpointId: string,
  prefetched?: PrefetchedWrites,
): Promise<CheckpointPendingWrite[]> {
  const writes = writesInOrder(await writesDocuments(state, writesDir(runId, sequence), prefetched), checkpointId);
  const serde = state.saver.serde;
  const out: CheckpointPendingWrite[] = [];
  const revivals: Promise<void>[] = [];
  for (const { taskId, write, key } of writes) {
    const input = serializedInput(write, key);
    const entry: CheckpointPendingWrite = [taskId, write.channel, loadPlain(state, write.type, input)];
    out.push(entry);
    if (entry[2] === USE_SERDE) revivals.push(serde.loadsTyped(write.type, input).then((value: unknown) => void (entry[2] = value)));
  }
  if (revivals.length > 0) await Promise.all(revivals);
  return out;
}

/** Checkpoints older than format v4 kept pending sends in their parent's writes (as MemorySaver migrates them). */
async function migratePendingSends(state: SaverState, checkpoint: Checkpoint, runId: string, parentId: string): Promise<void> {
  const parent = await readCheckpoint(state, checkpointKey(runId, parentId));
  const writes = parent ? await pendingWrites(state, runId, parent.sequence, parentId) : [];
  const values = checkpoint.channel_values as Record<string, unknown>;
  values[TASKS] = writes.filter(([, channel]) => channel === TASKS).map(([, , value]) => value);
  const versions = checkpoint.channel_versions as Record<string, number | string>;
  versions[TASKS] =
    Object.keys(versions).length > 0 ? maxChannelVersion(...Object.values(versions)) : state.saver.getNextVersion(undefined);
}
