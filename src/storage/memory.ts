import { CheckpointError } from '../contract/errors.js';
import { assertOptionsArgument } from '../contract/arguments.js';
import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  GetOptions,
  PutOptions,
  PutResult,
  StorageAdapter,
  StorageEntry,
  StoredObject,
  MultiGetStorage,
} from '../contract/storage.js';
import type { MovableStorage } from '../contract/move.js';
import { declareSynchronous } from '../contract/synchronous-storage.js';
import { batchNow } from './memory/batch.js';
import { checkOperation } from './memory/checks.js';
import { deleteNow } from './memory/delete.js';
import { moveNow } from './memory/move.js';
import { putNow } from './memory/put.js';
import { getManyNow, getNow, listEntries, listKeyNames } from './memory/read.js';
import { createMemoryState, type MemoryStorageOptions } from './memory/state.js';

export type { MemoryStorageOptions } from './memory/state.js';

/**
 * An in-process store: the embedded default and the test double. Values are copied on
 * the way in and out, so callers cannot change stored bytes by mutating a buffer.
 * Batches are atomic. Nothing survives the process.
 *
 * @example
 * ```ts
 * const storage = memoryStorage();
 * await storage.put('a/b.json', new TextEncoder().encode('{}'), { ifAbsent: true });
 * ```
 */
export function memoryStorage(options: MemoryStorageOptions = {}): StorageAdapter {
  assertOptionsArgument(options, 'memoryStorage');
  const maxValueBytes: unknown = options.maxValueBytes;
  if (maxValueBytes !== undefined && (typeof maxValueBytes !== 'number' || !(maxValueBytes >= 0))) {
    throw new CheckpointError('checkpoint_config_invalid', 'memoryStorage: maxValueBytes must be a non-negative number');
  }
  const state = createMemoryState(options);
  // Made once per store, so that a batch allocates no callback for its checks.
  const checkEach = (op: BatchOperation): void => checkOperation(state, op);
  const put = (key: string, bytes: Uint8Array, opts?: PutOptions): PutResult => putNow(state, key, bytes, opts);
  const batch = (operations: readonly BatchOperation[]): BatchOutcome[] => batchNow(state, operations, checkEach);

  // put() and batch() copy the bytes before their first await: a caller may reuse its buffer as soon as the call returns.
  // All their work is synchronous: declared as putNow/batchNow (SynchronousStorage, see contract/synchronous-storage.ts).
  const adapter: StorageAdapter = {
    name: 'memory',
    capabilities: {
      atomicBatch: true,
      crossProcessConditional: false,
      move: true,
      multiGet: true,
      versionsPerWrite: true,
      ...(options.maxValueBytes !== undefined ? { maxValueBytes: options.maxValueBytes } : {}),
    },
    async get(key: string, opts?: GetOptions): Promise<StoredObject | undefined> {
      return getNow(state, key, opts);
    },
    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      return putNow(state, key, bytes, opts);
    },
    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      return deleteNow(state, key, opts);
    },
    list(prefix: string): AsyncIterable<StorageEntry> {
      return listEntries(state, prefix);
    },
    async batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
      return batchNow(state, operations, checkEach);
    },
    async close(): Promise<void> {
      state.closed = true;
    },
  };
  // Not enumerable, as the synchronous members: a wrapper made by spreading the store (`{ ...storage, put }`) must not carry a move or a multi-get that bypasses its own writes and reads.
  const move: MovableStorage['move'] = async (from, to) => moveNow(state, from, to);
  Object.defineProperty(adapter, 'move', { value: move });
  Object.defineProperty(adapter, 'listKeys', { value: (prefix: string): AsyncIterable<string> => listKeyNames(state, prefix) });
  const getMany: MultiGetStorage['getMany'] = async (keys, opts) => getManyNow(state, keys, opts);
  Object.defineProperty(adapter, 'getMany', { value: getMany });
  return declareSynchronous(adapter, { putNow: put, batchNow: batch });
}
