import { CheckpointError, toCheckpointError } from '../contract/errors.js';
import { isBufferedStorage } from '../contract/buffered-storage.js';
import { recoverBeforeIndex, storePlan } from './commit-group.js';
import { openWithRetry } from './open-run.js';
import type { WritePlan } from './ordered-write.js';
import { exclusive, idle } from './queue.js';
import { sweepSettled } from './auto-sweep.js';
import { withRetry } from './retry.js';
import { deliverFailure, failure, type WriterState } from './state.js';
import type { CheckpointFailure } from './types.js';

/** `writer.open()`: opens the run (after whatever is queued) unless the writer is closing. */
export async function openRun<P>(state: WriterState<P>): Promise<{ readonly ok: true; readonly lastSequence: number } | CheckpointFailure> {
  const { runId } = state.config;
  if (state.closing || state.closed)
    return deliverFailure(state, failure(state, new CheckpointError('checkpoint_closed', `writer of run ${runId} is closed`), 'open'));
  try {
    await exclusive(state, () => openWithRetry(state));
    return { ok: true as const, lastSequence: state.lastSequence };
  } catch (raw) {
    return deliverFailure(
      state,
      failure(state, toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not open the run'), 'open'),
    );
  }
}

/**
 * Writes the index entries a long run held back (see indexDeferral), so a flushed or closed
 * run leaves a complete `index.json`. A failure is reported, not fatal: the history files
 * exist, and the next writer or reader indexes them from a listing.
 */
async function syncIndex<P>(state: WriterState<P>): Promise<void> {
  const { indexKey, failMode } = state.config;
  if (!state.opened || state.needsRecovery || indexKey === undefined || state.unindexed.length === 0) return;
  try {
    // Opened from latest alone: the stored index and the entries it lacks are read first.
    if (state.indexUnread !== undefined) await recoverBeforeIndex(state);
    if (state.unindexed.length === 0) return;
    const plan: WritePlan = { creates: [], replaces: [], index: { key: indexKey, entries: state.unindexed } };
    await withRetry(() => storePlan(state, plan, state.lastSequence), state.retry);
    state.unindexed = [];
  } catch (raw) {
    const f = failure(state, toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not update the run index'), 'flush');
    if (failMode === 'throw') throw f.error;
  }
}

/** `writer.flush()`: waits for the queue, completes the index, and pushes what a buffered store holds. */
export async function flushWriter<P>(state: WriterState<P>): Promise<void> {
  await idle(state);
  await exclusive(state, () => syncIndex(state));
  const { storage } = state.config;
  if (!isBufferedStorage(storage)) return;
  try {
    await storage.flush();
  } catch (raw) {
    const f = failure(state, toCheckpointError(raw, 'checkpoint_storage_unavailable', 'storage flush failed'), 'flush');
    if (state.config.failMode === 'throw') throw f.error;
  }
}

/** `writer.close()`: refuses new checkpoints, stops the heartbeat, flushes, and releases the run lock. Idempotent. */
export async function closeWriter<P>(state: WriterState<P>): Promise<void> {
  if (state.closing || state.closed) return;
  state.closing = true;
  state.heartbeat.stop();
  let error: CheckpointError | undefined;
  try {
    await flushWriter(state);
  } catch (raw) {
    error = toCheckpointError(raw, 'checkpoint_storage_unavailable', 'flush on close failed');
  }
  // A sweep this writer's deletes started ends before close resolves (a crash mid-sweep loses nothing; this is for tidiness).
  if (state.config.autoSweep) await sweepSettled(state.config.storage);
  try {
    await state.lock?.release();
  } catch (raw) {
    error ??= failure(state, toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not release the run lock'), 'close').error;
  }
  state.closed = true;
  state.emitter.emit('closed', { runId: state.config.runId });
  if (error && state.config.failMode === 'throw') throw error;
}
