/**
 * The packed layout of the fs store (internal, not exported yet): values appended to segment files
 * as checksummed records, one durable write per group of calls, found again through an in-memory
 * index (key → segment, offset, length, sequence) and read by `pread`. Segments rotate at a size
 * and the sealed ones are compacted; a manifest names them (./manifest.ts, ./record.ts for the
 * format). Several processes share a directory through a lock and tailing (./lock.ts, ./hold.ts,
 * ./tail.ts). bench/LOG.md, "A packed fs store: the ceiling", measured why.
 */
import { assertBytesArgument } from '../../contract/arguments.js';
import type { AbsentLinked, LinkedRead, LinkedValues, ReadLinks } from '../../contract/linked-read.js';
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
import { assertLinkedReadArguments } from '../linked-read-arguments.js';
import { closeWhenIdle, enqueue, exclusively } from './commit.js';
import { compactSealed } from './compact.js';
import { writeHint } from './hint.js';
import { realPackedIo } from './io.js';
import { packedKeyNames, packedLinkedRead, packedValuesNow, type PackedReads } from './linked-read.js';
import { openPackedState, syncOf } from './open.js';
import { holdsLease } from './lock.js';
import { encodeRecord, versionOf, type EncodedRecord, type RecordOp } from './record.js';
import { nothingMoved, tail } from './tail.js';
import {
  NO_STATS,
  releaseSegment,
  type IndexEntry,
  type Segment,
  type PackedFsOptions,
  type PackedInternals,
  type PackedSettings,
  type PackedState,
  type PackedStats,
} from './state.js';

export type { PackedFsOptions, PackedInternals, PackedStats } from './state.js';

/** The packed store: a StorageAdapter with multi-get, a linked read and a listing by name (`listKeys`), and its counts. */
export interface PackedFsStorage extends MultiGetStorage, LinkedRead, KeyListingStorage {
  readonly dir: string;
  /** Resolves once the store is open (its segments scanned); rejects with the open's error. */
  ready(): Promise<void>;
  batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]>;
  stats(): Readonly<PackedStats>;
  /** Compacts the sealed segments now (a test seam; the store compacts by itself after a rotation). */
  compact(): Promise<void>;
}

function closedError(): CheckpointError {
  return new CheckpointError('checkpoint_closed', 'packed fs storage is closed');
}

function checkSize(settings: PackedSettings, key: string, bytes: Uint8Array): void {
  const limit = settings.maxValueBytes;
  if (limit !== undefined && bytes.length > limit)
    throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${limit}-byte limit`, {
      details: { key, size: bytes.length, limit },
    });
}

/** Encodes `ops`' record now (the caller may reuse its buffers) and answers once its group is durable. */
function submit(opening: Opening, ops: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  const written: RecordOp[] = [];
  for (const op of ops) {
    if (op.type === 'put') written.push({ kind: 'put', key: op.key, bytes: op.bytes });
    else if (op.type === 'delete') written.push({ kind: 'delete', key: op.key });
  }
  const record = written.length > 0 ? encodeRecord(written) : undefined;
  // No extra promise once open: a call is answered one group later, not one more turn of microtasks.
  if (opening.state) return queued(opening.state, ops, record);
  return opened(opening).then((state) => queued(state, ops, record));
}

function queued(state: PackedState, ops: readonly BatchOperation[], record: EncodedRecord | undefined): Promise<BatchOutcome[]> {
  return new Promise((done, fail) => enqueue(state, { ops, record, done, fail }));
}

// Values are read into buffers of their own, not Buffer's shared pool: a caller may hold on to `bytes.buffer`.
function readSyncAt(state: PackedState, entry: IndexEntry): Uint8Array {
  const bytes = new Uint8Array(entry.length);
  let done = 0;
  while (done < entry.length) {
    const n = state.io.readSync(entry.segment.fd, bytes, done, entry.length - done, entry.offset + done);
    if (n === 0) throw shortSegment(state, entry);
    done += n;
  }
  return bytes;
}

/** `into.length` bytes of `segment` from `offset`. */
function readSpanSync(state: PackedState, segment: Segment, into: Uint8Array, offset: number): void {
  let done = 0;
  while (done < into.length) {
    const n = state.io.readSync(segment.fd, into, done, into.length - done, offset + done);
    if (n === 0)
      throw new CheckpointError(
        'checkpoint_integrity_mismatch',
        `packed store ${state.dir}: segment ${segment.id} ends before a value it holds`,
      );
    done += n;
  }
}

function shortSegment(state: PackedState, entry: IndexEntry): CheckpointError {
  return new CheckpointError(
    'checkpoint_integrity_mismatch',
    `packed store ${state.dir}: segment ${entry.segment.id} ends before a value it holds`,
  );
}

// The segment is pinned: a compaction that retires it meanwhile closes its descriptor only after this read.
async function readAsyncAt(state: PackedState, entry: IndexEntry): Promise<Uint8Array> {
  const segment = entry.segment;
  segment.pins++;
  try {
    const bytes = await state.io.read(segment.fd, entry.length, entry.offset);
    if (bytes.length < entry.length) throw shortSegment(state, entry);
    return bytes;
  } finally {
    segment.pins--;
    releaseSegment(state, segment);
  }
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
    versionOf: (entry) => versionOf(entry.sequence),
    readNow: (entry) => readSyncAt(state, entry),
    placeOf: (entry) => ({ file: entry.segment, offset: entry.offset }),
    readSpanNow: (file, into, offset) => readSpanSync(state, file as Segment, into, offset),
    keysUnder: (prefix) => state.order.withPrefix(prefix),
    limit: readLimitOf(state, undefined),
  };
}

/** The reads and the linked read of the open store, made at their first use. */
const readsKept = new WeakMap<PackedState, PackedReads<IndexEntry>>();
const linkedReads = new WeakMap<PackedState, ReturnType<typeof packedLinkedRead>>();

function readsFor(state: PackedState): PackedReads<IndexEntry> {
  let reads = readsKept.get(state);
  if (!reads) readsKept.set(state, (reads = readsOf(state)));
  return reads;
}

function linkedReadOf(state: PackedState): ReturnType<typeof packedLinkedRead> {
  let linked = linkedReads.get(state);
  if (!linked) linkedReads.set(state, (linked = packedLinkedRead(readsFor(state))));
  return linked;
}

/**
 * Before a read: what other processes wrote is read into the index, unless this process holds
 * the lock inside its trusted lease (then nothing else can have written).
 */
function current(state: PackedState): Promise<void> | undefined {
  return holdsLease(state.lock) || nothingMoved(state) ? undefined : tail(state, false);
}

async function getValue(state: PackedState, key: string, options: GetOptions | undefined): Promise<StoredObject | undefined> {
  if (state.closed) throw closedError();
  assertKey(key);
  assertGetOptions(options, 'packedFsStorage.get');
  const fresh = current(state);
  if (fresh) await fresh;
  const entry = state.index.get(key);
  if (!entry) return undefined;
  const limit = readLimitOf(state, options?.maxBytes);
  if (entry.length > limit.bytes) throw readTooLarge(key, entry.length, limit.bytes, limit.whose);
  state.stats.reads++;
  // The entry names a durable, never overwritten place: it stays valid whatever is written meanwhile.
  const bytes = state.options.reads === 'sync' ? readSyncAt(state, entry) : await readAsyncAt(state, entry);
  return { bytes, version: versionOf(entry.sequence) };
}

async function* listEntries(opening: Opening, prefix: string): AsyncGenerator<StorageEntry> {
  const state = await opened(opening);
  assertPrefix(prefix);
  await current(state);
  for (const key of state.order.withPrefix(prefix)) {
    const entry = state.index.get(key);
    if (entry) yield { key, version: versionOf(entry.sequence), size: entry.length };
  }
}

const DEFAULTS = {
  sync: 'dsync',
  writes: 'adaptive',
  reads: 'sync',
  segmentBytes: 64 * 1024 * 1024,
  preallocBytes: 1024 * 1024,
  compactMinBytes: 4 * 1024 * 1024,
  compactLiveRatio: 0.5,
} as const;

/** The store while it opens (the first call waits for it) and once open. */
interface Opening {
  readonly settings: PackedSettings;
  readonly ready: Promise<PackedState>;
  state: PackedState | undefined;
  closed: boolean;
}

function startOpening(options: PackedFsOptions, internals: PackedInternals): Opening {
  const given: PackedSettings = { ...DEFAULTS, ...options };
  const settings: PackedSettings = { ...given, sync: syncOf(given.sync) };
  const ready = openPackedState(settings, internals.io ?? realPackedIo, internals.now);
  const opening: Opening = { settings, ready, state: undefined, closed: false };
  ready.then(
    (state) => (opening.state = state),
    () => undefined, // reported to the first call that waits for it
  );
  return opening;
}

/** The open state (the open's error if it failed), or `checkpoint_closed`. */
async function opened(opening: Opening): Promise<PackedState> {
  if (opening.closed) throw closedError();
  return opening.state ?? (await opening.ready);
}

/**
 * Opens (or makes) the packed store in `options.dir`. The store opens in the background: the
 * first call waits for it (and fails with its error).
 */
export function createPackedFsStorage(options: PackedFsOptions, internals: PackedInternals = {}): PackedFsStorage {
  const opening = startOpening(options, internals);
  const checkEach = (op: BatchOperation): void => {
    if (op.type === 'put') checkSize(opening.settings, op.key, op.bytes);
  };
  const storage: Omit<PackedFsStorage, 'listKeys'> = {
    name: 'fs-packed',
    dir: options.dir,
    capabilities: {
      atomicBatch: true,
      crossProcessConditional: true,
      multiGet: true,
      linkedRead: true,
      // No other tool reads segment files: a profile whose files others read refuses this store.
      opaqueValues: true,
      versionsPerWrite: true,
      ...(options.maxValueBytes !== undefined ? { maxValueBytes: options.maxValueBytes } : {}),
    },
    get: async (key, opts) => getValue(opening.state ?? (await opened(opening)), key, opts),
    async getMany(keys: readonly string[], opts?: GetOptions): Promise<(StoredObject | undefined)[]> {
      if (!Array.isArray(keys)) throw new CheckpointError('checkpoint_config_invalid', 'packedFsStorage.getMany: keys must be an array');
      const state = opening.state ?? (await opened(opening));
      if (state.options.reads !== 'sync') return Promise.all(keys.map((key) => getValue(state, key, opts)));
      if (state.closed) throw closedError();
      for (const key of keys) assertKey(key);
      assertGetOptions(opts, 'packedFsStorage.getMany');
      const fresh = current(state);
      if (fresh) await fresh;
      const values = packedValuesNow(readsFor(state), keys, readLimitOf(state, opts?.maxBytes));
      for (const value of values) if (value) state.stats.reads++;
      return values;
    },
    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      if (opening.closed) throw closedError();
      assertKey(key);
      assertBytesArgument(bytes, 'packedFsStorage.put');
      checkSize(opening.settings, key, bytes);
      const [outcome] = await submit(opening, [{ type: 'put', key, bytes, ...opts }]);
      return { version: (outcome as { version: string }).version };
    },
    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      if (opening.closed) throw closedError();
      assertKey(key);
      const [outcome] = await submit(opening, [{ type: 'delete', key, ...opts }]);
      return (outcome as { existed: boolean }).existed;
    },
    list: (prefix: string) => listEntries(opening, prefix),
    async getLinked(key: string, links: ReadLinks): Promise<LinkedValues | AbsentLinked | undefined> {
      const state = opening.state ?? (await opened(opening));
      if (opening.closed) throw closedError();
      assertLinkedReadArguments(key, links, 'fsStorage.getLinked');
      const fresh = current(state);
      if (fresh) await fresh;
      return linkedReadOf(state)(key, links);
    },
    async ready(): Promise<void> {
      await opened(opening);
    },
    async batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
      if (opening.closed) throw closedError();
      assertBatchOperations(operations, checkEach);
      return submit(opening, operations);
    },
    async close(): Promise<void> {
      if (opening.closed) return;
      opening.closed = true;
      const state = await opening.ready.catch(() => undefined);
      if (!state) return;
      state.closed = true;
      await closeWhenIdle(state);
    },
    stats: () => ({ ...(opening.state?.stats ?? NO_STATS) }),
    async compact(): Promise<void> {
      const state = await opened(opening);
      await exclusively(state, async () => {
        await compactSealed(state);
        await writeHint(state);
      });
    },
  };
  // Not enumerable, as fsStorage's: a wrapper made by spreading the store must not carry a listing that bypasses its own.
  Object.defineProperty(storage, 'listKeys', {
    value: async function* listKeys(prefix: string): AsyncGenerator<string> {
      const state = await opened(opening);
      assertPrefix(prefix);
      await current(state);
      yield* packedKeyNames(readsFor(state), prefix);
    },
  });
  return storage as PackedFsStorage;
}
