import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import { forget, store, storeCopy } from './cells.js';
import { closedError } from './checks.js';
import type { MemoryState } from './state.js';

/**
 * `batch`, done at once (the store's `batchNow`): every operation is checked before any is
 * applied, so a batch is atomic. `checkOperation` is the store's own check of one operation,
 * made once per store (see memory.ts) so that a batch allocates no callback.
 */
export function batchNow(
  state: MemoryState,
  operations: readonly BatchOperation[],
  checkOperation: (op: BatchOperation) => void,
): BatchOutcome[] {
  if (state.closed) throw closedError();
  assertBatchOperations(operations, checkOperation);
  const outcomes: BatchOutcome[] = [];
  // A checkpoint's history entry and `latest` carry the same bytes, one put after the other:
  // the second reuses the first's copy (looked up by the previous put only: no map per batch).
  let lastBytes: Uint8Array | undefined;
  let lastKey = '';
  for (const op of operations) {
    if (op.type === 'put') {
      let version: string;
      const copied = op.bytes === lastBytes ? state.cells.get(lastKey) : undefined;
      if (copied) version = store(state, op.key, copied.data, copied.at, copied.length);
      else {
        version = storeCopy(state, op.key, op.bytes);
        lastBytes = op.bytes;
        lastKey = op.key;
      }
      outcomes.push({ type: 'put', key: op.key, version });
    } else if (op.type === 'delete') outcomes.push({ type: 'delete', key: op.key, existed: forget(state, op.key) });
    else outcomes.push({ type: 'check', key: op.key });
  }
  return outcomes;
}
