import fs, { type BigIntStats } from 'node:fs';
import type { StoredObject } from '../../contract/storage.js';
import type { RootDir } from './dir.js';

/*
 * Files read lately, kept with the stat they were read under (device, inode, size, mtime and
 * ctime in nanoseconds), so reading one again costs one `lstat` instead of an open, a stat, a
 * read and a close — what reading an old checkpoint again (`getState` of an earlier turn)
 * spends most of its file-system time on. A kept file answers only while its `lstat` is the
 * same in all five: a file replaced by rename (how this store writes) has another inode; one
 * rewritten in place, by any process or tool, has a new ctime (which no call can set back),
 * and its mtime and size usually change too; a deleted one, or one swapped for a link or a
 * directory, fails the check. It is trusted only when its mtime and ctime were older than
 * {@link SETTLED_MS} when it was read ("racy" entries, as git's index calls them): file-system
 * timestamps come from a coarse clock, so a file rewritten within the same tick it was read in
 * could keep every stamp; one settled for that long cannot. The read answers the bytes read
 * then, copied. docs/storage.md ("Reading a file again") says what this trusts.
 */

/** A file must have been unchanged this long before it was read to be kept (a coarse-clock tick is at most ~10 ms; network file systems' clocks drift). */
export const SETTLED_MS = 2000;
/** Files larger than this are not kept. */
const KEPT_MAX_BYTES = 64 * 1024;
/** Bytes kept per store root at most (oldest use dropped first). */
const CACHE_MAX_BYTES = 8 * 1024 * 1024;

interface KeptFile {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly size: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
  readonly bytes: Uint8Array;
  readonly version: string;
}

/** Kept files by key, in use order (oldest first). */
interface ReadCache {
  readonly files: Map<string, KeptFile>;
  bytes: number;
}

const caches = new WeakMap<RootDir, ReadCache>();

function cacheOf(root: RootDir): ReadCache {
  let cache = caches.get(root);
  if (!cache) caches.set(root, (cache = { files: new Map(), bytes: 0 }));
  return cache;
}

function drop(cache: ReadCache, key: string): void {
  const kept = cache.files.get(key);
  if (!kept) return;
  cache.files.delete(key);
  cache.bytes -= kept.bytes.length;
}

const sameFile = (kept: KeptFile, st: BigIntStats): boolean =>
  st.ino === kept.ino &&
  st.ctimeNs === kept.ctimeNs &&
  st.mtimeNs === kept.mtimeNs &&
  st.size === kept.size &&
  st.dev === kept.dev &&
  st.isFile();

/**
 * The kept bytes of `key` (at `path`, the file's name through its directory's descriptor) when
 * its `lstat` now is the one it was read under: a copy, with its version; undefined when it is
 * not kept or changed (then forgotten: the caller reads it).
 */
export function keptRead(root: RootDir, key: string, path: string): StoredObject | undefined {
  const cache = caches.get(root);
  const kept = cache?.files.get(key);
  if (!cache || !kept) return undefined;
  const st = fs.lstatSync(path, { bigint: true, throwIfNoEntry: false });
  if (!st || !sameFile(kept, st)) {
    drop(cache, key);
    return undefined;
  }
  cache.files.delete(key);
  cache.files.set(key, kept);
  return { bytes: kept.bytes.slice(), version: kept.version };
}

/** Keeps what was just read of `key` under `st` (its descriptor's stat, taken before the read), when small and settled. */
export function keepRead(root: RootDir, key: string, st: BigIntStats, read: StoredObject, nowMs: number = Date.now()): void {
  if (read.bytes.length > KEPT_MAX_BYTES || BigInt(read.bytes.length) !== st.size || !settled(st, nowMs)) return;
  const cache = cacheOf(root);
  drop(cache, key);
  cache.files.set(key, {
    dev: st.dev,
    ino: st.ino,
    size: st.size,
    mtimeNs: st.mtimeNs,
    ctimeNs: st.ctimeNs,
    bytes: read.bytes.slice(),
    version: read.version,
  });
  cache.bytes += read.bytes.length;
  for (const [old, file] of cache.files) {
    if (cache.bytes <= CACHE_MAX_BYTES) break;
    cache.files.delete(old);
    cache.bytes -= file.bytes.length;
  }
}

/** A small directory's entries, kept with the stat they were read under (see {@link keptEntries}). */
interface KeptDir {
  readonly dev: bigint;
  readonly ino: bigint;
  readonly mtimeNs: bigint;
  readonly ctimeNs: bigint;
  readonly entries: readonly fs.Dirent[];
}

/** Directories kept per store root at most (oldest use dropped first). */
const DIRS_MAX = 1024;
const dirCaches = new WeakMap<RootDir, Map<string, KeptDir>>();

const settled = (st: BigIntStats, nowMs: number): boolean => {
  const before = BigInt(Math.floor(nowMs - SETTLED_MS)) * 1_000_000n;
  return st.mtimeNs < before && st.ctimeNs < before;
};

/**
 * The entries of directory `rel` read before, when its stat now (`st`, of its open descriptor)
 * is the one they were read under: a directory's mtime and ctime change with every entry made,
 * removed or renamed in it, so a settled directory (see above) with the same stamps holds the
 * same names. Undefined otherwise (the caller reads it).
 */
export function keptEntries(root: RootDir, rel: string, st: BigIntStats): readonly fs.Dirent[] | undefined {
  const dirs = dirCaches.get(root);
  const kept = dirs?.get(rel);
  if (!dirs || !kept) return undefined;
  if (st.ino !== kept.ino || st.mtimeNs !== kept.mtimeNs || st.ctimeNs !== kept.ctimeNs || st.dev !== kept.dev) {
    dirs.delete(rel);
    return undefined;
  }
  dirs.delete(rel);
  dirs.set(rel, kept);
  return kept.entries;
}

/** Keeps the entries just read of directory `rel` under `st` (taken before the read), when it is settled. */
export function keepEntries(root: RootDir, rel: string, st: BigIntStats, entries: readonly fs.Dirent[], nowMs: number = Date.now()): void {
  if (!settled(st, nowMs)) return;
  let dirs = dirCaches.get(root);
  if (!dirs) dirCaches.set(root, (dirs = new Map()));
  dirs.delete(rel);
  dirs.set(rel, { dev: st.dev, ino: st.ino, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, entries });
  if (dirs.size > DIRS_MAX) dirs.delete(dirs.keys().next().value!);
}
