import { CheckpointError } from '../../contract/errors.js';
import type { StorageEntry } from '../../contract/storage.js';
import { runOperation } from './run.js';
import type { FaultState } from './state.js';

/** `list(prefix)` of the wrapper: the whole listing counts as one operation, faulted before the first entry. */
export function faultyList(state: FaultState, prefix: string): AsyncIterable<StorageEntry> {
  return {
    [Symbol.asyncIterator]: () => {
      let iterator: AsyncIterator<StorageEntry> | undefined;
      return {
        async next(): Promise<IteratorResult<StorageEntry>> {
          if (!iterator) {
            iterator = await runOperation(state, 'list', [prefix], async () => state.inner.list(prefix)[Symbol.asyncIterator]());
          }
          if (state.crashed)
            throw new CheckpointError(state.reasonCode, 'storage crashed during list', { details: { operation: 'list', crashed: true } });
          return iterator.next();
        },
      };
    },
  };
}
