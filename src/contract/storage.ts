import { assertStorageArgument, assertStringArgument } from './arguments.js';
import { CheckpointError } from './errors.js';
/**
 * The StorageAdapter contract: a small key → bytes store with conditional writes.
 *
 * Keys are slash-separated relative paths (`checkpoints/run-1/latest.json`), checked by
 * {@link assertKey}: well-formed Unicode only (no lone UTF-16 surrogate, which a store naming
 * files or rows in UTF-8 would turn into U+FFFD and alias with another key). Versions are
 * opaque strings that make "replace only if nobody changed it since I read" possible. An adapter's versions either change on every write (memory,
 * fs) or name the content (GitHub blob shas: identical bytes keep their version); either
 * way a write conditioned on a version replaces exactly what the caller read. Adapters
 * declare which to the conformance suite (`versions: 'per-write' | 'content'`).
 *
 * Every adapter must pass `runStorageConformance` from `savepoint/testing`. A store that
 * holds writes locally before its backend has them adds the members of `BufferedStorage`
 * (buffered.ts): they are no part of this contract.
 */

/** What an adapter can do beyond the required operations. Declared, never guessed. */
export interface StorageCapabilities {
  /** `batch()` exists and commits all its operations or none of them. */
  readonly atomicBatch: boolean;
  /**
   * Conditional writes (`ifAbsent`, `ifVersion`) hold between processes, not just
   * within one adapter instance (fs: O_EXCL/link and lock files; github: blob shas).
   */
  readonly crossProcessConditional: boolean;
  /** Largest value the backend accepts, in bytes, if it has a limit. */
  readonly maxValueBytes?: number;
  /**
   * The backend holds values in a form no other tool reads (an encrypted store holds only
   * ciphertext). A profile whose files other tools read (`Profile.sharedFiles`) refuses such a
   * store unless {@link StorageCapabilities.sharedFilesAccepted}. Absent means false.
   */
  readonly opaqueValues?: boolean;
  /** The store's user accepted that other tools cannot read a shared-file profile's files through this opaque store. */
  readonly sharedFilesAccepted?: boolean;
  /** The store carries `listWhereMetadata` (metadata-listing.ts): a listing narrowed by its documents' metadata. Absent means false. */
  readonly metadataListing?: boolean;
  /** The store carries `getLinked` (linked-read.ts): a value and the keys its members name, in one round trip. Absent means false. */
  readonly linkedRead?: boolean;
  /** The store carries `move` (move.ts): a value moved to another key in one step of the backend. Absent means false. */
  readonly move?: boolean;
  /**
   * Each key is a file of its own (fsStorage): a new key costs an inode and several file-system
   * calls, however small its value, so a caller that can hold the same data in fewer, larger
   * values should (the LangGraph saver's content chunks: wider chunk-tree nodes). A hint about
   * cost, not a capability: absent means false, and every operation behaves the same either way.
   */
  readonly keysAreFiles?: boolean;
  /** The store carries `getMany` ({@link MultiGetStorage}): several keys' values in one round trip. Absent means false. */
  readonly multiGet?: boolean;
  /**
   * Every write of a key — a put (also of the same bytes), a batch's put, a move onto it, a put
   * after a delete — gives it a version it never had before, so a version once seen never
   * matches again after any write (memory: a counter; fs: an mtime past the previous one;
   * PostgreSQL: a sequence). Not where versions name the content (GitHub's blob shas). The chunk
   * sweep relies on it to delete a chunk it found unreferenced without hiding it first. Absent
   * means false.
   */
  readonly versionsPerWrite?: boolean;
}

/** A stored value and its version. */
export interface StoredObject {
  readonly bytes: Uint8Array;
  readonly version: string;
}

/** One key seen by `list()`. */
export interface StorageEntry {
  readonly key: string;
  readonly version: string;
  /** Size in bytes of the stored value. */
  readonly size: number;
}

/** Options of a `get`. */
export interface GetOptions {
  /**
   * The largest value the caller will take. An adapter that knows a value's size before reading
   * it (fs: from `stat`; memory) refuses a larger one with `checkpoint_too_large` (details `key`,
   * `bytes`, `limit`) without reading it, so a huge planted file costs neither time nor memory.
   * Other adapters may ignore it: savepoint's readers also check the size of what they get.
   * Readers pass the profile's `maxSnapshotBytes`.
   */
  readonly maxBytes?: number;
}

/** Conditions of a `put`. With neither, the put creates or replaces unconditionally. */
export interface PutOptions {
  /** Create only: fail with `checkpoint_conflict` if the key exists. */
  readonly ifAbsent?: boolean;
  /** Replace only if the stored version is still this one; fail with `checkpoint_conflict` otherwise (also when the key is gone). */
  readonly ifVersion?: string;
  /**
   * What the caller that built the bytes knows their metadata to be (see {@link KnownMetadata}),
   * so a store that indexes it need not parse them. Not a condition; stores that index no
   * metadata ignore it.
   */
  readonly knownMetadata?: KnownMetadata;
}

/**
 * A document's metadata as a store that indexes it (postgresStorage's metadata column) would
 * work out from the bytes: the document's `metadata` member as JSON text, `'{}'` when it has
 * none (or one that is not an object), null when it is unknown (no JSON object, a chunk
 * envelope, a `metadata_blob`, metadata naming `lc`). A store takes it only for a put of the
 * very array in `bytes` (compared by identity), so a wrapper that puts other bytes (ciphertext,
 * a copy it changed) drops it without knowing of it; one that changes the array in place must
 * drop it itself. Only a caller that built the document passes it; savepoint's saver does.
 */
export interface KnownMetadata {
  /** The bytes described: the put's own array. */
  readonly bytes: Uint8Array;
  /** The metadata as JSON text (`jsonb` input), `'{}'` when the document has none, null when unknown. */
  readonly json: string | null;
}

/** Conditions of a `delete`. */
export interface DeleteOptions {
  /** Delete only if the stored version is still this one; `checkpoint_conflict` otherwise. */
  readonly ifVersion?: string;
}

/** The result of a successful put. */
export interface PutResult {
  /** The version now stored under the key. */
  readonly version: string;
}

// Kept here too, so every name of the contract still resolves from this module.
export type { RateBudget } from './buffered-storage.js';

/**
 * A condition on a key that a batch asserts without writing it: the batch applies only if
 * `key` still has `ifVersion` (or, with `ifAbsent`, does not exist). Writers fence every
 * checkpoint with their lease this way (DESIGN invariant 7): a stale lease holder's batch
 * fails with `checkpoint_conflict` and is never acknowledged.
 */
export type BatchCheck = { readonly type: 'check'; readonly key: string } & (
  { readonly ifVersion: string; readonly ifAbsent?: undefined } | { readonly ifAbsent: true; readonly ifVersion?: undefined }
);

/** One operation of an atomic {@link StorageAdapter.batch}. */
export type BatchOperation =
  | ({ readonly type: 'put'; readonly key: string; readonly bytes: Uint8Array } & PutOptions)
  | ({ readonly type: 'delete'; readonly key: string } & DeleteOptions)
  | BatchCheck;

/** Options of {@link StorageAdapter.batch}. */
export interface BatchOptions {
  /**
   * The batch must not wait: an adapter that holds writes to spend fewer requests (githubStorage
   * below its rate floor) sends this one at once. Writers set it for a `critical` trigger's checkpoint.
   */
  readonly urgent?: boolean;
}

/** Per-operation outcome of a batch, in the order given. */
export type BatchOutcome =
  | { readonly type: 'put'; readonly key: string; readonly version: string }
  | { readonly type: 'delete'; readonly key: string; readonly existed: boolean }
  /** A {@link BatchCheck} that held. */
  | { readonly type: 'check'; readonly key: string };

/**
 * A key → bytes store. All methods reject with a `CheckpointError`:
 * `checkpoint_key_invalid` for a bad key, `checkpoint_conflict` when a condition fails,
 * `checkpoint_atomic_write_failed` when a write could not be made durable,
 * `checkpoint_storage_unavailable` / `checkpoint_rate_limited` for backend trouble,
 * `checkpoint_closed` after `close()`.
 */
export interface StorageAdapter {
  /** Short adapter name for messages and reports (`memory`, `fs`, `github`). */
  readonly name: string;
  readonly capabilities: StorageCapabilities;
  /** The value under `key` (a private copy), or `undefined` when there is none; over `options.maxBytes`, `checkpoint_too_large`. */
  get(key: string, options?: GetOptions): Promise<StoredObject | undefined>;
  /** Stores `bytes` under `key`; resolves once the write is durable. */
  put(key: string, bytes: Uint8Array, options?: PutOptions): Promise<PutResult>;
  /** Removes `key`; resolves `true` if it existed. A missing key is not an error unless `ifVersion` is given. */
  delete(key: string, options?: DeleteOptions): Promise<boolean>;
  /**
   * Every key that starts with `prefix` (`''` for all), in ascending code-unit order.
   * Keys written or deleted while listing may or may not appear.
   */
  list(prefix: string): AsyncIterable<StorageEntry>;
  /** All operations or none; conditions are checked before anything is applied. Present only when `capabilities.atomicBatch`. */
  batch?(operations: readonly BatchOperation[], options?: BatchOptions): Promise<BatchOutcome[]>;
  /** Releases resources (after flushing any local queue); later calls reject with `checkpoint_closed`. Idempotent. */
  close(): Promise<void>;
  /**
   * Optional. Who reads the values the store holds (see {@link StoreReaders}), said by a consumer
   * before it reads `capabilities` and before its first write: `SavepointSaver` says `'savepoint'`;
   * the writer and resume say `'other-tools'` for a profile whose files other tools read
   * (`Profile.sharedFiles`), else `'savepoint'`. A store whose way of holding values is still open
   * may fix it then (fsStorage without a `layout`, on a new directory: `'savepoint'` packs values
   * into segment files, `'other-tools'` keeps a file per key); its `capabilities` and optional
   * members then describe what it fixed. A store that holds values one way only ignores it, and so
   * does a store that fixed its way already (a later declaration changes nothing). A wrapper
   * forwards it to the store it wraps. Callers use {@link declareReadersOf}.
   */
  declareReaders?(readers: StoreReaders): void;
}

/**
 * Who reads a store's values: `'savepoint'`, savepoint alone (through this contract); or
 * `'other-tools'`, other programs too, straight from the backend (the files a spec profile names).
 */
export type StoreReaders = 'savepoint' | 'other-tools';

/** Tells `store` who reads its values, where it asks ({@link StorageAdapter.declareReaders}); nothing otherwise. */
export function declareReadersOf(store: StorageAdapter, readers: StoreReaders): void {
  if (typeof store.declareReaders === 'function') store.declareReaders(readers);
}

/** Refuses anything but a {@link StoreReaders} value (`checkpoint_config_invalid`). */
export function assertStoreReaders(readers: unknown, where: string): asserts readers is StoreReaders {
  if (readers !== 'savepoint' && readers !== 'other-tools')
    throw new CheckpointError('checkpoint_config_invalid', `${where}: readers must be 'savepoint' or 'other-tools'`);
}

/** Collects `adapter.list(prefix)` into an array. */
export async function listAll(adapter: Pick<StorageAdapter, 'list'>, prefix: string): Promise<StorageEntry[]> {
  if (typeof adapter !== 'object' || adapter === null || typeof adapter.list !== 'function')
    assertStorageArgument(adapter, 'listAll', 'adapter');
  assertStringArgument(prefix, 'listAll', 'prefix');
  const out: StorageEntry[] = [];
  for await (const entry of adapter.list(prefix)) out.push(entry);
  return out;
}

/**
 * Multi-get: an optional member a store declares with `capabilities.multiGet`. `getMany(keys)`
 * answers, in the order of `keys`, what `get` answers for each (undefined for an absent key), in
 * one round trip of the backend instead of one per key. A key may be named twice. Each answer is
 * what `get` would have read at some moment of the call (a store reading them in one statement
 * answers them all as of one moment). Keys are checked as `get` checks them; `maxBytes` as `get`
 * takes it. Callers use {@link readMany}, which falls back to gets on a store without it.
 */
export interface MultiGetStorage extends StorageAdapter {
  getMany(keys: readonly string[], options?: GetOptions): Promise<(StoredObject | undefined)[]>;
}

/** The store's `getMany`, when it declares one: else undefined. */
export function getManyOf(store: StorageAdapter): MultiGetStorage['getMany'] | undefined {
  assertStorageArgument(store, 'getManyOf', 'store');
  const getMany = (store as Partial<MultiGetStorage>).getMany;
  return store.capabilities?.multiGet === true && typeof getMany === 'function' ? getMany.bind(store) : undefined;
}

/**
 * Listing by name: an optional member a store may have. `listKeys(prefix)` yields the keys
 * `list(prefix)` would, in the same order, without their versions and sizes (a store that must
 * look up each key's version to list it, as fs with a `stat` per file, lists names for less).
 * Callers use {@link listKeysOf}, which falls back to `list` on a store without it.
 */
export interface KeyListingStorage extends StorageAdapter {
  listKeys(prefix: string): AsyncIterable<string>;
}

/** The store's own `listKeys`, when it has one: else undefined. */
export function ownListKeysOf(store: StorageAdapter): KeyListingStorage['listKeys'] | undefined {
  assertStorageArgument(store, 'ownListKeysOf', 'store');
  const listKeys = (store as Partial<KeyListingStorage>).listKeys;
  return typeof listKeys === 'function' ? listKeys.bind(store) : undefined;
}

/** The keys under `prefix` in listing order: the store's `listKeys` where it has one, else its `list`. */
export async function* listKeysOf(store: StorageAdapter, prefix: string): AsyncGenerator<string> {
  const listKeys = ownListKeysOf(store);
  if (listKeys) yield* listKeys(prefix);
  else for await (const entry of store.list(prefix)) yield entry.key;
}

/** The values of `keys` in their order: one `getMany` where the store has one, else one `get` each, all at once. */
export function readMany(store: StorageAdapter, keys: readonly string[], options?: GetOptions): Promise<(StoredObject | undefined)[]> {
  const getMany = getManyOf(store);
  if (getMany) return getMany(keys, options);
  return Promise.all(keys.map((key) => store.get(key, options)));
}
