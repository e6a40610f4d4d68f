import { contentAddressingOf, type ContentAddressing } from '../../contract/content-address.js';
import { CheckpointError } from '../../contract/errors.js';
import type { BufferedStorage } from '../../contract/buffered-storage.js';
import type {
  BatchOperation,
  BatchOptions,
  GetOptions,
  BatchOutcome,
  PutOptions,
  PutResult,
  StorageAdapter,
  StorageCapabilities,
  StorageEntry,
  StoredObject,
} from '../../contract/storage.js';
import { assertStoreReaders, declareReadersOf, type StoreReaders } from '../../contract/storage.js';
import { assertKey } from '../keys.js';
import { promiseOf } from '../promise-of.js';
import { toHex } from '../../codec/sha256.js';
import { EncryptionKey } from './encryption-key.js';
import { keyMissing, reservedKey } from './errors.js';
import { KEYRING_KEY, keyIdsOf } from './keyring.js';
import { keyringOf, type EncryptedKeyring } from './keyring-admin.js';
import { hiddenRunIdOf } from './hidden-run-id.js';
import { hmacSha256 } from './primitives.js';
import { readSession, track, writeSession, type EncryptedState } from './session.js';
import { dataKeyIdOf, openValue, sealValue } from './value-cipher.js';
import { notBytes, sealBatchSync } from './batch-seal.js';
import { VALUE_OVERHEAD_BYTES } from './value-format.js';

/** Options of {@link encryptedStorage}. */
export interface EncryptedStorageOptions {
  /**
   * The user keys. The first wraps the data key of a new store; every one is tried to open an
   * existing store's data key (several while a rotation is rolled out). An `EncryptionKey`,
   * 32 raw bytes, or the key's text form (64 hex digits, base64, `passphrase:<text>`).
   */
  readonly keys: EncryptionKeyInput | readonly EncryptionKeyInput[];
  /**
   * Whether the store serves profiles whose files other tools read (the five spec profiles:
   * `sharedFiles` on the profile). `'refuse'` makes the writer and resume reject them with
   * `checkpoint_unsupported`, because those tools would find ciphertext; `'accept'` when you
   * know no other tool reads this store. @default 'refuse'
   */
  readonly sharedFiles?: 'refuse' | 'accept';
}

/** What names a user key in {@link EncryptedStorageOptions.keys}. */
export type EncryptionKeyInput = EncryptionKey | Uint8Array | string;

/** A store whose values are encrypted and authenticated; see {@link encryptedStorage}. */
export interface EncryptedStorage extends BufferedStorage {
  /** The store it encrypts into. */
  readonly inner: StorageAdapter;
  /** Content ids keyed by the store's data key (HMAC-SHA-256), so equal content is recognised only by holders of a key. */
  readonly contentAddressing: ContentAddressing;
  /** Adds, removes, rotates and lists the user keys that open the store. */
  readonly keyring: EncryptedKeyring;
  /**
   * A run id for `name` that hides it: a UUID (v4 form) keyed by the store's data key, the
   * same for the same name in this store, unrelated in another, computable only with a key.
   * Use it as the writer's `runId` (or a LangGraph `thread_id`) when the name would say too
   * much in a key name: a user's e-mail, a ticket title. Resume and listing work as for any
   * run id; `runs` and the viewer show the hidden id, not the name (keep the name in the
   * payload if you need it back). Creates the store's keyring on a new store, as a first write does.
   *
   * @example
   * ```ts
   * const runId = await storage.hiddenRunId('alice@example.com/support-ticket');
   * const writer = createWriter({ storage, runId });
   * ```
   */
  hiddenRunId(name: string): Promise<string>;
}

function toKey(input: EncryptionKeyInput): EncryptionKey {
  if (input instanceof EncryptionKey) return input;
  if (input instanceof Uint8Array) return EncryptionKey.fromBytes(input);
  if (typeof input === 'string') return EncryptionKey.fromText(input);
  throw new CheckpointError('checkpoint_config_invalid', 'encryptedStorage: each key must be an EncryptionKey, 32 bytes, or key text');
}

function checkedKey(state: EncryptedState, key: string): void {
  if (state.closed) throw new CheckpointError('checkpoint_closed', 'encryptedStorage: the store is closed');
  assertKey(key);
  if (key === KEYRING_KEY) throw reservedKey();
}

async function getValue(state: EncryptedState, key: string, options?: GetOptions): Promise<StoredObject | undefined> {
  checkedKey(state, key);
  // The caller's bound is on the plaintext: the stored value is the header and tag larger.
  const max = options?.maxBytes;
  const stored = await state.inner.get(key, max === undefined ? undefined : { maxBytes: max + VALUE_OVERHEAD_BYTES });
  if (!stored) return undefined;
  const session = await readSession(state);
  if (!session) {
    // A value but no keyring: the keyring was lost, or the value was never encrypted.
    const dataKeyId = dataKeyIdOf(key, stored.bytes) ?? 'unknown (a shared value names none)';
    throw keyMissing(`the value under ${key}`, { dataKeyId, wrapKeyIds: [] }, await keyIdsOf(state.keys, undefined));
  }
  return { bytes: await openValue(session, key, stored.bytes), version: stored.version };
}

async function putValue(state: EncryptedState, key: string, bytes: Uint8Array, options?: PutOptions): Promise<PutResult> {
  checkedKey(state, key);
  if (!(bytes instanceof Uint8Array)) throw notBytes(key);
  // The caller may reuse its buffer once put returns: seal it now (synchronously, or through
  // WebCrypto, which copies its input when called), or copy it while the session opens.
  const ready = state.ready;
  if (ready) {
    const sealed = sealValue(ready, key, bytes);
    return state.inner.put(key, sealed instanceof Uint8Array ? sealed : await sealed, options);
  }
  const input = bytes.slice();
  const session = await writeSession(state);
  return state.inner.put(key, await sealValue(session, key, input), options);
}

/**
 * A put or batch on an open session with a synchronous cipher hands the sealed bytes to the
 * inner store before returning, adding no promise of its own (the inner store keeps track of
 * its calls under way); otherwise it goes the asynchronous way, tracked for `close()`.
 */
function putNowOrLater(state: EncryptedState, key: string, bytes: Uint8Array, options?: PutOptions): Promise<PutResult> {
  const ready = state.ready;
  if (!ready?.sync || state.closed) return track(state, putValue(state, key, bytes, options));
  return promiseOf(() => {
    checkedKey(state, key);
    if (!(bytes instanceof Uint8Array)) throw notBytes(key);
    return state.inner.put(key, sealValue(ready, key, bytes) as Uint8Array, options);
  });
}

function batchNowOrLater(state: EncryptedState, operations: readonly BatchOperation[], options?: BatchOptions): Promise<BatchOutcome[]> {
  const ready = state.ready;
  if (!ready?.sync || state.closed || !Array.isArray(operations)) return track(state, batchValues(state, operations, options));
  return promiseOf(() => state.inner.batch!(sealBatchSync(ready, operations), options));
}

function isPut(op: BatchOperation): op is Extract<BatchOperation, { type: 'put' }> {
  return op?.type === 'put' && op.bytes instanceof Uint8Array;
}

async function batchValues(state: EncryptedState, operations: readonly BatchOperation[], options?: BatchOptions): Promise<BatchOutcome[]> {
  if (state.closed) throw new CheckpointError('checkpoint_closed', 'encryptedStorage: the store is closed');
  if (!Array.isArray(operations)) throw new CheckpointError('checkpoint_config_invalid', 'batch: operations must be an array');
  for (const op of operations) if (op?.key === KEYRING_KEY) throw reservedKey();
  if (!operations.some((op) => op?.type === 'put')) return state.inner.batch!(operations, options);
  for (const op of operations) if (op?.type === 'put') assertKey(op.key);
  const ready = state.ready;
  // As in a put: sealed before the first await, or copied while the session opens.
  if (ready?.sync) return state.inner.batch!(sealBatchSync(ready, operations), options);
  const copies = ready ? operations : copiedPuts(operations);
  const session = ready ?? (await writeSession(state));
  if (session.sync) return state.inner.batch!(sealBatchSync(session, copies), options);
  const sealed = await Promise.all(
    copies.map(async (op) => (isPut(op) ? { ...op, bytes: await sealValue(session, op.key, op.bytes) } : op)),
  );
  return state.inner.batch!(sealed, options);
}

/** The batch with each put's bytes copied, one copy per buffer (two puts of one buffer still share it). */
function copiedPuts(operations: readonly BatchOperation[]): BatchOperation[] {
  const copies = new Map<Uint8Array, Uint8Array>();
  return operations.map((op) => {
    if (!isPut(op)) return op;
    let copy = copies.get(op.bytes);
    if (!copy) copies.set(op.bytes, (copy = op.bytes.slice()));
    return { ...op, bytes: copy };
  });
}

async function* listValues(state: EncryptedState, prefix: string): AsyncIterable<StorageEntry> {
  if (state.closed) throw new CheckpointError('checkpoint_closed', 'encryptedStorage: the store is closed');
  for await (const entry of state.inner.list(prefix)) {
    if (entry.key === KEYRING_KEY) continue;
    yield { key: entry.key, version: entry.version, size: Math.max(0, entry.size - VALUE_OVERHEAD_BYTES) };
  }
}

function capabilitiesOf(inner: StorageAdapter, sharedFiles: 'refuse' | 'accept'): StorageCapabilities {
  const { atomicBatch, crossProcessConditional, maxValueBytes, keysAreFiles, versionsPerWrite } = inner.capabilities;
  return {
    atomicBatch,
    crossProcessConditional,
    ...(keysAreFiles === true ? { keysAreFiles } : {}),
    // Its versions are the inner store's.
    ...(versionsPerWrite === true ? { versionsPerWrite } : {}),
    ...(maxValueBytes !== undefined ? { maxValueBytes: Math.max(1, maxValueBytes - VALUE_OVERHEAD_BYTES) } : {}),
    opaqueValues: true,
    ...(sharedFiles === 'accept' ? { sharedFilesAccepted: true } : {}),
  };
}

/** The inner store's buffering members (BufferedStorage), which concern writes already encrypted: safe to carry over. */
function bufferedMembers(inner: StorageAdapter): Partial<Pick<BufferedStorage, 'flush' | 'applied' | 'isPending' | 'rateBudget'>> {
  const b = inner as BufferedStorage;
  return {
    // Looked up at each call: a store that fixes how it holds values later (fsStorage without a layout) may then have none.
    ...(typeof b.flush === 'function' ? { flush: async () => b.flush?.() } : {}),
    // Without it a store whose flush only waits for durable writes (the fs journal) would look like one holding writes back.
    ...(typeof b.applied === 'function' ? { applied: async () => b.applied?.() } : {}),
    ...(typeof b.isPending === 'function' ? { isPending: (key: string) => b.isPending!(key) } : {}),
    ...(typeof b.rateBudget === 'function' ? { rateBudget: () => b.rateBudget!() } : {}),
  };
}

function contentAddressing(state: EncryptedState): ContentAddressing {
  return {
    scheme: 'hmac-sha256',
    async id(bytes) {
      const session = await writeSession(state);
      return session.sync ? session.sync.mac(bytes) : toHex(await hmacSha256(session.contentIdKey, bytes));
    },
    // Synchronous once the store's data key is open, where the runtime hashes synchronously.
    idSync: (bytes) => state.ready?.sync?.mac(bytes),
  };
}

/**
 * Encrypts every value of `inner` at rest, so the store — a directory, a PostgreSQL table, a
 * GitHub repository, your own adapter — holds only ciphertext, and the writer, the LangGraph
 * saver, retention, resume and the CLI work unchanged on top.
 *
 * Each value is AES-256-GCM encrypted (WebCrypto) with a random 96-bit nonce, its storage key
 * bound as associated data (a value moved to another key fails to open), under the store's
 * random data key. The data key is wrapped by your key(s) in a small keyring the store holds
 * (`savepoint-keyring.json`, hidden from listings): rotating your key re-wraps it and never
 * rewrites a checkpoint. A changed byte is `checkpoint_integrity_mismatch`; a wrong or missing
 * key is `checkpoint_encryption_key_missing`, whose message names the key ids the store needs.
 * Key names, sizes and timing are not hidden (docs/security.md).
 *
 * @example
 * ```ts
 * const storage = encryptedStorage(fsStorage({ dir: './checkpoints' }), { keys: EncryptionKey.fromEnv('SAVEPOINT_KEY') });
 * const writer = createWriter({ storage, runId: 'run-1' });
 * ```
 */
export function encryptedStorage(inner: StorageAdapter, options: EncryptedStorageOptions): EncryptedStorage {
  if (typeof inner !== 'object' || inner === null || typeof inner.get !== 'function' || typeof inner.put !== 'function')
    throw new CheckpointError('checkpoint_config_invalid', 'encryptedStorage: inner must be a StorageAdapter');
  if (typeof options !== 'object' || options === null)
    throw new CheckpointError('checkpoint_config_invalid', 'encryptedStorage: options must be an object');
  const inputs = Array.isArray(options.keys) ? (options.keys as readonly EncryptionKeyInput[]) : [options.keys as EncryptionKeyInput];
  const sharedFiles = options.sharedFiles ?? 'refuse';
  if (sharedFiles !== 'refuse' && sharedFiles !== 'accept')
    throw new CheckpointError('checkpoint_config_invalid', "encryptedStorage: sharedFiles must be 'refuse' or 'accept'");
  if (contentAddressingOf(inner))
    throw new CheckpointError(
      'checkpoint_config_invalid',
      'encryptedStorage: inner already names content its own way (is it encrypted twice?)',
    );
  const state: EncryptedState = {
    inner,
    keys: inputs.filter((k) => k !== undefined).map(toKey),
    session: undefined,
    ready: undefined,
    closed: false,
    inFlight: new Set(),
  };
  const store: EncryptedStorage = {
    name: `encrypted(${inner.name})`,
    inner,
    capabilities: capabilitiesOf(inner, sharedFiles),
    contentAddressing: contentAddressing(state),
    keyring: keyringOf(state),
    hiddenRunId: async (name) => {
      if (state.closed) throw new CheckpointError('checkpoint_closed', 'encryptedStorage: the store is closed');
      return hiddenRunIdOf(await writeSession(state), name);
    },
    get: (key, options) => track(state, getValue(state, key, options)),
    put: (key, bytes, opts) => putNowOrLater(state, key, bytes, opts),
    delete: async (key, opts) => {
      checkedKey(state, key);
      return inner.delete(key, opts);
    },
    list: (prefix) => listValues(state, prefix),
    ...(inner.capabilities.atomicBatch && typeof inner.batch === 'function'
      ? { batch: (ops: readonly BatchOperation[], options?: BatchOptions) => batchNowOrLater(state, ops, options) }
      : {}),
    ...bufferedMembers(inner),
    async close() {
      state.closed = true;
      await Promise.allSettled([...state.inFlight]);
      await inner.close();
    },
    declareReaders(readers: StoreReaders) {
      assertStoreReaders(readers, 'encryptedStorage.declareReaders');
      // Ciphertext is read by savepoint alone, unless the user accepted shared files held encrypted.
      declareReadersOf(inner, readers === 'other-tools' && sharedFiles === 'accept' ? 'other-tools' : 'savepoint');
      // The inner store may have fixed how it holds values: its capabilities now are what this one carries.
      (store as { capabilities: StorageCapabilities }).capabilities = capabilitiesOf(inner, sharedFiles);
    },
  };
  return store;
}

/** Whether the inner store holds an encrypted store's keyring (for tools that open a store without knowing). */
export async function holdsEncryptedStore(inner: StorageAdapter): Promise<boolean> {
  return (await inner.get(KEYRING_KEY).catch(() => undefined)) !== undefined;
}
