import { assertBatchOperations } from '../batch-operation.js';
import { isCheckpointError } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome, DeleteOptions, PutOptions, PutResult, StoredObject } from '../../contract/storage.js';
import type { MovingPut } from './journal/move.js';
import type { KeyMove } from '../../contract/move.js';
import { mapLimit } from '../map-limit.js';
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

/** Times a move reads its source again when the source changed between its read and its commit. */
const MOVE_TRIES = 8;

/**
 * `move(from, to)`: one record that puts `from`'s bytes under `to` (absent) and deletes `from`
 * at the version read — applied as a rename of `from`'s file when it is durable on disk
 * (journal/move.ts), else as a copy. False when `from` is absent.
 */
export async function journaledMove(
  state: FsStoreState,
  read: (key: string) => Promise<StoredObject | undefined>,
  from: string,
  to: string,
): Promise<boolean> {
  for (let attempt = 1; ; attempt++) {
    const found = await read(from);
    if (!found) return false;
    const put: MovingPut = { type: 'put', key: to, bytes: found.bytes, ifAbsent: true, movedFrom: from };
    try {
      await journaled(state, [put, { type: 'delete', key: from, ifVersion: found.version }], 'moving', from);
      return true;
    } catch (err) {
      // The source changed since it was read (or went): read it again.
      const key = isCheckpointError(err, 'checkpoint_conflict') ? (err.details as { key?: unknown } | undefined)?.key : undefined;
      if (key !== from || attempt >= MOVE_TRIES) throw err;
    }
  }
}

/** Sources a `moveMany` reads at once. */
const MOVE_READS_AT_ONCE = 16;

/**
 * `moveMany(moves)`: every source read, then one record holding all the moves whose source was
 * there (each a put of `to` naming its source, and the source's delete at the version read), so
 * that a sweep hiding hundreds of chunks commits a few records, not one a chunk. When the record
 * is refused (a target taken, a source changed since its read), each move goes alone as `move`,
 * a conflict there answering false. A record is atomic: a crash leaves all its moves or none.
 */
export async function journaledMoves(
  state: FsStoreState,
  read: (key: string) => Promise<StoredObject | undefined>,
  moves: readonly KeyMove[],
): Promise<boolean[]> {
  const found = await mapLimit(moves, MOVE_READS_AT_ONCE, (m) => read(m.from));
  const ops = moves.flatMap((m, i): BatchOperation[] => {
    const source = found[i];
    if (!source) return [];
    const put: MovingPut = { type: 'put', key: m.to, bytes: source.bytes, ifAbsent: true, movedFrom: m.from };
    return [put, { type: 'delete', key: m.from, ifVersion: source.version }];
  });
  if (ops.length === 0) return moves.map(() => false);
  try {
    await journaled(state, ops, 'moving', ops[1]!.key);
    return found.map((f) => f !== undefined);
  } catch (err) {
    if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
  }
  return mapLimit(moves, MOVE_READS_AT_ONCE, (m) =>
    journaledMove(state, read, m.from, m.to).catch((err: unknown) => {
      if (isCheckpointError(err, 'checkpoint_conflict')) return false;
      throw err;
    }),
  );
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
