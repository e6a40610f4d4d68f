import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation, MultiGetStorage, PutOptions } from '../../contract/storage.js';
import { createPackedFsStorage, type PackedFsStorage } from '../fs-packed/index.js';
import type { FsStorage } from './index.js';
import { errnoOf } from './io.js';
import { assertNoFilesLayoutBeside, packedLayoutDirState } from './layout.js';
import type { FsOpenReport } from './lifecycle.js';
import type { FsSettings } from './options.js';

/** The packed store behind each `fsStorage({ layout: 'packed' })`, for the bench's and the tests' counts. */
const packedStores = new WeakMap<FsStorage, PackedFsStorage>();

/** The packed store `storage` answers from, when it has the packed layout (internal: counts for the bench and tests). */
export function packedStoreOf(storage: FsStorage): PackedFsStorage | undefined {
  return packedStores.get(storage);
}

function openFailed(err: unknown): CheckpointError {
  if (err instanceof CheckpointError) return err;
  const code = errnoOf(err) ?? 'UNKNOWN';
  return new CheckpointError('checkpoint_storage_unavailable', `cannot open fsStorage directory (packed layout): ${code}`, {
    details: { code },
  });
}

/** The packed store's members an FsStorage answers with: the packed store's own functions, not wrapped. */
function ownMembers(
  packed: PackedFsStorage,
): Pick<FsStorage & MultiGetStorage, 'get' | 'getMany' | 'getLinked' | 'put' | 'delete' | 'batch' | 'list'> {
  return {
    get: packed.get,
    getMany: packed.getMany,
    getLinked: packed.getLinked,
    put: packed.put,
    delete: packed.delete,
    batch: packed.batch,
    list: packed.list,
  };
}

/** Sets a store's `listKeys`: not enumerable, so a wrapper made by spreading the store does not carry a listing that bypasses its own; replaceable once a layout is fixed. */
export function setListKeys(storage: object, listKeys: (prefix: string) => AsyncIterable<string>): void {
  Object.defineProperty(storage, 'listKeys', { value: listKeys, configurable: true, writable: false, enumerable: false });
}

/**
 * The members of a packed store made in a directory that held no layout: each call waits until the
 * store is open and the directory is known to hold no file layout made at the same moment
 * (`settled`), then the store's own members take their place.
 */
function installSettling(storage: FsStorage, packed: PackedFsStorage, settled: Promise<void>): void {
  const after =
    <A extends unknown[], R>(call: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      await settled;
      return call(...args);
    };
  const listAfter = <T>(list: (prefix: string) => AsyncIterable<T>) =>
    async function* (prefix: string): AsyncGenerator<T> {
      await settled;
      yield* list(prefix);
    };
  // The caller may reuse its buffers as soon as a put returns: they are copied now, not once the store is open.
  const copied = (bytes: Uint8Array): Uint8Array => (bytes instanceof Uint8Array ? bytes.slice() : bytes);
  Object.assign(storage, {
    get: after(packed.get),
    getMany: after(packed.getMany),
    getLinked: after(packed.getLinked),
    put: (key: string, bytes: Uint8Array, options?: PutOptions) => after(packed.put)(key, copied(bytes), options),
    delete: after(packed.delete),
    batch: (operations: readonly BatchOperation[]) =>
      after(packed.batch)(
        Array.isArray(operations) ? operations.map((op) => (op?.type === 'put' ? { ...op, bytes: copied(op.bytes) } : op)) : operations,
      ),
    list: listAfter(packed.list),
    // Calls made before it go first (each waits for `settled` too, and is queued by the store before it closes).
    close: async () => {
      await settled.catch(() => undefined);
      await packed.close();
    },
  });
  setListKeys(storage, listAfter(packed.listKeys));
  settled.then(
    () => {
      Object.assign(storage, ownMembers(packed), { close: packed.close });
      setListKeys(storage, packed.listKeys);
    },
    () => undefined, // each call waiting for it rejects with its error
  );
}

/**
 * `fsStorage({ dir, layout: 'packed' })`: the packed store (src/storage/fs-packed) opened in `dir`
 * once the directory is known not to hold the file layout (checked here, synchronously: a refused
 * directory throws from the factory). The store then opens in the background (its segments
 * scanned); an open that fails rejects the first call, or `ready()`. Its methods are the packed
 * store's own, not wrapped: a call costs what it costs there. In a directory that held no layout,
 * calls wait for the open and a second look at the directory (another process may have made the
 * file layout there at the same moment), then the store's own members replace them. Members are
 * set on `into` (the object the user holds, when the layout was chosen after it was made).
 */
export function packedFsStorage(settings: FsSettings, into: Partial<FsStorage> = {}): FsStorage {
  if (process.platform === 'win32')
    throw new CheckpointError('checkpoint_unsupported', 'fsStorage needs POSIX file semantics; Windows is not supported');
  const abs = resolve(settings.dir);
  let packed: PackedFsStorage;
  let held: 'packed' | 'new';
  try {
    if (!settings.create && !existsSync(abs))
      throw new CheckpointError('checkpoint_storage_unavailable', 'cannot open fsStorage directory (packed layout): ENOENT', {
        details: { code: 'ENOENT' },
      });
    held = packedLayoutDirState(settings.dir, abs);
    packed = createPackedFsStorage({ dir: abs, maxReadBytes: settings.maxReadBytes });
  } catch (err) {
    throw openFailed(err);
  }
  // Made only where calls wait for it (a promise nobody waits for would reject unheard).
  const settled = held === 'packed' ? undefined : packed.ready().then(() => assertNoFilesLayoutBeside(settings.dir, abs));
  const ready = async (): Promise<FsOpenReport> => {
    await (settled ?? packed.ready()).catch((err: unknown) => Promise.reject(openFailed(err)));
    // Its files have fixed names below the root: no key names a file, so there is nothing to contain.
    return { root: realpathSync(abs), containment: 'path', layout: 'packed', removedTempFiles: 0, removedLocks: 0 };
  };
  const storage = Object.assign(into, {
    name: packed.name,
    capabilities: packed.capabilities,
    dir: settings.dir,
    ready,
    close: packed.close,
  }) as FsStorage;
  if (held === 'packed') {
    Object.assign(storage, ownMembers(packed));
    setListKeys(storage, packed.listKeys);
  } else installSettling(storage, packed, settled!);
  packedStores.set(storage, packed);
  return storage;
}
