import fs, { constants } from 'node:fs';
import type { ListedObject } from '../../contract/linked-read.js';
import type { StorageEntry, StoredObject } from '../../contract/storage.js';
import { makeDir, type Dir, type RootDir } from './dir.js';
import { errnoOf, versionOf } from './io.js';
import { absentOnOpen, assertReadable, READ_FLAGS, symlinkRefused, type KeyPath } from './paths.js';
import { keepEntries, keepRead, keptEntries, keptRead } from './read-cache.js';
import { readTooLarge } from '../../contract/read-limit.js';

/*
 * A small file read without a promise. An asynchronous read of a key walks its directories
 * (one open each), opens, stats, reads and closes its file: about ten trips through libuv's
 * thread pool, each costing far more than the call it carries when the file is in the page
 * cache — the common case of reading back checkpoints just written. Made synchronously, the
 * same calls, in the same order, with the same flags (every component opened with
 * O_NOFOLLOW relative to the descriptor of the one before, see dir.ts), cost a few
 * microseconds each and block the event loop no longer than that. Files larger than
 * {@link READ_NOW_MAX_BYTES} are left to the asynchronous path, which reads them in slices.
 */

/** The largest file read synchronously: larger reads would hold the event loop too long. */
export const READ_NOW_MAX_BYTES = 256 * 1024;

/** Answer of {@link readKeyNow} when the file is too large to read here: read it asynchronously. */
export const READ_LATER = Symbol('read later');

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** Whether `path` is a symbolic link now (only to word an error: the open already refused it). */
function isLinkNow(path: string): boolean {
  try {
    return fs.lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Directories opened by synchronous reads, per store root, kept until the microtask queue is
 * empty (see {@link afterThisRun}), then closed: reads made together (a walk's
 * documents read ahead, a checkpoint's writes listed then read) walk their common
 * directories once. No I/O callback runs before the queue is empty, so nothing of this
 * process changes the tree meanwhile — its own file calls complete, and its journal forgets
 * what it has applied, only in a later turn of the event loop — and a change by another
 * process during that time is concurrent with the reads, as during one walk.
 */
const openedThisRun = new WeakMap<RootDir, Map<string, Dir>>();
/** Directories kept open at most: past it, the kept ones are closed (no read holds one between calls). */
const RUN_MAX_DIRS = 128;

function dirsOfThisRun(root: RootDir): Map<string, Dir> {
  let dirs = openedThisRun.get(root);
  if (dirs && dirs.size >= RUN_MAX_DIRS) {
    closeAllNow(dirs.values());
    dirs.clear();
  }
  if (!dirs) {
    const made = new Map<string, Dir>();
    openedThisRun.set(root, (dirs = made));
    afterThisRun(() => {
      if (openedThisRun.get(root) === made) openedThisRun.delete(root);
      closeAllNow(made.values());
    });
  }
  return dirs;
}

/**
 * Calls `end` once the microtask queue is empty: what reads made together may share
 * (directories opened, the journal lock found free) is forgotten then, still before any I/O
 * callback of this process can run. A tick queued now runs right after the queue drains (Node
 * runs its tick queue between drains of the microtask queue, before returning to the event
 * loop). One tick, not a chain of microtasks counted down: where async hooks are on (LangGraph's
 * AsyncLocalStorage), each queued callback is an async resource made and entered, and a chain of
 * them cost a read more than its file-system calls.
 */
export function afterThisRun(end: () => void): void {
  process.nextTick(end);
}

/**
 * Opens directory `dirKey` below the root, one component at a time, never following a link
 * (openDir's walk with `create: false`), from the deepest of its directories opened in this
 * run (see above): the directory, or undefined when a component is missing or a file. A link
 * refuses the key. `used` receives the directories walked through, to scrub their descriptor
 * paths from an error.
 */
function openDirNow(root: RootDir, dirKey: string, key: string, used: Dir[]): Dir | undefined {
  if (dirKey === '') return root;
  const cache = dirsOfThisRun(root);
  const opened = cache.get(dirKey);
  if (opened) {
    used.push(opened);
    return opened;
  }
  let current: Dir = root;
  let rel = '';
  const segments = dirKey.split('/');
  let from = segments.length - 1; // the whole path was looked up above
  for (; from > 0; from--) {
    const known = cache.get(segments.slice(0, from).join('/'));
    if (known) {
      current = known;
      rel = known.rel;
      used.push(known);
      break;
    }
  }
  for (const segment of segments.slice(from)) {
    rel = rel ? `${rel}/${segment}` : segment;
    const name = current.at(segment);
    let fd: number;
    try {
      fd = fs.openSync(name, DIR_FLAGS);
    } catch (err) {
      const code = errnoOf(err);
      // Linux answers O_DIRECTORY | O_NOFOLLOW on a symbolic link with ENOTDIR, not ELOOP.
      if (code === 'ELOOP' || (code === 'ENOTDIR' && isLinkNow(name))) throw symlinkRefused(key);
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw err;
    }
    current = makeDir(fd, rel, root.containment, root.real);
    cache.set(rel, current);
    used.push(current);
  }
  return current;
}

function closeAllNow(dirs: Iterable<Dir>): void {
  for (const d of dirs) {
    try {
      fs.closeSync(d.fd);
    } catch {
      // Closing a directory we only read: nothing to lose.
    }
  }
}

/** Reads `size` bytes of `fd` from its start (fewer if it shrank meanwhile). */
function readAllNow(fd: number, size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  let offset = 0;
  while (offset < size) {
    const n = fs.readSync(fd, bytes, offset, size - offset, offset);
    if (n === 0) return bytes.slice(0, offset);
    offset += n;
  }
  return bytes;
}

/**
 * The key's file in `dir`, undefined when there is none, or {@link READ_LATER} when it is
 * larger than {@link READ_NOW_MAX_BYTES}; a file read before and unchanged since comes from
 * read-cache.ts (one `lstat`), the limit checked as for a read. `listed`: the file was found by
 * a listing, which leaves out what is not a regular file (a link or a directory swapped in since
 * is then undefined, not refused).
 */
function readFileNow(
  root: RootDir,
  dir: Dir,
  kp: KeyPath,
  limit: number,
  whose: string,
  listed = false,
): StoredObject | undefined | typeof READ_LATER {
  const path = dir.at(kp.base);
  const kept = keptRead(root, kp.key, path);
  if (kept) {
    if (kept.bytes.length > limit) throw readTooLarge(kp.key, kept.bytes.length, limit, whose);
    return kept;
  }
  let fd: number;
  try {
    fd = fs.openSync(path, READ_FLAGS);
  } catch (err) {
    if (listed && absentOrLink(err)) return undefined;
    return absentOnOpen(err, kp.key);
  }
  try {
    const st = fs.fstatSync(fd, { bigint: true });
    if (listed && !st.isFile()) return undefined;
    assertReadable(st, kp.key, limit, whose);
    if (st.size > BigInt(READ_NOW_MAX_BYTES)) return READ_LATER;
    const read = { bytes: readAllNow(fd, Number(st.size)), version: versionOf(st) };
    keepRead(root, kp.key, st, read);
    return read;
  } finally {
    try {
      fs.closeSync(fd);
    } catch {
      // A read-only descriptor: its close cannot lose data.
    }
  }
}

/** An open refused because the name is gone or is a link now: what a listing leaves out. */
function absentOrLink(err: unknown): boolean {
  const code = errnoOf(err);
  return code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'EMLINK';
}

/**
 * The key's file read synchronously (see above): its bytes and version, undefined when there
 * is none, or {@link READ_LATER} when it is too large to read here. Throws what the
 * asynchronous read throws (a link, a directory in the way, a file over `limit`). `opened`
 * receives the directories it opened (closed again when it returns), to scrub their
 * descriptor paths from an error.
 */
export function readKeyNow(
  root: RootDir,
  kp: KeyPath,
  limit: number,
  whose: string,
  opened: Dir[] = [],
): StoredObject | undefined | typeof READ_LATER {
  const dir = openDirNow(root, kp.dirKey, kp.key, opened);
  return dir ? readFileNow(root, dir, kp, limit, whose) : undefined;
}

/** The most entries a directory listed synchronously may hold: a larger one is walked asynchronously. */
export const LIST_NOW_MAX_ENTRIES = 64;

/**
 * The files of directory `dirKey` whose names start with `namePrefix`, in key order, listed
 * synchronously (walk's answer in list.ts, for a directory of files only): undefined when the
 * directory is missing, {@link READ_LATER} when it holds a subdirectory or more than
 * {@link LIST_NOW_MAX_ENTRIES} entries. `isKey` says which names are keys.
 */
export function listFilesNow(
  root: RootDir,
  dirKey: string,
  namePrefix: string,
  prefix: string,
  isKey: (key: string) => boolean,
  opened: Dir[] = [],
): StorageEntry[] | undefined | typeof READ_LATER {
  const dir = openDirNow(root, dirKey, prefix, opened);
  if (!dir) return undefined;
  const names = fileNamesNow(root, dir, namePrefix);
  if (names === undefined || names === READ_LATER) return names;
  const out: StorageEntry[] = [];
  for (const name of names) {
    const st = lstatNow(dir.at(name));
    const key = dir.rel ? `${dir.rel}/${name}` : name;
    if (st?.isFile() && isKey(key)) out.push({ key, version: versionOf(st), size: Number(st.size) });
  }
  return out;
}

/**
 * The keys of the files directly in directory `dirKey`, by name alone (no `stat`), read now:
 * undefined when it is missing, {@link READ_LATER} when it holds a directory, is large, or
 * cannot be opened here (the caller's walk then reads it as it reads the rest).
 */
export function keyNamesNow(root: RootDir, dirKey: string, isKey: (key: string) => boolean): string[] | undefined | typeof READ_LATER {
  let names;
  let dir;
  try {
    dir = openDirNow(root, dirKey, dirKey, []);
    if (!dir) return undefined;
    names = fileNamesNow(root, dir, '');
  } catch {
    return READ_LATER;
  }
  if (names === undefined || names === READ_LATER) return names;
  const keys: string[] = [];
  for (const name of names) {
    const key = `${dir.rel}/${name}`;
    if (isKey(key)) keys.push(key);
  }
  return keys;
}

/**
 * {@link listFilesNow} with each file read: the keys in key order, each with its bytes and
 * version, found and read in one pass (a file kept by read-cache.ts costs one `lstat`, where a
 * listing and then a read took two). A file gone or no longer a regular file between the
 * directory's read and its own is left out, as a listing made then would. {@link READ_LATER}
 * also when a file is too large to read here.
 */
export function readFilesNow(
  root: RootDir,
  dirKey: string,
  namePrefix: string,
  prefix: string,
  isKey: (key: string) => boolean,
  limit: number,
  whose: string,
  opened: Dir[] = [],
): ListedObject[] | undefined | typeof READ_LATER {
  const dir = openDirNow(root, dirKey, prefix, opened);
  if (!dir) return undefined;
  const names = fileNamesNow(root, dir, namePrefix);
  if (names === undefined || names === READ_LATER) return names;
  const out: ListedObject[] = [];
  for (const name of names) {
    const key = dir.rel ? `${dir.rel}/${name}` : name;
    if (!isKey(key)) continue;
    const read = readFileNow(root, dir, { key, dirKey: dir.rel, base: name }, limit, whose, true);
    if (read === READ_LATER) return READ_LATER;
    if (read) out.push({ key, bytes: read.bytes, version: read.version });
  }
  return out;
}

/**
 * The names of the regular files in `dir` starting with `namePrefix`, in code-unit order:
 * undefined when the directory is gone, {@link READ_LATER} when it holds a subdirectory or more
 * than {@link LIST_NOW_MAX_ENTRIES} entries.
 */
function fileNamesNow(root: RootDir, dir: Dir, namePrefix: string): string[] | undefined | typeof READ_LATER {
  const entries = readSmallDirNow(root, dir);
  if (entries === undefined || entries === READ_LATER) return entries;
  const names: string[] = [];
  for (const entry of entries) {
    const name = entry.name;
    if (name.includes('\\') || !name.startsWith(namePrefix)) continue; // internal files, and names no key can have
    if (entry.isDirectory()) return READ_LATER;
    if (entry.isFile()) names.push(name);
  }
  return names.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Directories whose size (`st_size`) is at most this are read whole, in one call: on the usual file
 * systems such a directory holds at most a few thousand entries (ext4: 8 blocks; tmpfs: 20 bytes
 * an entry), so the read costs little even when it holds more than {@link LIST_NOW_MAX_ENTRIES}.
 */
const READ_WHOLE_MAX_DIR_BYTES = 32 * 1024;

/**
 * A directory's entries, undefined when it is missing, {@link READ_LATER} past {@link LIST_NOW_MAX_ENTRIES}.
 * A small one (by its size) is read in one call (`readdirSync`: no `fs.Dir` to make, whose
 * promisified methods cost more than the read); any other is read entry by entry and left
 * unread past the limit.
 */
function readSmallDirNow(root: RootDir, dir: Dir): readonly fs.Dirent[] | undefined | typeof READ_LATER {
  const st = fs.fstatSync(dir.fd, { bigint: true });
  const size = Number(st.size);
  if (size > 0 && size <= READ_WHOLE_MAX_DIR_BYTES) {
    const kept = keptEntries(root, dir.rel, st);
    if (kept) return kept;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir.prefix, { withFileTypes: true });
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
      throw err;
    }
    if (entries.length > LIST_NOW_MAX_ENTRIES) return READ_LATER;
    keepEntries(root, dir.rel, st, entries);
    return entries;
  }
  return readDirBoundedNow(dir);
}

/** {@link readSmallDirNow} entry by entry: the rest unread past {@link LIST_NOW_MAX_ENTRIES}. */
function readDirBoundedNow(dir: Dir): fs.Dirent[] | undefined | typeof READ_LATER {
  let handle: fs.Dir;
  try {
    handle = fs.opendirSync(dir.prefix, { bufferSize: LIST_NOW_MAX_ENTRIES + 1 });
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
  try {
    const entries: fs.Dirent[] = [];
    for (let entry = handle.readSync(); entry !== null; entry = handle.readSync()) {
      if (entries.length === LIST_NOW_MAX_ENTRIES) return READ_LATER;
      entries.push(entry);
    }
    return entries;
  } finally {
    handle.closeSync();
  }
}

const lstatNow = (path: string): fs.BigIntStats | undefined => fs.lstatSync(path, { bigint: true, throwIfNoEntry: false });
