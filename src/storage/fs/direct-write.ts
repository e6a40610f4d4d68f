import { constants, type BigIntStats } from 'node:fs';
import fsp from 'node:fs/promises';
import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import type { PutOptions, PutResult } from '../../contract/storage.js';
import { directWrite } from './descriptor-budget.js';
import { openDir, type Dir, type OpenedDir } from './dir.js';
import { fdClose, fdOpen, fdStat, fdSync, fdUtimes, fdWriteAll, fsLink, fsRename } from './fd.js';
import { errnoOf, fsError, nextMtimeSeconds, versionOf } from './io.js';
import { rootDir } from './lifecycle.js';
import { acquireLock, assertHeld, lstatIfAny, releaseLock, type HeldLock } from './lock.js';
import { lockName, newOwner, tempName, type Owner } from './names.js';
import type { FsSettings } from './options.js';
import { keyPath, keyRefused, occupiedRefused, symlinkRefused, type KeyPath } from './paths.js';
import { scrubFor, type FsStoreState } from './store-state.js';

// Direct writes: without the journal, each put is the spec's own durable sequence
// (temp → fsync → rename → fsync dir), under the key's lock file where a check is involved.

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
// O_NOFOLLOW: a temp name is fresh, but never write through a link someone planted under it.
const TEMP_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;

/** A pre-commit ENOENT: a directory vanished (pruned by a concurrent delete); the put starts over. */
export class Retry extends Error {}

/** Refuses what a key's path holds when it is not a regular file. */
function assertFileOrAbsent(kp: KeyPath, st: BigIntStats | undefined): void {
  if (!st || st.isFile()) return;
  if (st.isSymbolicLink()) throw symlinkRefused(kp.key);
  throw occupiedRefused(kp.key);
}

/** Settles housekeeping calls, ignoring their failures (a close or unlink that fails changes nothing stored). */
export async function quietly(calls: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  await Promise.all(calls.map((p) => p?.catch(() => undefined)));
}

/** A temp file being written in a key's directory. */
export interface Temp {
  /** Its name inside the directory (through the directory's descriptor). */
  readonly path: string;
  readonly fd: number;
  readonly owner: Owner;
}

/** Runs `fn` alone among this process's calls for `key`, so writers of one process line up here instead of polling the lock file. */
export async function exclusive<T>(state: FsStoreState, key: string, fn: () => Promise<T>): Promise<T> {
  const queues = state.queues;
  const previous = queues.get(key);
  let release!: () => void;
  const mine = new Promise<void>((r) => (release = r));
  const tail = previous ? previous.then(() => mine) : mine;
  queues.set(key, tail);
  if (previous) await previous;
  try {
    return await fn();
  } finally {
    release();
    if (queues.get(key) === tail) queues.delete(key);
  }
}

/** A new temp file in `dir`, named after its owner (this process, now). ENOENT: the directory was removed. */
export async function openTemp(settings: FsSettings, dir: Dir): Promise<Temp> {
  const owner = newOwner(settings.timing.clock.now());
  const path = dir.at(tempName(owner));
  try {
    return { path, fd: await fdOpen(path, TEMP_FLAGS, settings.fileMode), owner };
  } catch (err) {
    throw errnoOf(err) === 'ENOENT' ? new Retry() : err;
  }
}

/** Takes the key's lock with a temp file of ours (see lock.ts). */
export async function lockWith(settings: FsSettings, dir: Dir, kp: KeyPath, temp: Temp): Promise<HeldLock> {
  const token = { path: temp.path, ino: (await fdStat(temp.fd)).ino, owner: temp.owner };
  return acquireLock(dir.at(lockName(kp.base)), dir.prefix, kp.key, token, settings.timing);
}

/**
 * Lets the lock go, then removes `names` (the temp file's names): the lock's holder is found by
 * its temp file, and a lock whose temp file is gone looks stale, free for others to take over
 * while its release is under way (lock.ts).
 */
export async function releaseThenRemove(lock: HeldLock | undefined, timing: FsSettings['timing'], names: readonly string[]): Promise<void> {
  if (lock) await releaseLock(lock, timing);
  await quietly(names.map((name) => fsp.unlink(name)));
}

/** Makes the directory entries durable: the key's directory and those where directories were created. */
function syncDirs(od: OpenedDir): Promise<unknown> {
  return Promise.all([fdSync(od.dir.fd), ...od.changed.filter((d) => d !== od.dir).map((d) => fdSync(d.fd))]);
}

/** Create-only: link(2) of the complete, fsynced temp file fails if the key exists. */
async function createOnly(settings: FsSettings, od: OpenedDir, kp: KeyPath, bytes: Uint8Array): Promise<PutResult> {
  const dir = od.dir;
  const temp = await openTemp(settings, dir);
  let committed = false;
  try {
    await fdWriteAll(temp.fd, bytes);
    await fdUtimes(temp.fd, nextMtimeSeconds(undefined));
    const st = await fdStat(temp.fd);
    await fdSync(temp.fd);
    try {
      await fsLink(temp.path, dir.at(kp.base));
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
      assertFileOrAbsent(kp, await lstatIfAny(dir.at(kp.base)));
      throw conditionFailed(kp.key, 'key exists');
    }
    committed = true;
    // The key has the inode now; the temp name goes while the directory is fsynced.
    await Promise.all([syncDirs(od), quietly([fsp.unlink(temp.path)])]);
    return { version: versionOf(st) };
  } catch (err) {
    if (!committed && errnoOf(err) === 'ENOENT') throw new Retry();
    throw err;
  } finally {
    await quietly([fdClose(temp.fd), committed ? undefined : fsp.unlink(temp.path)]);
  }
}

/** Replace (unconditional or `ifVersion`) under the key's lock: temp → write → fsync → rename → fsync dir. */
async function replace(
  settings: FsSettings,
  od: OpenedDir,
  kp: KeyPath,
  bytes: Uint8Array,
  ifVersion: string | undefined,
): Promise<PutResult> {
  const timing = settings.timing;
  const dir = od.dir;
  const target = dir.at(kp.base);
  const temp = await openTemp(settings, dir);
  // A second name of the temp file, made before the rename takes the first: the lock's holder until it is let go (lock.ts).
  const holderName = dir.at(tempName(newOwner(timing.clock.now())));
  let lock: HeldLock | undefined;
  let linked = false;
  let committed = false;
  try {
    lock = await lockWith(settings, dir, kp, temp);
    const previous = await lstatIfAny(target);
    assertFileOrAbsent(kp, previous);
    if (ifVersion !== undefined && (!previous || versionOf(previous) !== ifVersion))
      throw conditionFailed(kp.key, previous ? 'version changed' : 'key is gone');
    await fdWriteAll(temp.fd, bytes);
    let st = await fdStat(temp.fd);
    // The version must move past the previous one. The write's own mtime usually does
    // (fine-grained on kernels with multigrain timestamps: the inode was stat'ed before the
    // write); with coarse timestamps it may not, and then the mtime is set explicitly.
    if (previous && st.mtimeNs <= previous.mtimeNs) {
      await fdUtimes(temp.fd, nextMtimeSeconds(previous));
      st = await fdStat(temp.fd);
    }
    // A failed fsync rejects here and nothing is renamed: the old bytes stay in place.
    await fdSync(temp.fd);
    await fsLink(temp.path, holderName);
    linked = true;
    await assertHeld(lock, kp.key, timing);
    await fsRename(temp.path, target);
    committed = true;
    // The critical section (check, then rename) is over: the lock goes while the directory is fsynced.
    const held = lock;
    lock = undefined;
    const released = releaseThenRemove(held, timing, [holderName]);
    try {
      await syncDirs(od);
    } finally {
      // Over before the directories' descriptors close: its names go through them.
      await released;
    }
    return { version: versionOf(st) };
  } catch (err) {
    if (!committed && errnoOf(err) === 'ENOENT') throw new Retry();
    throw err;
  } finally {
    const names = [...(committed ? [] : [temp.path]), ...(linked && lock ? [holderName] : [])];
    await quietly([releaseThenRemove(lock, timing, names), fdClose(temp.fd)]);
  }
}

/** A put without the journal: create-only by link(2), any other by rename under the key's lock; started over while its directory vanishes. */
export function directPut(state: FsStoreState, key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
  // A few dozen at once in the process: each holds its directories, a temp file and a lock (descriptor-budget.ts).
  return directWrite(() => putNow(state, key, bytes, opts));
}

/** {@link directPut}, within the bound on direct writes. */
async function putNow(state: FsStoreState, key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
  const base = await rootDir(state);
  const kp = keyPath(key);
  for (let attempt = 0; ; attempt++) {
    let od: OpenedDir | undefined;
    try {
      try {
        od = await openDir(base, kp.dirKey, key, true);
      } catch (err) {
        throw errnoOf(err) === 'ENOENT' ? new Retry() : err;
      }
      const opened = od!;
      if (opts.ifAbsent) return await createOnly(state.settings, opened, kp, bytes);
      return await exclusive(state, key, () => replace(state.settings, opened, kp, bytes, opts.ifVersion));
    } catch (err) {
      // Only failures before anything was committed are retried: a put never lands twice.
      if (err instanceof Retry && attempt < 8) continue;
      if (err instanceof Retry)
        throw new CheckpointError('checkpoint_atomic_write_failed', `writing ${key} failed: its directory kept vanishing`, {
          details: { key, code: 'ENOENT' },
        });
      if (errnoOf(err) === 'ENAMETOOLONG') throw keyRefused(key, 'the path is too long for this file system', 'name_too_long');
      throw fsError(err, 'checkpoint_atomic_write_failed', 'writing', key, scrubFor(state, od ? [od.dir] : []));
    } finally {
      // Last: every name used above goes through these descriptors.
      await od?.close();
    }
  }
}
