import { isCheckpointError } from '../contract/errors.js';
import type { StorageAdapter } from '../contract/storage.js';
import { isSynchronousStorage, type SynchronousStorage } from '../contract/synchronous-storage.js';
import { chunkPlan, chunksDurable } from './chunk-step.js';
import { batchOperations, executeWrite, type IndexState, type WritePlan, type WriteReport } from './ordered-write.js';

/** The condition of a create (one object, not one per call). */
const IF_ABSENT = Object.freeze({ ifAbsent: true });

/** A group without a run index has none to cache (see {@link writeGroup}). */
const NO_INDEX: IndexState = Object.freeze({});
const noTime = (): string => '';

/**
 * The write step every front end uses for a group that keeps no run index (the LangGraph
 * saver's): {@link executeWrite}'s crash-safe order, or one atomic batch with `useBatch`,
 * deletes included (in the batch, or after the write).
 *
 * On a store that declares {@link SynchronousStorage} (memoryStorage) the first attempt is
 * made without a promise, and its report is returned as a value: an await is a microtask, and
 * LangGraph's AsyncLocalStorage makes each one cost. A conflict there (nothing the saver's own
 * groups meet in steady state) goes on as {@link executeWrite} does, every step being idempotent;
 * so do sequential deletes, which a synchronous store has no call for.
 */
export function writeGroup(storage: StorageAdapter, plan: WritePlan, useBatch: boolean): WriteReport | Promise<WriteReport> {
  if (plan.index) throw new TypeError('writeGroup: a plan with a run index goes through executeWrite');
  const sequentialDeletes = !useBatch && plan.deletes !== undefined && plan.deletes.length > 0;
  if (!sequentialDeletes && isSynchronousStorage(storage)) {
    const chunked = chunkPlan(storage, plan);
    if (!(chunked instanceof Promise)) {
      try {
        const report = writeNow(storage, chunked?.plan ?? plan, useBatch);
        chunksDurable(storage, chunked);
        return report;
      } catch (err) {
        if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
      }
    }
  }
  return executeWrite(storage, '', plan, NO_INDEX, noTime, useBatch);
}

/** One attempt at `plan` on a synchronous store, as {@link executeWrite}'s first round makes it (a synchronous store queues nothing: never `pending`). */
function writeNow(storage: SynchronousStorage, plan: WritePlan, useBatch: boolean): WriteReport {
  const versions = new Map<string, string>();
  if (useBatch) {
    for (const o of storage.batchNow(batchOperations(plan, plan.creates, plan.replaces)))
      if (o.type === 'put') versions.set(o.key, o.version);
    return { versions, pending: false, mode: 'batch' };
  }
  // Index loops, not for-of: this runs between LangGraph's steps, where the code is not optimized yet and for-of runs the iterator protocol.
  const { creates, replaces, puts, chunks } = plan;
  if (chunks)
    for (let i = 0; i < chunks.length; i++) versions.set(chunks[i]!.key, storage.putNow(chunks[i]!.key, chunks[i]!.bytes).version);
  for (let i = 0; i < creates.length; i++)
    versions.set(creates[i]!.key, storage.putNow(creates[i]!.key, creates[i]!.bytes, IF_ABSENT).version);
  for (let i = 0; i < replaces.length; i++)
    versions.set(replaces[i]!.key, storage.putNow(replaces[i]!.key, replaces[i]!.bytes, { ifVersion: replaces[i]!.ifVersion }).version);
  if (puts) for (let i = 0; i < puts.length; i++) versions.set(puts[i]!.key, storage.putNow(puts[i]!.key, puts[i]!.bytes).version);
  if (plan.latest) versions.set(plan.latest.key, storage.putNow(plan.latest.key, plan.latest.bytes).version);
  return { versions, pending: false, mode: 'sequential' };
}
