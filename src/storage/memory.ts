import { CheckpointError } from '../contract/errors.js';
import { assertBytesArgument, assertOptionsArgument } from '../contract/arguments.js';
import type { BatchOperation, BatchOutcome, DeleteOptions, PutOptions, PutResult, StorageAdapter, StorageEntry, StoredObject } from '../contract/storage.js';
import { assertBatchOperations } from './batch-operation.js';
import { ownedCopy } from './handed-over.js';
import { declareSynchronous } from '../contract/synchronous-storage.js';
import { assertKey, assertPrefix } from './keys.js';
import { sortedKeys } from './sorted-keys.js';

/** Values up to this size share slabs of SLAB_BYTES (see copyOf). */
const SLAB_VALUE_LIMIT = 4096;
const SLAB_BYTES = 65536;

/** Options of {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /**
   * Largest value accepted, in bytes; larger puts fail with `checkpoint_too_large`.
   * @default undefined (no limit)
   */
  maxValueBytes?: number;
}

/** A stored value: bytes `at` to `at + length` of `data` (a shared slab, or a buffer of its own), and its version. */
interface Cell {
  readonly data: Uint8Array;
  readonly at: number;
  readonly length: number;
  readonly version: string;
}

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
  const cells = new Map<string, Cell>();
  // Listing order kept as keys come and go: a prefix is listed without scanning the whole store.
  const order = sortedKeys();
  let counter = 0;
  let closed = false;

  const open = (): void => {
    if (closed) throw new CheckpointError('checkpoint_closed', 'memory storage is closed');
  };
  const conflict = (key: string, why: string): CheckpointError =>
    new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });

  const check = (key: string, cond: PutOptions & DeleteOptions): void => {
    if (!cond.ifAbsent && cond.ifVersion === undefined) return;
    const cell = cells.get(key);
    if (cond.ifAbsent && cell) throw conflict(key, 'key exists');
    if (cond.ifVersion !== undefined && cell?.version !== cond.ifVersion) throw conflict(key, cell ? 'version changed' : 'key is gone');
  };
  const checkSize = (key: string, bytes: Uint8Array): void => {
    if (options.maxValueBytes !== undefined && bytes.length > options.maxValueBytes) {
      throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${options.maxValueBytes}-byte limit`, {
        details: { key, size: bytes.length, limit: options.maxValueBytes },
      });
    }
  };
  const checkOperation = (op: BatchOperation): void => {
    if (op.type === 'put') checkSize(op.key, op.bytes);
    check(op.key, op);
  };
  // A stored copy is never changed (a put replaces the cell; get() hands out copies), so the
  // puts of one batch that carry the same bytes (a checkpoint's history file and `latest`)
  // share one copy instead of each making its own.
  // Small values are copied into views of a shared slab: a Uint8Array of its own is a
  // backing store allocated and tracked apart, which cost more than the copy. The views never
  // leave the store (get() hands out copies), so no caller can reach a neighbour through `.buffer`.
  // A cell names its place in the slab (no view per value: a typed array is an allocation of
  // its own, and the store is called between LangGraph's steps, cache-cold).
  let slab = new Uint8Array(0);
  let slabAt = 0;
  /** Copies `bytes` (or takes them, when handed over) and stores them under `key`; returns the new version. */
  const storeCopy = (key: string, bytes: Uint8Array): string => {
    const length = bytes.length;
    // A buffer the writer made and handed over (a split checkpoint's parts) is kept as it is: no one changes it.
    if (length > SLAB_VALUE_LIMIT) return store(key, ownedCopy(bytes), 0, length);
    if (slabAt + length > slab.length) {
      slab = new Uint8Array(SLAB_BYTES);
      slabAt = 0;
    }
    slab.set(bytes, slabAt);
    slabAt += length;
    return store(key, slab, slabAt - length, length);
  };
  /** Stores bytes `at` to `at + length` of `data` (which the store owns) under `key`; returns the new version. */
  const store = (key: string, data: Uint8Array, at: number, length: number): string => {
    const version = String(++counter);
    // One hash lookup, not two: the map grows only when the key is new.
    const size = cells.size;
    cells.set(key, { data, at, length, version });
    if (cells.size !== size) order.add(key);
    return version;
  };

  const forget = (key: string): boolean => {
    if (!cells.delete(key)) return false;
    order.remove(key);
    return true;
  };

  const putNow = (key: string, bytes: Uint8Array, opts: PutOptions = {}): PutResult => {
    open();
    assertKey(key);
    // A string would be stored as-is and come back as a string: refuse it, as batch() does.
    assertBytesArgument(bytes, 'memoryStorage.put');
    checkSize(key, bytes);
    check(key, opts);
    return { version: storeCopy(key, bytes) };
  };

  const batchNow = (operations: readonly BatchOperation[]): BatchOutcome[] => {
    open();
    assertBatchOperations(operations, checkOperation);
    const outcomes: BatchOutcome[] = [];
    // A checkpoint's history entry and `latest` carry the same bytes, one put after the other:
    // the second reuses the first's copy (looked up by the previous put only: no map per batch).
    let lastBytes: Uint8Array | undefined;
    let lastKey = '';
    for (const op of operations) {
      if (op.type === 'put') {
        let version: string;
        const copied = op.bytes === lastBytes ? cells.get(lastKey) : undefined;
        if (copied) version = store(op.key, copied.data, copied.at, copied.length);
        else {
          version = storeCopy(op.key, op.bytes);
          lastBytes = op.bytes;
          lastKey = op.key;
        }
        outcomes.push({ type: 'put', key: op.key, version });
      } else if (op.type === 'delete') outcomes.push({ type: 'delete', key: op.key, existed: forget(op.key) });
      else outcomes.push({ type: 'check', key: op.key });
    }
    return outcomes;
  };

  // put() and batch() copy the bytes before their first await: a caller may reuse its buffer as soon as the call returns.
  // All their work is synchronous: declared as putNow/batchNow (SynchronousStorage, see immediate.ts).
  const adapter: StorageAdapter = {
    name: 'memory',
    capabilities: { atomicBatch: true, crossProcessConditional: false, ...(options.maxValueBytes !== undefined ? { maxValueBytes: options.maxValueBytes } : {}) },

    async get(key: string): Promise<StoredObject | undefined> {
      open();
      assertKey(key);
      const cell = cells.get(key);
      if (!cell) return undefined;
      return { bytes: cell.data.slice(cell.at, cell.at + cell.length), version: cell.version };
    },

    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      return putNow(key, bytes, opts);
    },

    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      open();
      assertKey(key);
      check(key, opts);
      return forget(key);
    },

    async *list(prefix: string): AsyncIterable<StorageEntry> {
      open();
      assertPrefix(prefix);
      for (const key of order.withPrefix(prefix)) {
        const cell = cells.get(key);
        if (cell) yield { key, version: cell.version, size: cell.length };
      }
    },

    async batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
      return batchNow(operations);
    },

    async close(): Promise<void> {
      closed = true;
    },
  };
  return declareSynchronous(adapter, { put: putNow, batch: batchNow });
}
