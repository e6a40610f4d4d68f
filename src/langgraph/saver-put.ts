import type { RunnableConfig } from '@langchain/core/runnables';
import type { ChannelVersions, Checkpoint, CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { toRfc3339 } from '../contract/clock.js';
import type { WritePlan } from '../writer/ordered-write.js';
import { writeGroup } from '../writer/write-step.js';
import { checkpointIdOf, configurableOf, namespaceOf, requireThreadId } from './config.js';
import { encodeCheckpointDocument } from './document.js';
import { checkpointKey } from './keys.js';
import { dumpAll, plainJsonWithout, plainObjectCanonicalJson, type Dumped } from './plain-json.js';
import { LANGGRAPH_SOURCES, type LangGraphPayload, type StoredChannel } from './profile.js';
import { insertId, type RunState } from './run-state.js';
import { forget, leavingWith, prune } from './saver-retention.js';
import { knownRunId, runIdFor, runOf, sequenceNow, sequenceOf } from './saver-runs.js';
import { assertId, decidePlain, readCheckpoint, sealBuffer, type SaverState } from './saver-state.js';
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
  readonly channels: Record<string, StoredChannel>;
  readonly texts: Record<string, string>;
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
  const sequence = sequenceNow(run, checkpoint.id) ?? (await sequenceOf(state, run, checkpoint.id));
  const parent = parentId === undefined ? undefined : run.last?.id === parentId ? run.last : await parentChannels(state, run, parentId);
  const plain = state.plainAsJson ?? (await decidePlain(state));
  const encoding = encodeCheckpoint(state, { threadId, ns, runId, sequence, parentId, parent }, checkpoint, metadata, newVersions, plain);
  const encoded = encoding instanceof Promise ? await encoding : encoding;
  const stored = storeCheckpoint(state, run, checkpoint.id, encoded);
  if (stored) await stored;
  return { configurable: { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
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
  const bytes = encodeCheckpointDocument(header, payload, { texts, scratch: sealBuffer(state), metadata: stored.text });
  return bytes instanceof Uint8Array ? { bytes, channels, texts } : bytes.then((sealed) => ({ bytes: sealed, channels, texts }));
}

/**
 * Stores a checkpoint document through the write step: with an atomic batch, the checkpoints
 * `keepLast` lets go leave in the same commit; others are pruned after. Returns a promise only
 * when something was awaited (a synchronous store's steady-state put awaits nothing).
 */
function storeCheckpoint(state: SaverState, run: RunState, id: string, encoded: Encoded): Promise<void> | undefined {
  const leaving = leavingWith(state, run, id);
  const puts = [{ key: checkpointKey(run.runId, id), bytes: encoded.bytes, chunk: state.dedup }];
  const plan: WritePlan = leaving
    ? { creates: NONE, replaces: NONE, puts, deletes: leaving.keys }
    : { creates: NONE, replaces: NONE, puts };
  const written = writeGroup(state.storage, plan, leaving !== undefined);
  return written instanceof Promise
    ? written.then(() => stored(state, run, id, encoded, leaving?.ids))
    : stored(state, run, id, encoded, leaving?.ids);
}

/** The run's state once checkpoint `id` is stored (and `left` deleted with it); prunes what is still beyond `keepLast`. */
function stored(
  state: SaverState,
  run: RunState,
  id: string,
  encoded: Encoded,
  left: readonly string[] | undefined,
): Promise<void> | undefined {
  insertId(run, id);
  if (left) for (const old of left) forget(run, old);
  if (run.ids.at(-1) === id) run.last = { id, channels: encoded.channels, texts: encoded.texts };
  return state.keepLast !== false && run.ids.length > state.keepLast ? prune(state, run) : undefined;
}
