/**
 * A prototype fs store with no file per key (internal, not exported): values are appended to one
 * segment file as checksummed records, one durable write per group of calls, found again through
 * an in-memory index (key → offset, length, version) and read by `pread`. One process only; no
 * compaction. It exists to measure how fast SavepointSaver can be on a local disk without the
 * cost of a file per key (bench/LOG.md, "A packed fs store: the ceiling").
 */
import { read, readSync } from 'node:fs';
import { assertBytesArgument } from '../../contract/arguments.js';
import type { LinkedRead, LinkedValues, ReadLinks } from '../../contract/linked-read.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertGetOptions, readTooLarge } from '../../contract/read-limit.js';
import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  GetOptions,
  KeyListingStorage,
  MultiGetStorage,
  PutOptions,
  PutResult,
  StorageEntry,
  StoredObject,
} from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey, assertPrefix } from '../keys.js';
import { closeWhenIdle, enqueue } from './commit.js';
import { packedKeyNames, packedLinkedRead, type PackedReads } from './linked-read.js';
import { openPackedState } from './open.js';
import { encodeRecord, type RecordOp } from './record.js';
import type { IndexEntry, PackedFsOptions, PackedState, PackedStats } from './state.js';

export type { PackedFsOptions, PackedStats } from './state.js';

/** The packed store: a StorageAdapter with multi-get, a linked read and a listing by name (`listKeys`), and its counts. */
export interface PackedFsStorage extends MultiGetStorage, LinkedRead, KeyListingStorage {
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

/** The smaller of the store's `maxReadBytes` and the reader's `maxBytes`, and whose limit that is. */
function readLimitOf(state: PackedState, asked: number | undefined): PackedReads<IndexEntry>['limit'] {
  const store = state.options.maxReadBytes ?? Infinity;
  return asked !== undefined && asked < store
    ? { bytes: asked, whose: "the reader's limit (maxBytes)" }
    : { bytes: store, whose: "the store's limit (maxReadBytes)" };
}

/** The index and reads the linked read and the listing by name answer from. */
function readsOf(state: PackedState): PackedReads<IndexEntry> {
  return {
    entryOf: (key) => state.index.get(key),
    lengthOf: (entry) => entry.length,
    versionOf: (entry) => entry.version,
    keysUnder: (prefix) => state.order.withPrefix(prefix),
    readNow: (entry) => readSyncAt(state, entry),
    limit: readLimitOf(state, undefined),
  };
}

async function getValue(state: PackedState, key: string, options: GetOptions | undefined): Promise<StoredObject | undefined> {
  if (state.closed) throw closedError();
  assertKey(key);
  assertGetOptions(options, 'packedFsStorage.get');
  const entry = state.index.get(key);
  if (!entry) return undefined;
  const limit = readLimitOf(state, options?.maxBytes);
  if (entry.length > limit.bytes) throw readTooLarge(key, entry.length, limit.bytes, limit.whose);
  state.stats.reads++;
  // The entry names a durable, never overwritten place: it stays valid whatever is written meanwhile.
  const bytes = state.options.reads === 'sync' ? readSyncAt(state, entry) : await readAsyncAt(state, entry);
  return { bytes, version: entry.version };
}

async function* listEntries(state: PackedState, prefix: string): AsyncGenerator<StorageEntry> {
  if (state.closed) throw closedError();
  assertPrefix(prefix);
  for (const key of state.order.withPrefix(prefix)) {
    const entry = state.index.get(key);
    if (entry) yield { key, version: entry.version, size: entry.length };
  }
}

/** Opens (or makes) the packed store in `options.dir`. */
export function createPackedFsStorage(options: PackedFsOptions): PackedFsStorage {
  const state = openPackedState({ sync: 'dsync', writes: 'async', reads: 'sync', ...options });
  const reads = readsOf(state);
  const linked = packedLinkedRead(reads);
  const checkEach = (op: BatchOperation): void => {
    if (op.type === 'put') checkSize(state, op.key, op.bytes);
  };
  const storage: Omit<PackedFsStorage, 'listKeys'> = {
    name: 'fs-packed',
    dir: options.dir,
    capabilities: {
      atomicBatch: true,
      crossProcessConditional: false,
      multiGet: true,
      linkedRead: true,
      // No other tool reads segment files: a profile whose files others read refuses this store.
      opaqueValues: true,
      versionsPerWrite: true,
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
    async getLinked(key: string, links: ReadLinks): Promise<LinkedValues | undefined> {
      if (state.closed) throw closedError();
      return linked(key, links);
    },
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
  // Not enumerable, as fsStorage's: a wrapper made by spreading the store must not carry a listing that bypasses its own.
  Object.defineProperty(storage, 'listKeys', {
    value: async function* listKeys(prefix: string): AsyncGenerator<string> {
      if (state.closed) throw closedError();
      yield* packedKeyNames(reads, prefix);
    },
  });
  return storage as PackedFsStorage;
}
