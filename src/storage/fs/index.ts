import { constants, type BigIntStats } from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import { resolve } from 'node:path';
import { systemClock, type Clock } from '../../model/clock.js';
import { CheckpointError } from '../../model/errors.js';
import type { BatchOperation, BatchOutcome, DeleteOptions, PutOptions, PutResult, StorageAdapter, StorageCapabilities, StorageEntry, StoredObject } from '../adapter.js';
import { assertBatchOperations } from '../batch-operation.js';
import { assertKey, assertPrefix } from '../keys.js';
import { openChild, openDir, openRoot, type Containment, type Dir, type OpenedDir, type RootDir } from './dir.js';
import { fdClose, fdOpen, fdStat, fdSync, fdUtimes, fdWriteAll, fsLink, fsRename, realIo, type FsIo } from './fd.js';
import { errnoOf, fsError, nextMtimeSeconds, readAll, scrubber, versionOf, type Scrub } from './io.js';
import { acquireLock, assertHeld, lstatIfAny, releaseLock, type HeldLock, type LockTiming } from './lock.js';
import { INTERNAL_MARK, lockName, newOwner, tempName, type Owner } from './names.js';
import { createJournal, JOURNAL_NAME, type AckedState, type Journal, type RecoveryReport } from './journal.js';
import { keyPath, keyRefused, occupiedRefused, symlinkRefused, type KeyPath } from './paths.js';
import { sweepInternalFiles } from './sweep.js';
import { ownedCopy } from '../handed-over.js';

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
  /**
   * Write through the store's write-ahead journal: every put, delete and `batch()` is one
   * record written durably (O_DSYNC) to the preallocated `<dir>/.sp\journal` (or, while
   * that one is checkpointed, `<dir>/.sp\journal-2`) and
   * acknowledged then; the files are applied by rename right after, in the background
   * (reads through savepoint see the acknowledged state at once, `flush()` waits for the
   * files); batches of concurrent callers share one record (group commit). Gives
   * `atomicBatch: true`. Without it, each put is the spec's own durable sequence
   * (temp → fsync → rename → fsync dir) and there is no `batch()`. Every process using one
   * directory must use the same setting. See docs/storage.md ("The journal").
   * @default false
   */
  journal?: boolean;
  /**
   * With `journal`: once the journal file commits go to grows past this many bytes,
   * commits switch to the journal's other file and the full one is checkpointed in the
   * background (its applied files fsynced in place, then emptied). Each of the two journal
   * files is preallocated to this size plus 64 KiB (at most 64 MiB).
   * @default 1048576
   */
  journalCheckpointBytes?: number;
}

/** Test seams of {@link createFsStorage}; not part of the public API. */
export interface FsInternals {
  /** The file-system calls the journal makes (fault injection). */
  readonly io?: FsIo;
  /** How long the journal lock is kept after a commit (default 20 ms). */
  readonly journalLingerMs?: number;
  /** How long the journal's applies wait for a pause in the commits (default 3 ms), and at most (default 40 ms). */
  readonly journalApplyQuietMs?: number;
  readonly journalApplyLagMs?: number;
}

/** What opening the store found. */
export interface FsOpenReport {
  /** The store root, with symlinks resolved. */
  readonly root: string;
  /**
   * How files below the root are named: `'dir-fd'` (Linux: relative to directory descriptors
   * opened without following links, race-free against swapped directories) or `'path'`
   * (elsewhere: every component is checked, but a swap between check and use is not
   * excluded). See docs/storage.md.
   */
  readonly containment: Containment;
  /** Temp files of crashed writers removed on open. */
  readonly removedTempFiles: number;
  /** Stale lock files removed on open. */
  readonly removedLocks: number;
  /** What replaying the journal on open found (present when the store has a journal). */
  readonly journal?: RecoveryReport;
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
  /** With the journal: waits until every acknowledged write is in the spec's files (the `flush` of `BufferedStorage`). */
  flush?(): Promise<void>;
}

const DIRECT: StorageCapabilities = Object.freeze({
  // Several renames cannot be made one atomic step on a POSIX file system: without the journal there is no batch().
  atomicBatch: false,
  crossProcessConditional: true,
});
const JOURNALED: StorageCapabilities = Object.freeze({ atomicBatch: true, crossProcessConditional: true });

const { O_WRONLY, O_CREAT, O_EXCL, O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
// O_NOFOLLOW: a temp name is fresh, but never write through a link someone planted under it.
const TEMP_FLAGS = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW;
// O_NONBLOCK keeps a planted FIFO from hanging a read; it changes nothing for regular files.
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** A pre-commit ENOENT: a directory vanished (pruned by a concurrent delete); the put starts over. */
class Retry extends Error {}

function configInvalid(message: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `fsStorage: ${message}`);
}

function conflict(key: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });
}

/** Refuses what a key's path holds when it is not a regular file. */
function assertFileOrAbsent(kp: KeyPath, st: BigIntStats | undefined): void {
  if (!st || st.isFile()) return;
  if (st.isSymbolicLink()) throw symlinkRefused(kp.key);
  throw occupiedRefused(kp.key);
}

/** Settles housekeeping calls, ignoring their failures (a close or unlink that fails changes nothing stored). */
async function quietly(calls: readonly (Promise<unknown> | undefined)[]): Promise<void> {
  await Promise.all(calls.map((p) => p?.catch(() => undefined)));
}

/** A temp file being written in a key's directory. */
interface Temp {
  /** Its name inside the directory (through the directory's descriptor). */
  readonly path: string;
  readonly fd: number;
  readonly owner: Owner;
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
 * - **Containment**: keys pass `assertKey`; every name below `dir` is used relative to a
 *   directory descriptor opened without following links (on Linux through
 *   `/proc/self/fd/<fd>/<name>`), so a directory swapped for a symlink between check and
 *   use cannot redirect a write; a key whose path goes through a symbolic link is refused
 *   with `checkpoint_key_invalid`. No synchronous file-system call is made.
 * - **Journal** (`journal: true`): every write is one record of a write-ahead journal,
 *   acknowledged once durable and applied to the files by rename in the background (reads
 *   through savepoint, in this process or another, see it at once; `flush()` waits for the
 *   files); `batch()` is atomic (`atomicBatch: true`), concurrent batches share one
 *   durable record write, and opening the store replays the journal.
 * - Temp and lock files (names starting `.sp\`) are never listed; the ones crashed
 *   writers left are removed on open.
 *
 * Node-only, POSIX (Linux, macOS); on Windows the store refuses to open
 * (`checkpoint_unsupported`). Local file systems only: network file systems do not keep
 * rename and fsync promises. Without the journal, `atomicBatch` is false: several files
 * cannot be replaced in one atomic step, so there is no `batch()`.
 *
 * @example
 * ```ts
 * import { fsStorage } from 'savepoint/fs';
 * const storage = fsStorage({ dir: '.checkpoints' });
 * const { version } = await storage.put('checkpoints/run-1/latest.json', bytes);
 * await storage.put('checkpoints/run-1/latest.json', next, { ifVersion: version });
 *
 * // One fsync per checkpoint, atomic batches, group commit across runs:
 * const journaled = fsStorage({ dir: '.checkpoints', journal: true });
 * await journaled.batch!([
 *   { type: 'put', key: 'checkpoints/run-1/history/cp_2.json', bytes, ifAbsent: true },
 *   { type: 'put', key: 'checkpoints/run-1/latest.json', bytes },
 * ]);
 * ```
 */
export function fsStorage(options: FsStorageOptions): FsStorage {
  return createFsStorage(options);
}

/** {@link fsStorage} with test seams (fault injection into the journal's calls). */
export function createFsStorage(options: FsStorageOptions, internals: FsInternals = {}): FsStorage {
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
  const useJournal = options.journal === true;
  const checkpointBytes = positive('journalCheckpointBytes', options.journalCheckpointBytes, 1 << 20);
  const io = internals.io ?? realIo;
  let journal: Journal | undefined;

  let opening: Promise<FsOpenReport> | undefined;
  let root: RootDir | undefined;
  let closed = false;
  const inflight = new Set<Promise<unknown>>();
  // In-process queue per key, so writers of one process line up instead of polling the lock file.
  const queues = new Map<string, Promise<void>>();

  const open = async (): Promise<FsOpenReport> => {
    if (process.platform === 'win32') {
      throw new CheckpointError('checkpoint_unsupported', 'fsStorage needs POSIX rename and directory fsync semantics; Windows is not supported');
    }
    const abs = resolve(options.dir);
    let opened: RootDir | undefined;
    try {
      if (options.create !== false) await fsp.mkdir(abs, { recursive: true });
      // The root itself may be reached through links (the user chose it); everything below it is not.
      const real = await fsp.realpath(abs);
      opened = await openRoot(real);
      const swept = options.cleanupOnOpen === false ? { removedTempFiles: 0, removedLocks: 0 } : await sweepInternalFiles(opened, timing);
      // A journal left by a journaled process is replayed even when this instance writes directly.
      const hasJournal = useJournal || ((await lstatIfAny(opened.at(JOURNAL_NAME)))?.size ?? 0n) > 0n;
      let recovered: RecoveryReport | undefined;
      if (hasJournal) {
        const j = createJournal({
          root: opened,
          timing,
          fileMode,
          io,
          checkpointBytes,
          ...(internals.journalLingerMs === undefined ? {} : { lingerMs: internals.journalLingerMs }),
          ...(internals.journalApplyQuietMs === undefined ? {} : { applyQuietMs: internals.journalApplyQuietMs }),
          ...(internals.journalApplyLagMs === undefined ? {} : { applyLagMs: internals.journalApplyLagMs }),
        });
        recovered = await j.recover();
        if (useJournal) journal = j;
        else await j.close();
      }
      root = opened;
      return { root: real, containment: opened.containment, ...swept, ...(recovered ? { journal: recovered } : {}) };
    } catch (err) {
      if (opened) await fdClose(opened.fd).catch(() => undefined);
      if (err instanceof CheckpointError) throw err;
      throw new CheckpointError('checkpoint_storage_unavailable', `cannot open fsStorage directory: ${errnoOf(err) ?? 'error'}`, {
        cause: scrubbedOpen(err, abs),
        details: { code: errnoOf(err) ?? 'UNKNOWN' },
      });
    }
  };
  const ready = (): Promise<FsOpenReport> => (opening ??= open());
  const rootDir = async (): Promise<RootDir> => {
    if (!root) await ready();
    if (!root) throw new CheckpointError('checkpoint_closed', 'fs storage is closed');
    return root;
  };
  let listings = 0;
  /** Closes the root's descriptor once nothing can use it any more (names through it would reach whatever reuses the number). */
  const closeRoot = async (): Promise<void> => {
    if (listings > 0 || inflight.size > 0 || !root) return;
    const fd = root.fd;
    root = undefined;
    await fdClose(fd).catch(() => undefined);
  };
  const scrubFor = (dirs: readonly Dir[]): Scrub => scrubber(root?.real, root ? [root, ...dirs] : dirs);

  const assertOpen = (): void => {
    if (closed) throw new CheckpointError('checkpoint_closed', 'fs storage is closed');
  };
  function track<T>(promise: Promise<T>): Promise<T> {
    inflight.add(promise);
    const done = (): void => void inflight.delete(promise);
    promise.then(done, done);
    return promise;
  }
  /** Runs `fn` alone among this process's calls for `key`, so writers of one process line up here instead of polling the lock file. */
  async function exclusive<T>(key: string, fn: () => Promise<T>): Promise<T> {
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
  async function openTemp(dir: Dir): Promise<Temp> {
    const owner = newOwner(clock.now());
    const path = dir.at(tempName(owner));
    try {
      return { path, fd: await fdOpen(path, TEMP_FLAGS, fileMode), owner };
    } catch (err) {
      throw errnoOf(err) === 'ENOENT' ? new Retry() : err;
    }
  }

  /** Takes the key's lock with a temp file of ours (see lock.ts). */
  async function lockWith(dir: Dir, kp: KeyPath, temp: Temp): Promise<HeldLock> {
    const token = { path: temp.path, ino: (await fdStat(temp.fd)).ino, owner: temp.owner };
    return acquireLock(dir.at(lockName(kp.base)), dir.prefix, kp.key, token, timing);
  }

  /** Makes the directory entries durable: the key's directory and those where directories were created. */
  function syncDirs(od: OpenedDir): Promise<unknown> {
    return Promise.all([fdSync(od.dir.fd), ...od.changed.filter((d) => d !== od.dir).map((d) => fdSync(d.fd))]);
  }

  /** Create-only: link(2) of the complete, fsynced temp file fails if the key exists. */
  async function createOnly(od: OpenedDir, kp: KeyPath, bytes: Uint8Array): Promise<PutResult> {
    const dir = od.dir;
    const temp = await openTemp(dir);
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
        throw conflict(kp.key, 'key exists');
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
  async function replace(od: OpenedDir, kp: KeyPath, bytes: Uint8Array, ifVersion: string | undefined): Promise<PutResult> {
    const dir = od.dir;
    const target = dir.at(kp.base);
    const temp = await openTemp(dir);
    let lock: HeldLock | undefined;
    let committed = false;
    try {
      lock = await lockWith(dir, kp, temp);
      const previous = await lstatIfAny(target);
      assertFileOrAbsent(kp, previous);
      if (ifVersion !== undefined && (!previous || versionOf(previous) !== ifVersion)) throw conflict(kp.key, previous ? 'version changed' : 'key is gone');
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
      await assertHeld(lock, kp.key, timing);
      await fsRename(temp.path, target);
      committed = true;
      // The critical section (check, then rename) is over: the lock goes while the directory is fsynced.
      const held = lock;
      lock = undefined;
      await Promise.all([syncDirs(od), releaseLock(held, timing)]);
      return { version: versionOf(st) };
    } catch (err) {
      if (!committed && errnoOf(err) === 'ENOENT') throw new Retry();
      throw err;
    } finally {
      await quietly([lock ? releaseLock(lock, timing) : undefined, fdClose(temp.fd), committed ? undefined : fsp.unlink(temp.path)]);
    }
  }

  /** A batch through the journal, its failures as the adapter's errors. */
  async function journaled(ops: readonly BatchOperation[], what: string, key: string): Promise<BatchOutcome[]> {
    // No await once the root is open (the commit's path).
    if (!root) await rootDir();
    try {
      return await journal!.commit(ops);
    } catch (err) {
      if (errnoOf(err) === 'ENAMETOOLONG') throw keyRefused(key, 'the path is too long for this file system', 'name_too_long');
      throw fsError(err, 'checkpoint_atomic_write_failed', what, key, scrubFor([]));
    }
  }

  async function doPut(key: string, bytes: Uint8Array, opts: PutOptions): Promise<PutResult> {
    if (useJournal) {
      const [outcome] = await journaled([{ type: 'put', key, bytes, ...opts }], 'writing', key);
      return { version: (outcome as { version: string }).version };
    }
    const base = await rootDir();
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
        if (opts.ifAbsent) return await createOnly(opened, kp, bytes);
        return await exclusive(key, () => replace(opened, kp, bytes, opts.ifVersion));
      } catch (err) {
        // Only failures before anything was committed are retried: a put never lands twice.
        if (err instanceof Retry && attempt < 8) continue;
        if (err instanceof Retry) throw new CheckpointError('checkpoint_atomic_write_failed', `writing ${key} failed: its directory kept vanishing`, { details: { key, code: 'ENOENT' } });
        if (errnoOf(err) === 'ENAMETOOLONG') throw keyRefused(key, 'the path is too long for this file system', 'name_too_long');
        throw fsError(err, 'checkpoint_atomic_write_failed', 'writing', key, scrubFor(od ? [od.dir] : []));
      } finally {
        // Last: every name used above goes through these descriptors.
        await od?.close();
      }
    }
  }

  async function readKey(dir: Dir, kp: KeyPath): Promise<StoredObject | undefined> {
    let fh: FileHandle;
    try {
      fh = await fsp.open(dir.at(kp.base), READ_FLAGS);
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      if (code === 'ELOOP' || code === 'EMLINK') throw symlinkRefused(kp.key);
      throw err;
    }
    try {
      const st = await fh.stat({ bigint: true });
      // A directory or FIFO where a key's file should be: say so (a reader must not take it for "no snapshot").
      if (!st.isFile()) throw occupiedRefused(kp.key);
      return { bytes: await readAll(fh, Number(st.size)), version: versionOf(st) };
    } finally {
      await fh.close().catch(() => undefined);
    }
  }

  async function doGet(key: string): Promise<StoredObject | undefined> {
    const base = await rootDir();
    const kp = keyPath(key);
    let od: OpenedDir | undefined;
    try {
      // Journal: an acknowledged write whose file is not applied yet answers from the journal's records.
      const acked = journal ? (await journal.unapplied(key)).get(key) : undefined;
      if (acked?.bytes === null) return undefined;
      if (acked?.version !== undefined) return { bytes: acked.bytes.slice(), version: acked.version };
      od = await openDir(base, kp.dirKey, key, false);
      return od ? await readKey(od.dir, kp) : undefined;
    } catch (err) {
      if (errnoOf(err) === 'ENAMETOOLONG') return undefined;
      throw fsError(err, 'checkpoint_storage_unavailable', 'reading', key, scrubFor(od ? [od.dir] : []));
    } finally {
      await od?.close();
    }
  }

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
  async function remove(od: OpenedDir, kp: KeyPath, opts: DeleteOptions, missing: () => boolean): Promise<boolean> {
    const dir = od.dir;
    let temp: Temp | undefined;
    let lock: HeldLock | undefined;
    try {
      try {
        temp = await openTemp(dir);
        lock = await lockWith(dir, kp, temp);
      } catch (err) {
        if (err instanceof Retry || errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ENOTDIR') return missing();
        throw err;
      }
      const previous = await lstatIfAny(dir.at(kp.base));
      if (previous?.isSymbolicLink()) throw symlinkRefused(kp.key);
      const exists = previous !== undefined && previous.isFile();
      if (opts.ifVersion !== undefined && (!exists || versionOf(previous) !== opts.ifVersion)) throw conflict(kp.key, exists ? 'version changed' : 'key is gone');
      if (!exists) return false;
      await assertHeld(lock, kp.key, timing);
      await fsp.unlink(dir.at(kp.base));
      await fdSync(dir.fd);
      return true;
    } finally {
      await quietly([lock ? releaseLock(lock, timing) : undefined, temp ? fdClose(temp.fd) : undefined, temp ? fsp.unlink(temp.path) : undefined]);
    }
  }

  async function doDelete(key: string, opts: DeleteOptions): Promise<boolean> {
    if (useJournal) {
      const [outcome] = await journaled([{ type: 'delete', key, ...opts }], 'deleting', key);
      return (outcome as { existed: boolean }).existed;
    }
    const base = await rootDir();
    const kp = keyPath(key);
    const missing = (): boolean => {
      if (opts.ifVersion !== undefined) throw conflict(key, 'key is gone');
      return false;
    };
    let od: OpenedDir | undefined;
    try {
      od = await openDir(base, kp.dirKey, key, false);
      if (!od) return missing();
      const opened = od;
      const deleted = await exclusive(key, () => remove(opened, kp, opts, missing));
      if (deleted) await pruneDirs(opened);
      return deleted;
    } catch (err) {
      throw fsError(err, 'checkpoint_atomic_write_failed', 'deleting', key, scrubFor(od ? [od.dir] : []));
    } finally {
      await od?.close();
    }
  }

  async function* walk(base: RootDir, dir: Dir, namePrefix: string): AsyncGenerator<StorageEntry> {
    let entries;
    try {
      entries = await fsp.readdir(dir.prefix, { withFileTypes: true });
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
        i++;
        const sub = await openChild(base, dir, child.name);
        if (!sub) continue; // gone, or swapped for a link since the listing
        try {
          yield* walk(base, sub, '');
        } finally {
          await fdClose(sub.fd).catch(() => undefined);
        }
        continue;
      }
      // stat a run of consecutive files together; yield them in order.
      const run: string[] = [];
      while (i < children.length && !children[i]!.dir && run.length < 32) run.push(children[i++]!.name);
      const stats = await Promise.all(run.map((name) => lstatIfAny(dir.at(name))));
      for (let j = 0; j < run.length; j++) {
        const st = stats[j];
        const key = dir.rel ? `${dir.rel}/${run[j]!}` : run[j]!;
        if (!st || !st.isFile() || !isKey(key)) continue;
        yield { key, version: versionOf(st), size: Number(st.size) };
      }
    }
  }

  const storage: FsStorage = {
    name: 'fs',
    capabilities: useJournal ? JOURNALED : DIRECT,
    dir: options.dir,
    ready,

    async get(key: string): Promise<StoredObject | undefined> {
      assertOpen();
      assertKey(key);
      // `return await`: an async function returning a promise takes two more microtask turns to settle (issue 15: the answer without extra hops).
      return await track(doGet(key));
    },

    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      assertOpen();
      assertKey(key);
      if (!(bytes instanceof Uint8Array)) throw new CheckpointError('checkpoint_schema_invalid', `value of ${key} is not a Uint8Array`, { details: { key } });
      // Copy before the first await: the caller may reuse its buffer as soon as put() returns (unless the writer handed it over: a large part it never touches again).
      return await track(doPut(key, ownedCopy(bytes), opts));
    },

    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      assertOpen();
      assertKey(key);
      return await track(doDelete(key, opts));
    },

    ...(useJournal
      ? {
          /** Waits until every acknowledged write is in the spec's files (they are applied in the background). */
          async flush(): Promise<void> {
            assertOpen();
            await rootDir();
            try {
              await track(journal!.flush());
            } catch (err) {
              throw fsError(err, 'checkpoint_atomic_write_failed', 'applying', 'the journal', scrubFor([]));
            }
          },
          async batch(operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
            assertOpen();
            assertBatchOperations(operations);
            // Copied now: the caller may reuse its buffers as soon as batch() returns (handed-over ones excepted, as in put).
            const ops = operations.map((op): BatchOperation => (op.type === 'put' ? { ...op, bytes: ownedCopy(op.bytes) } : op));
            if (ops.length === 0) return [];
            return await track(journaled(ops, 'writing', ops[0]!.key));
          },
        }
      : {}),

    async *list(prefix: string): AsyncIterable<StorageEntry> {
      assertOpen();
      assertPrefix(prefix);
      const base = await rootDir();
      const slash = prefix.lastIndexOf('/');
      const dirKey = slash < 0 ? '' : prefix.slice(0, slash);
      let od: OpenedDir | undefined;
      // A listing is not an awaited call close() can wait for: the root stays open until it ends.
      listings++;
      try {
        const acked = journal ? await journal.unapplied(prefix) : undefined;
        od = await openDir(base, dirKey, prefix, false);
        const files = od ? walk(base, od.dir, prefix.slice(slash + 1)) : undefined;
        yield* acked && acked.size > 0 ? withUnapplied(files, acked) : (files ?? []);
      } catch (err) {
        throw fsError(err, 'checkpoint_storage_unavailable', 'listing', prefix, scrubFor(od ? [od.dir] : []));
      } finally {
        await od?.close();
        listings--;
        if (closed) await closeRoot();
      }
    },

    async close(): Promise<void> {
      closed = true;
      // Operations in flight finish (or fail) first; their housekeeping releases their locks.
      while (inflight.size > 0) await Promise.allSettled([...inflight]);
      const j = journal;
      journal = undefined;
      // Checkpoints on the way out: a cleanly closed store leaves an empty journal.
      if (j) await j.close().catch(() => undefined);
      await closeRoot();
    },
  };
  return storage;
}

/**
 * A listing of the files merged with the journal's acknowledged writes not applied yet: a
 * put not on disk appears in its place (in key order), a replaced key shows its new version,
 * a deleted one is left out.
 */
async function* withUnapplied(files: AsyncIterable<StorageEntry> | undefined, acked: ReadonlyMap<string, AckedState>): AsyncGenerator<StorageEntry> {
  const puts: StorageEntry[] = [];
  for (const [key, state] of acked) if (state.bytes !== null && state.version !== undefined) puts.push({ key, version: state.version, size: state.bytes.length });
  puts.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let i = 0;
  for await (const entry of files ?? []) {
    while (i < puts.length && puts[i]!.key < entry.key) yield puts[i++]!;
    if (i < puts.length && puts[i]!.key === entry.key) {
      yield puts[i++]!;
      continue;
    }
    if (acked.get(entry.key)?.bytes === null) continue;
    yield entry;
  }
  while (i < puts.length) yield puts[i++]!;
}

/** The cause of a failed open, without the absolute directory path. */
function scrubbedOpen(err: unknown, abs: string): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as NodeJS.ErrnoException;
  const copy = Object.assign(new Error(e.message.split(abs).join('<dir>')), { code: e.code, errno: e.errno, syscall: e.syscall });
  return copy;
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
