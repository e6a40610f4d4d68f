/**
 * A prototype fs store with no file per key (internal, not exported): values are appended to one
 * segment file as checksummed records, one durable write per group of calls, found again through
 * an in-memory index (key → offset, length, version) and read by `pread`. One process only; no
 * compaction. It exists to measure how fast SavepointSaver can be on a local disk without the
 * cost of a file per key (bench/LOG.md, "A packed fs store: the ceiling").
 */
import { read, readSync } from 'node:fs';
import { assertBytesArgument } from '../../contract/arguments.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertGetOptions, readTooLarge } from '../../contract/read-limit.js';
import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  GetOptions,
  MultiGetStorage,
  PutOptions,
  PutResult,
  StorageEntry,
  StoredObject,
} from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey, assertPrefix } from '../keys.js';
import { closeWhenIdle, enqueue } from './commit.js';
import { holdsLease } from './lock.js';
import { openPackedState } from './open.js';
import { encodeRecord, type RecordOp } from './record.js';
import { tail } from './tail.js';
import type { IndexEntry, PackedFsOptions, PackedState, PackedStats } from './state.js';

export type { PackedFsOptions, PackedStats } from './state.js';

/** The packed store: a StorageAdapter with multi-get, and its counts. */
export interface PackedFsStorage extends MultiGetStorage {
  readonly dir: string;
  batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]>;
  stats(): Readonly<PackedStats>;
}

function closedError(): CheckpointError {
  return new CheckpointError('checkpoint_closed', 'packed fs storage is closed');
}

function checkSize(state: PackedState, key: string, bytes: Uint8Array): void {
  const limit = state.options.maxValueBytes;
  if (limit !== undefined && bytes.length > limit)
    throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${limit}-byte limit`, {
      details: { key, size: bytes.length, limit },
    });
}

/** Encodes `ops`' record now (the caller may reuse its buffers) and answers once its group is durable. */
function submit(state: PackedState, ops: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  const written: RecordOp[] = [];
  for (const op of ops) {
    if (op.type === 'put') written.push({ kind: 'put', key: op.key, bytes: op.bytes });
    else if (op.type === 'delete') written.push({ kind: 'delete', key: op.key });
  }
  const record = written.length > 0 ? encodeRecord(written) : undefined;
  return new Promise((done, fail) => enqueue(state, { ops, record, done, fail }));
}

// Values are read into buffers of their own, not Buffer's shared pool: a caller may hold on to `bytes.buffer`.
function readSyncAt(state: PackedState, entry: IndexEntry): Uint8Array {
  const bytes = new Uint8Array(entry.length);
  let done = 0;
  while (done < entry.length) done += readSync(state.fd, bytes, done, entry.length - done, entry.offset + done);
  return bytes;
}

function readAsyncAt(state: PackedState, entry: IndexEntry): Promise<Uint8Array> {
  const bytes = new Uint8Array(entry.length);
  return new Promise((resolve, reject) => {
    const from = (done: number): void => {
      if (done >= entry.length) return resolve(bytes);
      read(state.fd, bytes, done, entry.length - done, entry.offset + done, (err, n) => (err ? reject(err) : from(done + n)));
    };
    from(0);
  });
}

/**
 * Before a read: what other processes appended is read into the index, unless this process
 * holds the lock inside its trusted lease (then nothing else can have written).
 */
function current(state: PackedState): Promise<void> | undefined {
  return holdsLease(state.lock) ? undefined : tail(state, false);
}

async function getValue(state: PackedState, key: string, options: GetOptions | undefined): Promise<StoredObject | undefined> {
  if (state.closed) throw closedError();
  assertKey(key);
  assertGetOptions(options, 'packedFsStorage.get');
  const fresh = current(state);
  if (fresh) await fresh;
  const entry = state.index.get(key);
  if (!entry) return undefined;
  const limit = options?.maxBytes;
  if (limit !== undefined && entry.length > limit) throw readTooLarge(key, entry.length, limit, "the reader's limit (maxBytes)");
  state.stats.reads++;
  // The entry names a durable, never overwritten place: it stays valid whatever is written meanwhile.
  const bytes = state.options.reads === 'sync' ? readSyncAt(state, entry) : await readAsyncAt(state, entry);
  return { bytes, version: entry.version };
}

async function* listEntries(state: PackedState, prefix: string): AsyncGenerator<StorageEntry> {
  if (state.closed) throw closedError();
  assertPrefix(prefix);
  await current(state);
  for (const key of state.order.withPrefix(prefix)) {
    const entry = state.index.get(key);
    if (entry) yield { key, version: entry.version, size: entry.length };
  }
}

/** Opens (or makes) the packed store in `options.dir`. */
export function createPackedFsStorage(options: PackedFsOptions): PackedFsStorage {
  const state = openPackedState({ sync: 'dsync', writes: 'async', reads: 'sync', ...options });
  const checkEach = (op: BatchOperation): void => {
    if (op.type === 'put') checkSize(state, op.key, op.bytes);
  };
  const storage: PackedFsStorage = {
    name: 'fs-packed',
    dir: options.dir,
    capabilities: {
      atomicBatch: true,
      crossProcessConditional: true,
      multiGet: true,
      ...(options.maxValueBytes !== undefined ? { maxValueBytes: options.maxValueBytes } : {}),
    },
    get: (key, opts) => getValue(state, key, opts),
    async getMany(keys: readonly string[], opts?: GetOptions): Promise<(StoredObject | undefined)[]> {
      if (!Array.isArray(keys)) throw new CheckpointError('checkpoint_config_invalid', 'packedFsStorage.getMany: keys must be an array');
      return Promise.all(keys.map((key) => getValue(state, key, opts)));
    },
    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      if (state.closed) throw closedError();
      assertKey(key);
      assertBytesArgument(bytes, 'packedFsStorage.put');
      checkSize(state, key, bytes);
      const [outcome] = await submit(state, [{ type: 'put', key, bytes, ...opts }]);
      return { version: (outcome as { version: string }).version };
    },
    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      if (state.closed) throw closedError();
      assertKey(key);
      const [outcome] = await submit(state, [{ type: 'delete', key, ...opts }]);
      return (outcome as { existed: boolean }).existed;
    },
    list: (prefix: string) => listEntries(state, prefix),
    async batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
      if (state.closed) throw closedError();
      assertBatchOperations(operations, checkEach);
      return submit(state, operations);
    },
    async close(): Promise<void> {
      if (state.closed) return;
      state.closed = true;
      await closeWhenIdle(state);
    },
    stats: () => ({ ...state.stats }),
  };
  return storage;
}
