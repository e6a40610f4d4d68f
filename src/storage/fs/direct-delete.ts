import fsp from 'node:fs/promises';
import { conditionFailed } from '../../contract/errors.js';
import type { DeleteOptions } from '../../contract/storage.js';
import { directWrite } from './descriptor-budget.js';
import { openDir, type OpenedDir } from './dir.js';
import { fdClose, fdSync } from './fd.js';
import { exclusive, lockWith, openTemp, quietly, releaseThenRemove, Retry, type Temp } from './direct-write.js';
import { errnoOf, fsError, versionOf } from './io.js';
import { rootDir } from './lifecycle.js';
import { assertHeld, lstatIfAny, type HeldLock } from './lock.js';
import type { FsSettings } from './options.js';
import { keyPath, symlinkRefused, type KeyPath } from './paths.js';
import { scrubFor, type FsStoreState } from './store-state.js';

/** Removes now-empty directories from the key's directory up (never the root); stops at the first that is not empty. */
async function pruneDirs(od: OpenedDir): Promise<void> {
  for (let i = od.chain.length - 1; i > 0; i--) {
    const name = od.chain[i]!.rel.slice(od.chain[i]!.rel.lastIndexOf('/') + 1);
    try {
      await fsp.rmdir(od.chain[i - 1]!.at(name));
    } catch {
      return;
    }
  }
}

/** Delete under the key's lock (a delete has no temp file to lock with: it makes an empty one). */
async function remove(settings: FsSettings, od: OpenedDir, kp: KeyPath, opts: DeleteOptions, missing: () => boolean): Promise<boolean> {
  const timing = settings.timing;
  const dir = od.dir;
  let temp: Temp | undefined;
  let lock: HeldLock | undefined;
  try {
    try {
      temp = await openTemp(settings, dir);
      lock = await lockWith(settings, dir, kp, temp);
    } catch (err) {
      if (err instanceof Retry || errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return missing();
      throw err;
    }
    const previous = await lstatIfAny(dir.at(kp.base));
    if (previous?.isSymbolicLink()) throw symlinkRefused(kp.key);
    const exists = previous !== undefined && previous.isFile();
    if (opts.ifVersion !== undefined && (!exists || versionOf(previous) !== opts.ifVersion))
      throw conditionFailed(kp.key, exists ? 'version changed' : 'key is gone');
    if (!exists) return false;
    await assertHeld(lock, kp.key, timing);
    await fsp.unlink(dir.at(kp.base));
    await fdSync(dir.fd);
    return true;
  } finally {
    // The lock goes before its temp file (see releaseThenRemove).
    await quietly([releaseThenRemove(lock, timing, temp ? [temp.path] : []), temp ? fdClose(temp.fd) : undefined]);
  }
}

/** A delete without the journal: unlink under the key's lock, then the directories it leaves empty are removed. */
export function directDelete(state: FsStoreState, key: string, opts: DeleteOptions): Promise<boolean> {
  return directWrite(() => deleteNow(state, key, opts));
}

/** {@link directDelete}, within the bound on direct writes (descriptor-budget.ts). */
async function deleteNow(state: FsStoreState, key: string, opts: DeleteOptions): Promise<boolean> {
  const base = await rootDir(state);
  const kp = keyPath(key);
  const missing = (): boolean => {
    if (opts.ifVersion !== undefined) throw conditionFailed(key, 'key is gone');
    return false;
  };
  let od: OpenedDir | undefined;
  try {
    od = await openDir(base, kp.dirKey, key, false);
    if (!od) return missing();
    const opened = od;
    const deleted = await exclusive(state, key, () => remove(state.settings, opened, kp, opts, missing));
    if (deleted) await pruneDirs(opened);
    return deleted;
  } catch (err) {
    throw fsError(err, 'checkpoint_atomic_write_failed', 'deleting', key, scrubFor(state, od ? [od.dir] : []));
  } finally {
    await od?.close();
  }
}
