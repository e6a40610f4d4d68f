import fs, { constants, type BigIntStats } from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { systemClock, type Clock } from '../../model/clock.js';
import { CheckpointError } from '../../model/errors.js';
import type { DeleteOptions, PutOptions, PutResult, StorageAdapter, StorageCapabilities, StorageEntry, StoredObject } from '../adapter.js';
import { assertKey, assertPrefix } from '../keys.js';
import { fdClose, fdOpen, fdSync, fdWriteAll, fsLink, fsRename } from './fd.js';
import { errnoOf, fsError, nextMtimeSeconds, readAll, versionOf } from './io.js';
import { acquireLock, assertHeld, releaseLock, type HeldLock, type LockTiming } from './lock.js';
import { INTERNAL_MARK, lockName, newOwner, tempName, type Owner } from './names.js';
import { checkDir, ensureDir, keyPath, keyRefused, symlinkRefused, type KeyPath } from './paths.js';
import { sweepInternalFiles } from './sweep.js';

/** Options of {@link fsStorage}. */
export interface FsStorageOptions {
  /** Root directory of the store. Every key is a file below it; nothing outside it is ever touched. */
  dir: string;
  /**
   * Create `dir` (and its parents) when it does not exist.
   * @default true
   */
  create?: boolean;
  /**
   * On open, remove temp and lock files left by crashed writers (only those whose process
   * is gone or that are older than `staleAfterMs`: another live process may be mid-write).
   * @default true
   */
  cleanupOnOpen?: boolean;
  /**
   * Age after which a lock or temp file is stale even though its process still runs
   * (a hung or suspended writer, or a pid reused by another program).
   * @default 60000
   */
  staleAfterMs?: number;
  /**
   * How long a write waits for a key's lock held by a live process before failing with
   * `checkpoint_atomic_write_failed` (details.reason `lock_timeout`).
   * @default 10000
   */
  lockTimeoutMs?: number;
  /**
   * Permission bits of new files (the process umask still applies).
   * @default 0o666
   */
  fileMode?: number;
  /**
   * Clock for lock ages and lock waits (file timestamps always come from the real clock).
   * @default systemClock
   */
  clock?: Clock;
}

/** What opening the store found. */
export interface FsOpenReport {
  /** The store root, with symlinks resolved. */
  readonly root: string;
  /** Temp files of crashed writers removed on open. */
  readonly removedTempFiles: number;
  /** Stale lock files removed on open. */
  readonly removedLocks: number;
}

/** The file-system adapter: a {@link StorageAdapter} plus its directory and open report. */
export interface FsStorage extends StorageAdapter {
  /** The `dir` option as given. */
  readonly dir: string;
  /**
   * Opens the store (creates and resolves the root, sweeps stale files) if no operation
   * did yet, and resolves what opening found. Operations open the store themselves;
   * call this to surface a bad directory early.
   */
  ready(): Promise<FsOpenReport>;
}

const CAPABILITIES: StorageCapabilities = Object.freeze({
  // Several renames cannot be made one atomic step on a POSIX file system, so there is no batch().
  atomicBatch: false,
  crossProcessConditional: true,
});

const { O_WRONLY, O_CREAT, O_EXCL, O_RDONLY, O_NOFOLLOW, O_NONBLOCK, O_DIRECTORY } = constants;
const TEMP_FLAGS = O_WRONLY | O_CREAT | O_EXCL;
// O_NONBLOCK keeps a planted FIFO from hanging a read; it changes nothing for regular files.
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY;

/** A pre-commit ENOENT: a directory vanished (pruned by a concurrent delete); the put starts over. */
class Retry extends Error {}

function configInvalid(message: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `fsStorage: ${message}`);
}

function conflict(key: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });
}

function lstatSyncIfAny(path: string): BigIntStats | undefined {
  return fs.lstatSync(path, { bigint: true, throwIfNoEntry: false });
}

async function lstatIfAny(path: string): Promise<BigIntStats | undefined> {
  try {
    return await fsp.lstat(path, { bigint: true });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

async function fsyncDir(path: string): Promise<void> {
  const fd = await fdOpen(path, DIR_FLAGS);
  try {
    await fdSync(fd);
  } finally {
    await fdClose(fd);
  }
}

/** Refuses what a key's path holds when it is not a regular file. */
function assertFileOrAbsent(kp: KeyPath, st: BigIntStats | undefined): void {
  if (!st || st.isFile()) return;
  if (st.isSymbolicLink()) throw symlinkRefused(kp.key);
  throw keyRefused(kp.key, 'a directory or special file is in the way (keys "a" and "a/b" cannot both exist in a file system)', 'path_occupied');
}

/** Closes a descriptor synchronously (microseconds, and no thread-pool job), ignoring failures. */
function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // nothing stored depends on it
  }
}

/** Removes a file synchronously (a directory-entry update of microseconds), ignoring failures. */
function unlinkQuietly(path: string): void {
  try {
    fs.unlinkSync(path);
  } catch {
    // already gone, or the next open's sweep will remove it
  }
}

/** Settles housekeeping calls, ignoring their failures (a close or unlink that fails changes nothing stored). */
async function quietly(calls: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  await Promise.all(calls.map((p) => p?.catch(() => undefined)));
}

/**
 * A durable store in a local directory: each key is a file at `dir/<key>`, so the files
 * are exactly the paths the profiles' specs name (`checkpoints/<run_id>/latest.json`).
 *
 * - **Crash-safe replace**: temp file in the key's directory → write all bytes → fsync →
 *   rename over the key → fsync the directory. A failed fsync aborts the write (the
 *   temp file is removed, nothing is renamed). A reader sees the old bytes or the new
 *   ones, never a torn file.
 * - **Create-only** (`ifAbsent`) is `link(2)` of the fully written and fsynced temp file:
 *   the kernel refuses it if the key exists, in this process or any other.
 * - **Conditional replace and delete** (`ifVersion`) hold between processes: the check
 *   and the rename (or unlink) of every replace and delete run under the key's lock
 *   file, a hard link of the writer's temp file in the key's directory; a lock whose
 *   process is gone, whose temp file is gone, or older than `staleAfterMs`, is broken.
 * - **Versions** are `<mtime ns>.<inode>.<size>` from `stat`, comparable across
 *   processes; each write moves the file's mtime past the previous version's (setting it
 *   explicitly when the file system's clock is too coarse), so a key's version never
 *   repeats even though inode numbers are reused.
 * - **Containment**: keys pass `assertKey`; no path below `dir` may go through a
 *   symbolic link (a key that would is refused with `checkpoint_key_invalid`), and
 *   directories are created one level at a time so a planted link is never followed.
 * - Temp and lock files (names starting `.sp\`) are never listed; the ones crashed
 *   writers left are removed on open.
 *
 * Node-only, POSIX (Linux, macOS); on Windows the store refuses to open
 * (`checkpoint_unsupported`). Local file systems only: network file systems do not keep
 * rename and fsync promises. `atomicBatch` is false: several files cannot be replaced in
 * one atomic step, so there is no `batch()`.
 *
 * @example
 * ```ts
 * import { fsStorage } from 'savepoint/fs';
 * const storage = fsStorage({ dir: '.checkpoints' });
 * const { version } = await storage.put('checkpoints/run-1/latest.json', bytes);
 * await storage.put('checkpoints/run-1/latest.json', next, { ifVersion: version });
 * ```
 */
export function fsStorage(options: FsStorageOptions): FsStorage {
  if (!options || typeof options.dir !== 'string' || options.dir === '') throw configInvalid('`dir` must be a non-empty string');
  const positive = (name: string, value: number | undefined, fallback: number): number => {
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw configInvalid(`\`${name}\` must be a positive number`);
    return value;
  };
  const timing: LockTiming = {
    clock: options.clock ?? systemClock,
    staleAfterMs: positive('staleAfterMs', options.staleAfterMs, 60_000),
    lockTimeoutMs: positive('lockTimeoutMs', options.lockTimeoutMs, 10_000),
  };
  const fileMode = options.fileMode ?? 0o666;
  if (!Number.isInteger(fileMode) || fileMode < 0 || fileMode > 0o7777) throw configInvalid('`fileMode` must be a permission mode such as 0o600');
  const clock = timing.clock;

  let opening: Promise<FsOpenReport> | undefined;
  let root: string | undefined;
  let closed = false;
  const inflight = new Set<Promise<unknown>>();
  // In-process queue per key path, so writers of one process line up instead of polling the lock file.
  const queues = new Map<string, Promise<void>>();

  const open = async (): Promise<FsOpenReport> => {
    if (process.platform === 'win32') {
      throw new CheckpointError('checkpoint_unsupported', 'fsStorage needs POSIX rename and directory fsync semantics; Windows is not supported');
    }
    const abs = resolve(options.dir);
    try {
      if (options.create !== false) await fsp.mkdir(abs, { recursive: true });
      const real = await fsp.realpath(abs);
      if (!(await fsp.stat(real)).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
      const swept = options.cleanupOnOpen === false ? { removedTempFiles: 0, removedLocks: 0 } : await sweepInternalFiles(real, timing);
      root = real;
      return { root: real, ...swept };
    } catch (err) {
      throw new CheckpointError('checkpoint_storage_unavailable', `cannot open fsStorage directory: ${errnoOf(err) ?? 'error'}`, { cause: err, details: { code: errnoOf(err) ?? 'UNKNOWN' } });
    }
  };
  const ready = (): Promise<FsOpenReport> => (opening ??= open());
  const rootDir = async (): Promise<string> => root ?? (await ready()).root;

  const assertOpen = (): void => {
    if (closed) throw new CheckpointError('checkpoint_closed', 'fs storage is closed');
  };
  function track<T>(promise: Promise<T>): Promise<T> {
    inflight.add(promise);
    const done = (): void => void inflight.delete(promise);
    promise.then(done, done);
    return promise;
  }
  /**
   * Runs `fn` alone among this process's calls for `path`, so writers of one process line
   * up here instead of polling the lock file. Housekeeping a call leaves running (closing
   * files) does not hold the line: the lock is released before the call resolves.
   */
  async function exclusive<T>(path: string, fn: () => Promise<T>): Promise<T> {
    const previous = queues.get(path);
    let release!: () => void;
    const mine = new Promise<void>((r) => (release = r));
    const tail = previous ? previous.then(() => mine) : mine;
    queues.set(path, tail);
    if (previous) await previous;
    try {
      return await fn();
    } finally {
      release();
      if (queues.get(path) === tail) queues.delete(path);
    }
  }

  /** fsyncs the parents of newly created directories, so the new entries survive a crash too. */
  async function syncCreated(created: readonly string[]): Promise<void> {
    const parents = [...new Set(created.map((d) => dirname(d)))];
    await Promise.all(parents.map(fsyncDir));
  }

  /** A new temp file in the key's directory, named after its owner (this process, now). */
  async function openTemp(kp: KeyPath): Promise<{ path: string; fd: number; owner: Owner }> {
    const owner = newOwner(clock.now());
    const path = `${kp.dir}/${tempName(owner)}`;
    return { path, fd: await fdOpen(path, TEMP_FLAGS, fileMode), owner };
  }

  /** Takes the key's lock with a temp file of ours (see lock.ts). */
  function lockWith(kp: KeyPath, temp: { path: string; fd: number; owner: Owner }): HeldLock | Promise<HeldLock> {
    const token = { path: temp.path, ino: fs.fstatSync(temp.fd, { bigint: true }).ino, owner: temp.owner };
    const path = `${kp.dir}/${lockName(kp.base)}`;
    // Uncontended (the usual case): one synchronous link, no async machinery.
    try {
      fs.linkSync(token.path, path);
      return { path, dir: kp.dir, token };
    } catch (err) {
      if (errnoOf(err) !== 'EEXIST') throw err;
    }
    return acquireLock(path, kp.dir, kp.key, token, timing);
  }

  /*
   * Lookups (lstat, fstat) and inode updates (futimes, link, unlink) on the hot path are
   * synchronous: they cost microseconds, and an asynchronous call costs a thread-pool
   * round trip on top. Everything that waits for the disk (write, fsync) or creates and
   * renames files is asynchronous.
   */

  /** Create-only: link(2) of the complete, fsynced temp file fails if the key exists. */
  async function createOnly(kp: KeyPath, bytes: Uint8Array, created: readonly string[]): Promise<PutResult> {
    const temp = await openTemp(kp).catch((err: unknown) => {
      throw errnoOf(err) === 'ENOENT' ? new Retry() : err;
    });
    let dirFd: number | undefined;
    let committed = false;
    try {
      await fdWriteAll(temp.fd, bytes);
      const t = nextMtimeSeconds(undefined);
      fs.futimesSync(temp.fd, t, t);
      const st = fs.fstatSync(temp.fd, { bigint: true });
      await fdSync(temp.fd);
      dirFd = fs.openSync(kp.dir, DIR_FLAGS);
      try {
        await fsLink(temp.path, kp.path);
      } catch (err) {
        if (errnoOf(err) !== 'EEXIST') throw err;
        assertFileOrAbsent(kp, lstatSyncIfAny(kp.path));
        throw conflict(kp.key, 'key exists');
      }
      committed = true;
      // The key has the inode now; dropping the temp name first puts both in one journal commit.
      unlinkQuietly(temp.path);
      await Promise.all([fdSync(dirFd), syncCreated(created)]);
      return { version: versionOf(st) };
    } catch (err) {
      if (!committed && errnoOf(err) === 'ENOENT') throw new Retry();
      throw err;
    } finally {
      closeQuietly(temp.fd);
      if (dirFd !== undefined) closeQuietly(dirFd);
      if (!committed) unlinkQuietly(temp.path);
    }
  }

  /** Replace (unconditional or `ifVersion`) under the key's lock: temp → write → fsync → rename → fsync dir. */
  async function replace(kp: KeyPath, bytes: Uint8Array, ifVersion: string | undefined, created: readonly string[]): Promise<PutResult> {
    const temp = await openTemp(kp).catch((err: unknown) => {
      throw errnoOf(err) === 'ENOENT' ? new Retry() : err;
    });
    let dirFd: number | undefined;
    let lock: HeldLock | undefined;
    let committed = false;
    try {
      lock = await lockWith(kp, temp);
      const previous = lstatSyncIfAny(kp.path);
      assertFileOrAbsent(kp, previous);
      if (ifVersion !== undefined && (!previous || versionOf(previous) !== ifVersion)) throw conflict(kp.key, previous ? 'version changed' : 'key is gone');
      await fdWriteAll(temp.fd, bytes);
      let st = fs.fstatSync(temp.fd, { bigint: true });
      // The version must move past the previous one. The write's own mtime usually does
      // (fine-grained on kernels with multigrain timestamps: the inode was stat'ed before the
      // write); with coarse timestamps it may not, and then the mtime is set explicitly.
      if (previous && st.mtimeNs <= previous.mtimeNs) {
        const t = nextMtimeSeconds(previous);
        fs.futimesSync(temp.fd, t, t);
        st = fs.fstatSync(temp.fd, { bigint: true });
      }
      // A failed fsync rejects here and nothing is renamed: the old bytes stay in place.
      await fdSync(temp.fd);
      assertHeld(lock, kp.key, timing);
      dirFd = fs.openSync(kp.dir, DIR_FLAGS);
      await fsRename(temp.path, kp.path);
      committed = true;
      // The critical section (check, then rename) is over: unlocking now lets the next writer in
      // and puts the unlink into the same journal commit as the rename.
      releaseLock(lock);
      lock = undefined;
      await Promise.all([fdSync(dirFd), syncCreated(created)]);
      return { version: versionOf(st) };
    } catch (err) {
      if (!committed && errnoOf(err) === 'ENOENT') throw new Retry();
      throw err;
    } finally {
      if (lock) releaseLock(lock);
      closeQuietly(temp.fd);
      if (dirFd !== undefined) closeQuietly(dirFd);
      if (!committed) unlinkQuietly(temp.path);
    }
  }

  async function doPut(key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
    const base = root ?? (await rootDir());
    const kp = keyPath(base, key);
    for (let attempt = 0; ; attempt++) {
      try {
        let created: string[];
        try {
          created = ensureDir(base, kp);
        } catch (err) {
          throw errnoOf(err) === 'ENOENT' ? new Retry() : err;
        }
        if (opts.ifAbsent) return await createOnly(kp, bytes, created);
        return await exclusive(kp.path, () => replace(kp, bytes, opts.ifVersion, created));
      } catch (err) {
        // Only failures before anything was committed are retried: a put never lands twice.
        if (err instanceof Retry && attempt < 8) continue;
        if (err instanceof Retry) throw new CheckpointError('checkpoint_atomic_write_failed', `writing ${key} failed: its directory kept vanishing`, { details: { key, code: 'ENOENT' } });
        if (errnoOf(err) === 'ENAMETOOLONG') throw keyRefused(key, 'the path is too long for this file system', 'name_too_long');
        throw fsError(err, 'checkpoint_atomic_write_failed', 'writing', key, base);
      }
    }
  }

  async function doGet(key: string): Promise<StoredObject | undefined> {
    const base = await rootDir();
    const kp = keyPath(base, key);
    try {
      if (!checkDir(base, kp.dirKey, key)) return undefined;
      let fh: FileHandle;
      try {
        fh = await fsp.open(kp.path, READ_FLAGS);
      } catch (err) {
        const code = errnoOf(err);
        if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
        if (code === 'ELOOP' || code === 'EMLINK') throw symlinkRefused(key);
        throw err;
      }
      try {
        const st = await fh.stat({ bigint: true });
        if (!st.isFile()) return undefined;
        return { bytes: await readAll(fh, Number(st.size)), version: versionOf(st) };
      } finally {
        await fh.close().catch(() => undefined);
      }
    } catch (err) {
      if (errnoOf(err) === 'ENAMETOOLONG') return undefined;
      throw fsError(err, 'checkpoint_storage_unavailable', 'reading', key, base);
    }
  }

  /** Removes now-empty directories from the key's directory up (never the root); stops at the first that is not empty. */
  async function pruneDirs(base: string, dirKey: string): Promise<void> {
    for (let rel = dirKey; rel !== ''; rel = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '') {
      try {
        await fsp.rmdir(`${base}/${rel}`);
      } catch {
        return;
      }
    }
  }

  async function doDelete(key: string, opts: DeleteOptions): Promise<boolean> {
    const base = await rootDir();
    const kp = keyPath(base, key);
    const missing = (): boolean => {
      if (opts.ifVersion !== undefined) throw conflict(key, 'key is gone');
      return false;
    };
    try {
      if (!checkDir(base, kp.dirKey, key)) return missing();
      const deleted = await exclusive(kp.path, async (): Promise<boolean> => {
        // A delete has no temp file to lock with: it makes an empty one.
        let temp: { path: string; fd: number; owner: Owner } | undefined;
        let lock: HeldLock | undefined;
        try {
          try {
            temp = await openTemp(kp);
            lock = await lockWith(kp, temp);
          } catch (err) {
            if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return missing();
            throw err;
          }
          const previous = lstatSyncIfAny(kp.path);
          if (previous?.isSymbolicLink()) throw symlinkRefused(key);
          const exists = previous !== undefined && previous.isFile();
          if (opts.ifVersion !== undefined && (!exists || versionOf(previous) !== opts.ifVersion)) throw conflict(key, exists ? 'version changed' : 'key is gone');
          if (!exists) return false;
          assertHeld(lock, key, timing);
          await fsp.unlink(kp.path);
          await fsyncDir(kp.dir);
          return true;
        } finally {
          if (lock) releaseLock(lock);
          if (temp) await quietly([fdClose(temp.fd), fsp.unlink(temp.path)]);
        }
      });
      if (deleted) await pruneDirs(base, kp.dirKey);
      return deleted;
    } catch (err) {
      throw fsError(err, 'checkpoint_atomic_write_failed', 'deleting', key, base);
    }
  }

  async function* walk(abs: string, rel: string, namePrefix: string): AsyncGenerator<StorageEntry> {
    let entries;
    try {
      entries = await fsp.readdir(abs, { withFileTypes: true });
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return;
      throw err;
    }
    // Sorting names, with "/" appended to directories, yields keys in full-key code-unit
    // order while walking depth-first: every key under "a/" sorts exactly where "a/" does.
    const children: { name: string; dir: boolean; sortKey: string }[] = [];
    for (const entry of entries) {
      const name = entry.name;
      if (name.includes('\\') || !name.startsWith(namePrefix)) continue; // internal files, and names no key can have
      if (entry.isDirectory()) children.push({ name, dir: true, sortKey: `${name}/` });
      else if (entry.isFile()) children.push({ name, dir: false, sortKey: name });
      // Symlinks, FIFOs, sockets: not keys.
    }
    children.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
    for (let i = 0; i < children.length; ) {
      const child = children[i]!;
      if (child.dir) {
        yield* walk(`${abs}/${child.name}`, rel ? `${rel}/${child.name}` : child.name, '');
        i++;
        continue;
      }
      // stat a run of consecutive files together; yield them in order.
      const run: string[] = [];
      while (i < children.length && !children[i]!.dir && run.length < 32) run.push(children[i++]!.name);
      const stats = await Promise.all(run.map((name) => lstatIfAny(`${abs}/${name}`)));
      for (let j = 0; j < run.length; j++) {
        const st = stats[j];
        const key = rel ? `${rel}/${run[j]!}` : run[j]!;
        if (!st || !st.isFile() || !isKey(key)) continue;
        yield { key, version: versionOf(st), size: Number(st.size) };
      }
    }
  }

  const storage: FsStorage = {
    name: 'fs',
    capabilities: CAPABILITIES,
    dir: options.dir,
    ready,

    async get(key: string): Promise<StoredObject | undefined> {
      assertOpen();
      assertKey(key);
      return track(doGet(key));
    },

    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      assertOpen();
      assertKey(key);
      if (!(bytes instanceof Uint8Array)) throw new CheckpointError('checkpoint_schema_invalid', `value of ${key} is not a Uint8Array`, { details: { key } });
      // Copy before the first await: the caller may reuse its buffer as soon as put() returns.
      return track(doPut(key, bytes.slice(), opts));
    },

    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      assertOpen();
      assertKey(key);
      return track(doDelete(key, opts));
    },

    async *list(prefix: string): AsyncIterable<StorageEntry> {
      assertOpen();
      assertPrefix(prefix);
      const base = await rootDir();
      const slash = prefix.lastIndexOf('/');
      const dirKey = slash < 0 ? '' : prefix.slice(0, slash);
      try {
        if (!checkDir(base, dirKey, prefix)) return;
        yield* walk(dirKey ? `${base}/${dirKey}` : base, dirKey, prefix.slice(slash + 1));
      } catch (err) {
        throw fsError(err, 'checkpoint_storage_unavailable', 'listing', prefix, base);
      }
    },

    async close(): Promise<void> {
      closed = true;
      // Operations in flight finish (or fail) first; their housekeeping releases their locks.
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
    },
  };
  return storage;
}

function isKey(key: string): boolean {
  try {
    assertKey(key);
    return true;
  } catch {
    return false;
  }
}

/** Prefix of the names of fsStorage's own temp and lock files (never keys, never listed). */
export const FS_INTERNAL_PREFIX = INTERNAL_MARK;
