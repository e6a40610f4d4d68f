import { CheckpointError } from '../contract/errors.js';
import type { BatchOperation } from '../contract/storage.js';
import { assertKey } from './keys.js';

/**
 * Checks one operation of a `batch()` call before anything is applied: a known `type`, a
 * valid key, bytes for a put, and a condition for a check. Adapters call it so that a
 * malformed operation is a `checkpoint_config_invalid`, never a delete or a raw TypeError.
 */
export function assertBatchOperation(op: BatchOperation): void {
  if (!op || typeof op !== 'object') throw new CheckpointError('checkpoint_config_invalid', 'a batch operation must be an object');
  const type = (op as { type?: unknown }).type;
  if (type !== 'put' && type !== 'delete' && type !== 'check') {
    throw new CheckpointError('checkpoint_config_invalid', `unknown batch operation type ${JSON.stringify(type) ?? String(type)}`);
  }
  assertKey(op.key);
  if (op.type === 'put' && !(op.bytes instanceof Uint8Array)) {
    throw new CheckpointError('checkpoint_config_invalid', `batch put of ${op.key} needs bytes (a Uint8Array)`, {
      details: { key: op.key },
    });
  }
  const cond = op as { ifVersion?: unknown; ifAbsent?: unknown };
  if (op.type === 'check' && typeof cond.ifVersion !== 'string' && cond.ifAbsent !== true) {
    throw new CheckpointError('checkpoint_config_invalid', `batch check of ${op.key} needs ifVersion or ifAbsent`, {
      details: { key: op.key },
    });
  }
}

/**
 * Checks a whole `batch()` call before anything is applied: an array, every operation (see
 * {@link assertBatchOperation}), the adapter's own checks through `each` (size limits,
 * conditions), and no key named twice (`checkpoint_conflict`).
 */
export function assertBatchOperations(operations: readonly BatchOperation[], each?: (op: BatchOperation) => void): void {
  if (!Array.isArray(operations)) throw new CheckpointError('checkpoint_config_invalid', 'batch() takes an array of operations');
  // A short batch (a checkpoint and its head: the saver's every put) is checked for a key named
  // twice by comparing with the keys before it, without a set to allocate.
  const seen = operations.length > SHORT_BATCH ? new Set<string>() : undefined;
  for (let i = 0; i < operations.length; i++) {
    const op = operations[i]!;
    assertBatchOperation(op);
    each?.(op);
    if (seen ? seen.has(op.key) : namedBefore(operations, i)) {
      throw new CheckpointError('checkpoint_conflict', `batch names ${op.key} twice`, { details: { key: op.key } });
    }
    seen?.add(op.key);
  }
}

/** Batches up to this many operations are checked for a repeated key pair by pair. */
const SHORT_BATCH = 8;

/** Whether operation `i`'s key is one an operation before it names. */
function namedBefore(operations: readonly BatchOperation[], i: number): boolean {
  const key = operations[i]!.key;
  for (let j = 0; j < i; j++) if (operations[j]!.key === key) return true;
  return false;
}
