import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import type { BatchOperation, DeleteOptions, PutOptions } from '../../contract/storage.js';
import type { MemoryState } from './state.js';

/** The error every call on a closed store fails with. */
export function closedError(): CheckpointError {
  return new CheckpointError('checkpoint_closed', 'memory storage is closed');
}

/** Throws when the store is closed. */
export function assertOpen(state: MemoryState): void {
  if (state.closed) throw closedError();
}

/** Throws `checkpoint_conflict` when `cond` (ifAbsent / ifVersion) does not hold for `key`. */
export function checkCondition(state: MemoryState, key: string, cond: PutOptions & DeleteOptions): void {
  if (!cond.ifAbsent && cond.ifVersion === undefined) return;
  const cell = state.cells.get(key);
  if (cond.ifAbsent && cell) throw conditionFailed(key, 'key exists');
  if (cond.ifVersion !== undefined && cell?.version !== cond.ifVersion)
    throw conditionFailed(key, cell ? 'version changed' : 'key is gone');
}

/** Throws `checkpoint_too_large` when `bytes` is over the store's `maxValueBytes`. */
export function checkSize(state: MemoryState, key: string, bytes: Uint8Array): void {
  const options = state.options;
  if (options.maxValueBytes !== undefined && bytes.length > options.maxValueBytes) {
    throw new CheckpointError(
      'checkpoint_too_large',
      `value of ${key} is ${bytes.length} bytes, over the ${options.maxValueBytes}-byte limit`,
      {
        details: { key, size: bytes.length, limit: options.maxValueBytes },
      },
    );
  }
}

/** The store's own checks of one batch operation (size, condition), run before anything is applied. */
export function checkOperation(state: MemoryState, op: BatchOperation): void {
  if (op.type === 'put') checkSize(state, op.key, op.bytes);
  checkCondition(state, op.key, op);
}
