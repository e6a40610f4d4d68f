import { existsSync, realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import type { MultiGetStorage } from '../../contract/storage.js';
import { createPackedFsStorage, type PackedFsStorage } from '../fs-packed/index.js';
import type { FsStorage } from './index.js';
import { errnoOf } from './io.js';
import { assertPackedLayoutDir } from './layout.js';
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

/**
 * `fsStorage({ dir, layout: 'packed' })`: the packed store (src/storage/fs-packed) opened in `dir`
 * once the directory is known not to hold the file layout (checked here, synchronously: a refused
 * directory throws from the factory). The store then opens in the background (its segments
 * scanned); an open that fails rejects the first call, or `ready()`. Its methods are the packed
 * store's own, not wrapped: a call costs what it costs there.
 */
export function packedFsStorage(settings: FsSettings): FsStorage {
  if (process.platform === 'win32')
    throw new CheckpointError('checkpoint_unsupported', 'fsStorage needs POSIX file semantics; Windows is not supported');
  const abs = resolve(settings.dir);
  let packed: PackedFsStorage;
  try {
    if (!settings.create && !existsSync(abs))
      throw new CheckpointError('checkpoint_storage_unavailable', 'cannot open fsStorage directory (packed layout): ENOENT', {
        details: { code: 'ENOENT' },
      });
    assertPackedLayoutDir(settings.dir, abs);
    packed = createPackedFsStorage({ dir: abs, maxReadBytes: settings.maxReadBytes });
  } catch (err) {
    throw openFailed(err);
  }
  const ready = async (): Promise<FsOpenReport> => {
    await packed.ready().catch((err: unknown) => Promise.reject(openFailed(err)));
    // Its files have fixed names below the root: no key names a file, so there is nothing to contain.
    return { root: realpathSync(abs), containment: 'path', layout: 'packed', removedTempFiles: 0, removedLocks: 0 };
  };
  const storage: FsStorage & Pick<MultiGetStorage, 'getMany'> = {
    name: packed.name,
    capabilities: packed.capabilities,
    dir: settings.dir,
    ready,
    get: packed.get,
    getMany: packed.getMany,
    getLinked: packed.getLinked,
    put: packed.put,
    delete: packed.delete,
    batch: packed.batch,
    list: packed.list,
    close: packed.close,
  };
  // Not enumerable, as the file layout's: a wrapper made by spreading the store must not carry a listing that bypasses its own.
  Object.defineProperty(storage, 'listKeys', { value: packed.listKeys });
  packedStores.set(storage, packed);
  return storage;
}
