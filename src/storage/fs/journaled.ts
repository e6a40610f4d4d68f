import { assertBatchOperations } from '../batch-operation.js';
import type { BatchOperation, BatchOutcome, DeleteOptions, PutOptions, PutResult } from '../../contract/storage.js';
import { ownedCopy } from '../handed-over.js';
import { errnoOf, fsError } from './io.js';
import { rootDir } from './lifecycle.js';
import { keyRefused } from './paths.js';
import { assertOpen, scrubFor, track, type FsStoreState } from './store-state.js';

// The calls of a store opened with `journal: true`: each one is a record of the journal
// (see journal.ts), acknowledged once durable and applied to the files in the background.

/** A batch through the journal, its failures as the adapter's errors. */
async function journaled(state: FsStoreState, ops: readonly BatchOperation[], what: string, key: string): Promise<BatchOutcome[]> {
  // No await once the root is open (the commit's path).
  if (!state.root) await rootDir(state);
  try {
    return await state.journal!.commit(ops);
  } catch (err) {
    if (errnoOf(err) === 'ENAMETOOLONG') throw keyRefused(key, 'the path is too long for this file system', 'name_too_long');
    throw fsError(err, 'checkpoint_atomic_write_failed', what, key, scrubFor(state, []));
  }
}

/** A put as a one-operation journal record. */
export async function journaledPut(state: FsStoreState, key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
  const [outcome] = await journaled(state, [{ type: 'put', key, bytes, ...opts }], 'writing', key);
  return { version: (outcome as { version: string }).version };
}

/** A delete as a one-operation journal record. */
export async function journaledDelete(state: FsStoreState, key: string, opts: DeleteOptions): Promise<boolean> {
  const [outcome] = await journaled(state, [{ type: 'delete', key, ...opts }], 'deleting', key);
  return (outcome as { existed: boolean }).existed;
}

/** `batch()`: one journal record for every operation (shared with concurrent callers' batches), atomic. */
export async function journaledBatch(state: FsStoreState, operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  assertOpen(state);
  assertBatchOperations(operations);
  // Copied now: the caller may reuse its buffers as soon as batch() returns (handed-over ones excepted, as in put).
  const ops = operations.map((op): BatchOperation => (op.type === 'put' ? { ...op, bytes: ownedCopy(op.bytes) } : op));
  if (ops.length === 0) return [];
  return await track(state, journaled(state, ops, 'writing', ops[0]!.key));
}

/** `flush()`: waits until every acknowledged write is in the spec's files (they are applied in the background). */
export async function flushJournal(state: FsStoreState): Promise<void> {
  assertOpen(state);
  await rootDir(state);
  try {
    await track(state, state.journal!.flush());
  } catch (err) {
    throw fsError(err, 'checkpoint_atomic_write_failed', 'applying', 'the journal', scrubFor(state, []));
  }
}
