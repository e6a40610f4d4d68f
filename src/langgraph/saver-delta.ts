import type { RunnableConfig } from '@langchain/core/runnables';
import {
  compareWritesSortKeys,
  getCheckpointId,
  writesSortKey,
  type CheckpointPendingWrite,
  type DeltaChannelHistory,
} from '@langchain/langgraph-checkpoint';
import type { Snapshot } from '../contract/snapshot.js';
import { CheckpointError } from '../contract/errors.js';
import { configurableOf, namespaceOf, requireThreadId } from './config.js';
import { assertCheckpointId, checkpointKey, idOfCheckpointKey, runDir, runIdOf, writesDir } from './keys.js';
import type { LangGraphPayload } from './profile.js';
import { compareIds, lowerBound } from './run-state.js';
import { keptValue } from './decoded-cache.js';
import { readCheckpointWithWrites, type CheckpointRead } from './checkpoint-read.js';
import type { PrefetchedWrites } from './newest.js';
import { decidePlain, readCheckpoint, readWritesDocument, writesDocumentFrom, type SaverState } from './saver-state.js';
import { loadPlain, plainDecided, USE_SERDE } from './plain-load.js';
import { serializedInput } from './serialized.js';
import type { WritesDocument } from './writes.js';

/** One ancestor on the walk: its document, and its writes files being read meanwhile. */
interface Ancestor {
  readonly snapshot: Snapshot<LangGraphPayload>;
  readonly writes: Promise<(WritesDocument | undefined)[]>;
}

/**
 * LangGraph's `getDeltaChannelHistory` over the saver's own files: the parent chain read
 * document by document, each ancestor's writes folder listed and read while the next document
 * is read — no `getTuple` per ancestor (no deserialization of channels nobody asked for), and
 * no listing of the whole thread (on fs that walks every checkpoint's folder: a cost growing
 * with the thread on every turn, where the chain is bounded by the channel's snapshots). The
 * contract is `BaseCheckpointSaver`'s: per channel, the on-path writes oldest to newest (each
 * checkpoint's in `writesSortKey` order, the target's own excluded) down to the nearest
 * ancestor that stores the channel, whose value is the seed.
 */
export async function deltaChannelHistory(
  state: SaverState,
  config: RunnableConfig,
  channels: readonly string[],
): Promise<Record<string, DeltaChannelHistory>> {
  if (!Array.isArray(channels))
    throw new CheckpointError('checkpoint_config_invalid', 'getDeltaChannelHistory: channels must be an array of channel names');
  if (channels.length === 0) return {};
  const ancestors = await walkAncestors(state, config, channels);
  return historiesOf(state, ancestors, channels);
}

/** The ancestors of the checkpoint `config` names (else the thread's newest), nearest first, down to the last one a channel needs. */
async function walkAncestors(state: SaverState, config: RunnableConfig, channels: readonly string[]): Promise<Ancestor[]> {
  const threadValue = configurableOf(config)?.thread_id;
  if (threadValue === undefined || threadValue === null) return [];
  const threadId = requireThreadId(config, 'getDeltaChannelHistory');
  const ns = namespaceOf(config);
  const runId = await runIdOf(threadId, ns, state.storage);
  const targetId = getCheckpointId(config) || (await newestId(state, runId));
  if (targetId === undefined) return [];
  assertCheckpointId(targetId);
  const ours = (s: Snapshot<LangGraphPayload> | undefined): s is Snapshot<LangGraphPayload> =>
    s !== undefined && s.payload.thread_id === threadId && s.payload.checkpoint_ns === ns;
  const reads = prefetcher(state, runId);
  // The target's own writes are not wanted: its document alone (its ancestors read ahead meanwhile).
  reads.readAhead(targetId);
  const target = await readCheckpoint(state, checkpointKey(runId, targetId));
  if (!ours(target)) return [];
  const remaining = new Set(channels);
  const ancestors: Ancestor[] = [];
  const seen = new Set<string>([targetId]);
  let cursor = target.payload.parent_checkpoint_id;
  while (cursor !== undefined && remaining.size > 0 && !seen.has(cursor)) {
    seen.add(cursor);
    const { snapshot, writes: prefetched } = await reads.read(cursor);
    if (!ours(snapshot)) break; // pruned, or not this thread's: the walk ends as LangGraph's does at a missing ancestor
    const dir = writesDir(runId, snapshot.sequence);
    const writes = prefetched?.prefix === dir ? writesRead(state, prefetched) : readWrites(state, dir);
    // Awaited in order later; a failure before it is reached must not go unhandled meanwhile.
    writes.catch(() => undefined);
    ancestors.push({ snapshot, writes });
    for (const channel of Object.keys(snapshot.payload.channel_values)) remaining.delete(channel);
    cursor = snapshot.payload.parent_checkpoint_id;
  }
  return ancestors;
}

/** Documents read ahead at once: on a thread without forks a checkpoint's parent is the id before it. */
const READ_AHEAD = 16;

/**
 * Reads a run's checkpoint documents for the walk, each with its writes folder where that saves
 * a round trip (`readCheckpointWithWrites`: one synchronous pass on fs, one statement on
 * PostgreSQL). When the saver has listed the run, the ids below the one asked for are read along
 * with it, up to {@link READ_AHEAD} at once (the store serves them in parallel; one by one, each
 * read waits for the one before): the parent chain of a thread without forks is the run's ids in
 * order. A read nobody asks for is dropped.
 */
function prefetcher(state: SaverState, runId: string): { read(id: string): Promise<CheckpointRead>; readAhead(id: string): void } {
  const ids = state.loaded.get(runId)?.ids;
  const started = new Map<string, Promise<CheckpointRead>>();
  const start = (id: string): Promise<CheckpointRead> => {
    let reading = started.get(id);
    if (!reading) {
      reading = readCheckpointWithWrites(state, runId, id);
      reading.catch(() => undefined); // a read ahead that fails is reported only if its id is asked for
      started.set(id, reading);
    }
    return reading;
  };
  const readAhead = (id: string): void => {
    if (started.has(id) || !ids) return;
    const at = indexOf(ids, id);
    for (let i = at - 1; at > 0 && i >= Math.max(0, at - READ_AHEAD); i--) void start(ids[i]!); // its failure is caught in start
  };
  return {
    read(id) {
      readAhead(id);
      return start(id);
    },
    readAhead,
  };
}

/** Index of `id` in the ascending `ids`, or -1. */
function indexOf(ids: readonly string[], id: string): number {
  const at = lowerBound(ids, id);
  return ids[at] === id ? at : -1;
}

/** The newest checkpoint id of a run, from one listing of its `history/` folder. */
async function newestId(state: SaverState, runId: string): Promise<string | undefined> {
  let newest: string | undefined;
  for await (const entry of state.storage.list(`${runDir(runId)}/history/`)) {
    const name = idOfCheckpointKey(runId, entry.key);
    if (name !== undefined && (newest === undefined || compareIds(name, newest) > 0)) newest = name;
  }
  return newest;
}

/** The writes documents of one checkpoint's sequence: its folder listed, then every file read at once. */
async function readWrites(state: SaverState, dir: string): Promise<(WritesDocument | undefined)[]> {
  const keys: string[] = [];
  for await (const entry of state.storage.list(dir)) keys.push(entry.key);
  return Promise.all(keys.map((key) => readWritesDocument(state, key)));
}

/** The writes documents of a folder read with its checkpoint (see {@link prefetcher}), each decoded once per stored bytes. */
function writesRead(state: SaverState, prefetched: PrefetchedWrites): Promise<(WritesDocument | undefined)[]> {
  return Promise.all(
    prefetched.objects.map((object) => keptValue(state.writes, object.key, object) ?? writesDocumentFrom(state, object.key, object)),
  );
}

/** Each channel's seed and writes from the walked ancestors (nearest first), values deserialized once each. */
async function historiesOf(
  state: SaverState,
  ancestors: readonly Ancestor[],
  channels: readonly string[],
): Promise<Record<string, DeltaChannelHistory>> {
  if (!plainDecided(state)) await decidePlain(state);
  const serde = state.saver.serde;
  const remaining = new Set(channels);
  // Per channel, each ancestor's block of writes, nearest ancestor first.
  const blocks = new Map<string, CheckpointPendingWrite[][]>(channels.map((channel) => [channel, []]));
  const result: Record<string, DeltaChannelHistory> = {};
  for (const { snapshot, writes } of ancestors) {
    if (remaining.size === 0) break;
    const here = await writesOf(state, snapshot.id, await writes, remaining);
    for (const [channel, block] of here) blocks.get(channel)!.push(block);
    const where = checkpointKey(snapshot.runId, snapshot.id);
    for (const [channel, value] of Object.entries(snapshot.payload.channel_values)) {
      if (!remaining.has(channel)) continue;
      remaining.delete(channel);
      const input = serializedInput(value, where);
      let seed = loadPlain(state, value.type, input);
      if (seed === USE_SERDE) seed = await serde.loadsTyped(value.type, input);
      result[channel] = { writes: [], seed };
    }
  }
  for (const channel of channels) {
    const writes = blocks.get(channel)!.reverse().flat();
    result[channel] = result[channel] ? { ...result[channel], writes } : { writes };
  }
  return result;
}

/** The writes made against checkpoint `checkpointId` to the `wanted` channels, each channel's in `writesSortKey` order. */
async function writesOf(
  state: SaverState,
  checkpointId: string,
  docs: readonly (WritesDocument | undefined)[],
  wanted: ReadonlySet<string>,
): Promise<Map<string, CheckpointPendingWrite[]>> {
  const found: { sortKey: ReturnType<typeof writesSortKey>; taskId: string; doc: WritesDocument; at: number }[] = [];
  for (const doc of docs) {
    if (!doc || doc.checkpoint_id !== checkpointId) continue; // a dead saver's leftovers under a reused sequence
    for (const [at, write] of doc.writes.entries())
      if (wanted.has(write.channel))
        found.push({ sortKey: writesSortKey(doc.task_path, doc.task_id, write.idx), taskId: doc.task_id, doc, at });
  }
  found.sort((a, b) => compareWritesSortKeys(a.sortKey, b.sortKey));
  const serde = state.saver.serde;
  const byChannel = new Map<string, CheckpointPendingWrite[]>();
  for (const { taskId, doc, at } of found) {
    const write = doc.writes[at]!;
    const input = serializedInput(write, `${checkpointId} writes of task ${taskId}`);
    let value = loadPlain(state, write.type, input);
    if (value === USE_SERDE) value = await serde.loadsTyped(write.type, input);
    const list = byChannel.get(write.channel);
    const entry: CheckpointPendingWrite = [taskId, write.channel, value];
    if (list) list.push(entry);
    else byChannel.set(write.channel, [entry]);
  }
  return byChannel;
}
