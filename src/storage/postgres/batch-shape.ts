import type { BatchOperation } from '../../contract/storage.js';

/*
 * The shapes of batch that postgresStorage sends as a plain statement rather than through the batch
 * function (batch.ts): a LangGraph checkpoint's pair, a writer's checked pair; and the row every
 * batch statement's answer is read as.
 */

/**
 * A row of what the batch functions answer, and what the plain statements' answers are read back
 * as: an operation's outcome (`op`, 1-based in its batch, of batch `group` when several went
 * together), or the batch's first failed condition (`failed`).
 */
export interface BatchRow {
  group?: number;
  op: number | null;
  version: string | null;
  existed: boolean | null;
  failed?: number | null;
}

/** Whether `op` is a put or check conditioned on its key being absent. */
export const ifAbsentOf = (op: BatchOperation): boolean => op.type !== 'delete' && op.ifAbsent === true;

/**
 * Two puts to two keys, the second unconditional (the shape of a LangGraph checkpoint: its
 * thread's head, then its document), then any number of unconditional deletes of other keys,
 * each named once (the checkpoints `keepLast` lets go with it, and their writes).
 */
export function isPair(operations: readonly BatchOperation[]): boolean {
  if (operations.length < 2) return false;
  const [first, second] = operations as [BatchOperation, BatchOperation];
  if (
    first.type !== 'put' ||
    second.type !== 'put' ||
    second.ifAbsent === true ||
    second.ifVersion !== undefined ||
    first.key === second.key
  )
    return false;
  if (operations.length === 2) return true;
  const named = new Set([first.key, second.key]);
  for (let i = 2; i < operations.length; i++) {
    const op = operations[i]!;
    if (op.type !== 'delete' || op.ifVersion !== undefined || named.has(op.key)) return false;
    named.add(op.key);
  }
  return true;
}

/**
 * A create, an unconditional put and a check that another key holds a version, optionally
 * followed by a put of a fourth key on its version, each key its own: a writer's checkpoint (its
 * history entry, `latest`, fenced by its run lease, and the run's index when due), sent as the
 * pair's checked statement ({@link CheckedPairSql}).
 */
export function isCheckedPair(operations: readonly BatchOperation[]): boolean {
  if (operations.length !== 3 && operations.length !== 4) return false;
  const [first, second, check, index] = operations as [BatchOperation, BatchOperation, BatchOperation, BatchOperation | undefined];
  if (
    first.type !== 'put' ||
    first.ifAbsent !== true ||
    second.type !== 'put' ||
    second.ifAbsent === true ||
    second.ifVersion !== undefined ||
    check.type !== 'check' ||
    check.ifVersion === undefined
  )
    return false;
  if (index && (index.type !== 'put' || index.ifVersion === undefined)) return false;
  return new Set(operations.map((op) => op.key)).size === operations.length;
}
