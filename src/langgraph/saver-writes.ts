import type { RunnableConfig } from '@langchain/core/runnables';
import { WRITES_IDX_MAP, type PendingWrite } from '@langchain/langgraph-checkpoint';
import { CheckpointError } from '../contract/errors.js';
import type { WritePlan } from '../writer/ordered-write.js';
import { writeGroup } from '../writer/write-step.js';
import { configurableOf, namespaceOf, requireThreadId } from './config.js';
import { plainSegment, segmentOf, writesDir, writesKey } from './keys.js';
import { dumpAll } from './plain-json.js';
import { hasId, noteListedWrite, type RunState } from './run-state.js';
import { knownRunId, ownsSequence, runIdFor, runOf, sequenceNow, sequenceOf } from './saver-runs.js';
import { isChunkable } from '../snapshot-io/chunk-store.js';
import {
  assertId,
  chunkFanoutOf,
  decidePlain,
  metadataColumnBelow,
  oneCommit,
  sealBuffer,
  WRITES_CHUNKED_FROM,
  type SaverState,
} from './saver-state.js';
import { storedWrite } from './serialized.js';
import { decodeStoredWrites, encodeWrites, sealWrites, type StoredWrite, type WritesDocument } from './writes.js';

const NONE: readonly never[] = Object.freeze([]);

/** LangGraph's `putWrites`: a task's pending writes, one sealed document per task and checkpoint. */
export async function putTaskWrites(
  state: SaverState,
  config: RunnableConfig,
  writes: PendingWrite[],
  taskId: string,
  taskPath?: string,
): Promise<void> {
  const threadId = requireThreadId(config, 'putWrites');
  const ns = namespaceOf(config);
  const checkpointId = configurableOf(config, 'putWrites')?.checkpoint_id;
  if (checkpointId === undefined || checkpointId === '') {
    throw new CheckpointError('checkpoint_config_invalid', 'putWrites: config.configurable.checkpoint_id is required', {
      details: { operation: 'putWrites' },
    });
  }
  assertId(state, checkpointId);
  if (typeof taskId !== 'string') throw new CheckpointError('checkpoint_config_invalid', 'putWrites: taskId must be a string');
  const runId = knownRunId(state, threadId, ns) ?? (await runIdFor(state, threadId, ns));
  const run = state.loaded.get(runId) ?? (await runOf(state, runId));
  // The checkpoint's put is claiming its sequence: the claim may move it (see RunState.claiming).
  const claim = run.claiming.size > 0 ? run.claiming.get(checkpointId) : undefined;
  if (claim) await claim.catch(() => undefined);
  const sequence = sequenceNow(run, checkpointId) ?? (await sequenceOf(state, run, checkpointId));
  const key = writesKey(runId, sequence, plainSegment(taskId) ?? (await segmentOf(taskId, state.storage)));
  const plain = state.plainAsJson ?? (await decidePlain(state));
  // Index access, not `([channel, value]) =>`: destructuring runs the iterator protocol where the code is not optimized yet (cache-cold).
  const all = dumpAll(
    state.saver.serde,
    writes.map((write) => write[1]),
    plain,
  );
  const dumped = Array.isArray(all) ? all : await all;
  const fresh = writes.map((write, index): StoredWrite => storedWrite(WRITES_IDX_MAP[write[0]] ?? index, write[0], dumped[index]!));
  const document = { thread_id: threadId, checkpoint_ns: ns, checkpoint_id: checkpointId, task_id: taskId, task_path: taskPath ?? '' };
  const sealed = sealWrites(document, fresh, sealBuffer(state), metadataColumnBelow(state, WRITES_CHUNKED_FROM));
  const bytes = sealed.bytes instanceof Uint8Array ? sealed.bytes : await sealed.bytes;
  const knownMetadata = sealed.metadataColumn === undefined ? undefined : { bytes, json: sealed.metadataColumn };
  // Usually the task's first writes: create-only, one storage call. Otherwise merged as
  // MemorySaver does (see mergeWrites). A long value goes as content chunks, as a checkpoint
  // does: the next checkpoint, which holds it, then finds most of its leaves stored. Short
  // values only (ids, a seal, member names): whole in an envelope, deflated (`packWhole`).
  const merge = (stored: Uint8Array | undefined): Promise<Uint8Array> => mergeWrites(state, document, fresh, stored, key);
  const plan: WritePlan = {
    creates: [
      {
        key,
        bytes,
        knownMetadata,
        merge,
        chunk: state.dedup,
        chunkFrom: WRITES_CHUNKED_FROM,
        chunkFanout: chunkFanoutOf(state.storage),
        packWhole: true,
      },
    ],
    replaces: NONE,
  };
  // Its chunks and the document in one commit where the store has one, not a statement each.
  const written = writeGroup(state.storage, plan, state.dedup && isChunkable(bytes, WRITES_CHUNKED_FROM) && oneCommit(state));
  const report = written instanceof Promise ? await written : written;
  // Without `keepLast` nothing is pruned: a writes key is needed only while its checkpoint, not
  // stored yet, may still move to another sequence (see moveWrites); not one a superstep for good.
  if (state.keepLast !== false || !hasId(run, checkpointId)) noteWritesKey(run, sequence, key, report.merged?.has(key) === true);
}

/**
 * A task's writes merged into the ones stored under its key, as MemorySaver merges them: a
 * regular write (idx >= 0) already stored is kept, special ones replace. Sealed into a buffer
 * of its own (the saver's sealing buffer is valid only until the next await), and stored whole
 * (a task writing again is rare); either form of the stored one is read.
 */
async function mergeWrites(
  state: SaverState,
  document: Omit<WritesDocument, 'integrity' | 'writes'>,
  fresh: readonly StoredWrite[],
  stored: Uint8Array | undefined,
  key: string,
): Promise<Uint8Array> {
  let merged = fresh;
  if (stored) {
    const byIdx = new Map((await decodeStoredWrites(state.storage, key, stored)).writes.map((w) => [w.idx, w]));
    for (const w of fresh) if (w.idx < 0 || !byIdx.has(w.idx)) byIdx.set(w.idx, w);
    merged = [...byIdx.values()];
  }
  return encodeWrites(document, merged);
}

/**
 * Moves the writes this saver stored under sequence `from` to `to`: a checkpoint's early
 * writes (LangGraph sends a task's writes before the put of the checkpoint they belong to
 * starts) follow it when another saver claimed the sequence first. Each is stored under
 * `to` before it leaves `from`, so none is ever stored nowhere.
 */
export async function moveWrites(state: SaverState, run: RunState, from: number, to: number): Promise<void> {
  const keys = run.writeKeys.get(from);
  if (!keys) return;
  run.writeKeys.delete(from);
  const moved = new Set<string>();
  for (const key of keys) {
    const stored = await state.storage.get(key);
    if (!stored) continue;
    const target = `${writesDir(run.runId, to)}${key.slice(key.lastIndexOf('/') + 1)}`;
    const plan: WritePlan = { creates: NONE, replaces: NONE, puts: [{ key: target, bytes: stored.bytes }], deletes: [key] };
    await writeGroup(state.storage, plan, false);
    moved.add(target);
  }
  run.writeKeys.set(to, moved);
}

/**
 * Remembers a writes key for pruning without a listing: for sequences whose writes the saver has
 * seen from the start, or whose writes the run's listing found (see `listedWrites`); others are
 * listed when pruned.
 */
function noteWritesKey(run: RunState, sequence: number, key: string, merged: boolean): void {
  const known = run.writeKeys.get(sequence);
  if (known) known.add(key);
  else if (sequence <= run.writesListedUpTo) noteListedWrite(run, sequence, key);
  else if (!merged && ownsSequence(run, sequence)) run.writeKeys.set(sequence, new Set<string>().add(key));
}
