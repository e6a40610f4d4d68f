/**
 * `fsStorage({ dir })` without a `layout`: a store whose layout is fixed when first needed. A
 * directory that holds a layout keeps it; in a new or empty one, the first consumer's declaration
 * (`declareReaders`: savepoint alone → packed, other tools too → files) fixes it, else the first put
 * or batch fixes the file layout. Until then reads answer "absent" and look at the directory again at
 * each call (another process may have made a layout there meanwhile).
 *
 * The user's object is the store: once the layout is fixed, the chosen store's members are set on
 * it (its own functions: no wrapper per call), and its `capabilities` and optional members are that
 * layout's. Before, it carries what both layouts have (an atomic batch, a linked read, versions per
 * write; no move, no multi-get), so a consumer that reads them then stays right whichever is fixed.
 * A wrapper made by spreading the undecided store (`{ ...storage, put }`) keeps those capabilities
 * and the undecided members, which call the fixed layout's once there is one: it answers as the
 * store does, with no more than both layouts can do.
 */
import { existsSync } from 'node:fs';
import { mkdir, realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import type { AbsentLinked, LinkedValues, ReadLinks } from '../../contract/linked-read.js';
import { assertGetOptions } from '../../contract/read-limit.js';
import {
  assertStoreReaders,
  type BatchOperation,
  type BatchOptions,
  type BatchOutcome,
  type DeleteOptions,
  type GetOptions,
  type PutOptions,
  type PutResult,
  type StorageCapabilities,
  type StorageEntry,
  type StoredObject,
  type StoreReaders,
} from '../../contract/storage.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey, assertPrefix } from '../keys.js';
import type { FsStorage } from './index.js';
import { errnoOf } from './io.js';
import { layoutHeldBy, type FsLayout } from './layout.js';
import type { FsOpenReport } from './lifecycle.js';
import { assertLinkedReadArguments } from '../linked-read-arguments.js';
import type { FsSettings } from './options.js';
import { setListKeys } from './packed-layout.js';
import { assertValueBytes, fsClosed } from './store-state.js';

/** The two layouts' stores, set on the object given. */
export interface LayoutFactories {
  readonly files: (settings: FsSettings, into: Partial<FsStorage>) => FsStorage;
  readonly packed: (settings: FsSettings, into: Partial<FsStorage>) => FsStorage;
}

/** What one store without a fixed layout keeps between calls. */
interface AutoLayoutState {
  readonly settings: FsSettings;
  readonly abs: string;
  /** The object the user holds: the undecided members now, the chosen layout's once fixed. */
  readonly storage: FsStorage;
  readonly factories: LayoutFactories;
  /** Who reads the values, as a consumer declared while no layout could be fixed (the directory unreadable, or missing and not to be made). */
  readers: StoreReaders | undefined;
  /** The store, once its layout is fixed (the same object as `storage`). */
  decided: FsStorage | undefined;
  closed: boolean;
}

/** What both layouts can do (the journal's file layout and the packed one). */
const BOTH_LAYOUTS_CAN: StorageCapabilities = Object.freeze({
  atomicBatch: true,
  crossProcessConditional: true,
  linkedRead: true,
  versionsPerWrite: true,
});

/** Members kept when a layout is fixed: the directory as given, and the declaration (a no-op then). */
const KEPT_MEMBERS: readonly PropertyKey[] = ['dir', 'declareReaders'];

/** The layout a consumer's readers ask for in a directory holding none. */
export const layoutForReaders = (readers: StoreReaders): FsLayout => (readers === 'savepoint' ? 'packed' : 'files');

function inspectFailed(err: unknown): CheckpointError {
  if (err instanceof CheckpointError) return err;
  const code = errnoOf(err) ?? 'UNKNOWN';
  return new CheckpointError('checkpoint_storage_unavailable', `cannot open fsStorage directory: ${code}`, { details: { code } });
}

/** Sets every own member of `from` on `into` (non-enumerable ones too, as they are), and returns `into`. */
export function adoptMembers(into: Partial<FsStorage>, from: FsStorage): FsStorage {
  for (const key of Reflect.ownKeys(from)) {
    const descriptor = Object.getOwnPropertyDescriptor(from, key)!;
    Object.defineProperty(into, key, { ...descriptor, configurable: true });
  }
  return into as FsStorage;
}

/** Fixes `layout`: the undecided members give way to the layout's store's, set on the user's object. */
function decide(state: AutoLayoutState, layout: FsLayout): FsStorage {
  const storage = state.storage as unknown as Record<PropertyKey, unknown>;
  for (const key of Reflect.ownKeys(storage)) if (!KEPT_MEMBERS.includes(key)) delete storage[key];
  const settings: FsSettings = { ...state.settings, layout };
  try {
    state.decided = state.factories[layout](settings, state.storage);
  } catch (err) {
    // Refused (the directory changed since it was looked at, or cannot be opened): still undecided.
    installUndecided(state);
    throw err;
  }
  return state.decided;
}

/** The store once fixed, fixing the layout the directory holds now if it holds one; undefined while it holds none. */
function heldStore(state: AutoLayoutState): FsStorage | undefined {
  if (state.decided) return state.decided;
  if (state.closed) throw fsClosed();
  let held: FsLayout | undefined;
  try {
    held = layoutHeldBy(state.settings.dir, state.abs);
  } catch (err) {
    throw inspectFailed(err);
  }
  return held ? decide(state, held) : undefined;
}

/** The store a write goes to: the layout the directory holds, else the declared readers', else the file layout. */
function storeToWrite(state: AutoLayoutState): FsStorage {
  return heldStore(state) ?? decide(state, layoutForReaders(state.readers ?? 'other-tools'));
}

/** Fixes the layout for `readers` where the directory holds none (a no-op once fixed); an unreadable directory is left for the calls to report. */
function declare(state: AutoLayoutState, readers: StoreReaders): void {
  assertStoreReaders(readers, 'fsStorage.declareReaders');
  if (state.decided || state.closed) return;
  state.readers = readers;
  // A directory missing and not to be made fixes nothing: the calls report it.
  if (!state.settings.create && !existsSync(state.abs)) return;
  try {
    if (!heldStore(state)) decide(state, layoutForReaders(readers));
  } catch {
    // The first call looks again and rejects with what it finds.
  }
}

/** `ready()` of a directory holding no layout: made if it may be, resolved; nothing below it is named yet. */
async function readyUndecided(state: AutoLayoutState): Promise<FsOpenReport> {
  const store = heldStore(state);
  if (store) return store.ready();
  try {
    if (state.settings.create) await mkdir(state.abs, { recursive: true });
    return { root: await realpath(state.abs), containment: 'path', removedTempFiles: 0, removedLocks: 0 };
  } catch (err) {
    throw inspectFailed(err);
  }
}

async function* listUndecided<T>(state: AutoLayoutState, prefix: string, list: (store: FsStorage) => AsyncIterable<T>): AsyncGenerator<T> {
  assertPrefix(prefix);
  const store = heldStore(state);
  if (store) yield* list(store);
}

/** The members of a store whose layout is not fixed yet. */
function installUndecided(state: AutoLayoutState): void {
  const members: Omit<FsStorage, 'dir'> & { batch(ops: readonly BatchOperation[], options?: BatchOptions): Promise<BatchOutcome[]> } = {
    name: 'fs',
    capabilities: BOTH_LAYOUTS_CAN,
    ready: () => readyUndecided(state),
    async get(key: string, options?: GetOptions): Promise<StoredObject | undefined> {
      assertKey(key);
      assertGetOptions(options, 'fsStorage.get');
      return heldStore(state)?.get(key, options);
    },
    async getLinked(key: string, links: ReadLinks): Promise<LinkedValues | AbsentLinked | undefined> {
      assertLinkedReadArguments(key, links, 'fsStorage.getLinked');
      return heldStore(state)?.getLinked(key, links);
    },
    // A refused call fixes nothing: its arguments are checked before the layout is.
    async put(key: string, bytes: Uint8Array, options?: PutOptions): Promise<PutResult> {
      assertKey(key);
      assertValueBytes(key, bytes);
      return storeToWrite(state).put(key, bytes, options);
    },
    async batch(operations: readonly BatchOperation[], options?: BatchOptions): Promise<BatchOutcome[]> {
      assertBatchOperations(operations);
      if (operations.length === 0 && !heldStore(state)) return [];
      return storeToWrite(state).batch!(operations, options);
    },
    async delete(key: string, options?: DeleteOptions): Promise<boolean> {
      assertKey(key);
      const store = heldStore(state);
      if (store) return store.delete(key, options);
      // Nothing to delete fixes nothing; a condition on a version is answered by the store a write would make.
      return options?.ifVersion === undefined ? false : storeToWrite(state).delete(key, options);
    },
    list: (prefix: string): AsyncIterable<StorageEntry> => listUndecided(state, prefix, (store) => store.list(prefix)),
    flush: async (): Promise<void> => state.decided?.flush?.(),
    applied: async (): Promise<void> => state.decided?.applied?.(),
    async close(): Promise<void> {
      if (state.decided) return state.decided.close();
      state.closed = true;
    },
  };
  Object.assign(state.storage, members);
  setListKeys(state.storage, (prefix: string): AsyncIterable<string> =>
    listUndecided(state, prefix, (store) => (store as FsStorage & { listKeys(prefix: string): AsyncIterable<string> }).listKeys(prefix)),
  );
}

/**
 * `fsStorage({ dir })` with no `layout` (and no option of the file layout): the layout the directory
 * holds, fixed at once; else a store that fixes it when first needed (see the file's comment).
 */
export function autoLayoutFsStorage(settings: FsSettings, factories: LayoutFactories): FsStorage {
  const storage = { dir: settings.dir } as FsStorage;
  const state: AutoLayoutState = {
    settings,
    abs: resolve(settings.dir),
    storage,
    factories,
    readers: undefined,
    decided: undefined,
    closed: false,
  };
  storage.declareReaders = (readers: StoreReaders): void => declare(state, readers);
  installUndecided(state);
  try {
    heldStore(state);
  } catch {
    // An unreadable directory (or one in conflict) is reported by the first call, as the file layout's open reports it.
  }
  return storage;
}
