import fs from 'node:fs';
import { CheckpointError } from '../../model/errors.js';
import { errnoOf } from './io.js';

/** Where a (valid) key lives under the store root. */
export interface KeyPath {
  readonly key: string;
  /** Absolute path of the key's file. */
  readonly path: string;
  /** Absolute path of the directory holding it. */
  readonly dir: string;
  /** That directory relative to the root (`''` for the root itself). */
  readonly dirKey: string;
  /** The key's last segment: the file name. */
  readonly base: string;
}

/**
 * The path of `key` under `root` (a realpath). `key` must already have passed
 * `assertKey`: its segments are never empty, `.` or `..` and hold no backslash, so
 * plain concatenation cannot leave the root.
 */
export function keyPath(root: string, key: string): KeyPath {
  const slash = key.lastIndexOf('/');
  const dirKey = slash < 0 ? '' : key.slice(0, slash);
  return { key, path: `${root}/${key}`, dir: dirKey ? `${root}/${dirKey}` : root, dirKey, base: key.slice(slash + 1) };
}

/** `checkpoint_key_invalid` for a key the file system cannot hold inside the root. */
export function keyRefused(key: string, why: string, reason: string): CheckpointError {
  return new CheckpointError('checkpoint_key_invalid', `storage key ${key} refused: ${why}`, { details: { key, reason } });
}

/** Thrown when a path below the root goes through a symbolic link. */
export function symlinkRefused(key: string): CheckpointError {
  return keyRefused(key, 'its path goes through a symbolic link, which fsStorage never follows', 'symlink');
}

/**
 * Checks that directory `dirKey` (relative to `root`) exists and resolves to itself, i.e.
 * no component below the root is a symbolic link (one pointing outside would let a key
 * escape the root). Returns `false` when it does not exist. Synchronous: a realpath of
 * cached directories takes microseconds, less than a thread-pool round trip.
 */
export function checkDir(root: string, dirKey: string, key: string): boolean {
  if (dirKey === '') return true;
  const expected = `${root}/${dirKey}`;
  let real: string;
  try {
    real = fs.realpathSync.native(expected);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return false;
    if (code === 'ELOOP') throw symlinkRefused(key);
    throw err;
  }
  if (real !== expected) throw symlinkRefused(key);
  return true;
}

/**
 * Makes sure the directory of `kp` exists inside the root, creating missing levels one at
 * a time (never `mkdir -p`, which would follow a planted symlink). Returns the absolute
 * paths of the directories it created, whose parents must be fsynced for durability.
 * Synchronous (see {@link checkDir}); creating directories happens once per directory.
 */
export function ensureDir(root: string, kp: KeyPath): string[] {
  if (checkDir(root, kp.dirKey, kp.key)) return [];
  const created: string[] = [];
  let current = root;
  for (const segment of kp.dirKey.split('/')) {
    current = `${current}/${segment}`;
    try {
      fs.mkdirSync(current);
      created.push(current);
    } catch (err) {
      const code = errnoOf(err);
      if (code === 'ENOTDIR') throw keyRefused(kp.key, 'a parent path is a file (another key)', 'path_occupied');
      if (code !== 'EEXIST') throw err;
      const st = fs.lstatSync(current);
      if (st.isSymbolicLink()) throw symlinkRefused(kp.key);
      if (!st.isDirectory()) throw keyRefused(kp.key, 'a parent path is a file (another key)', 'path_occupied');
    }
  }
  // Someone may have swapped a level for a link while we walked: check the result as a whole.
  if (!checkDir(root, kp.dirKey, kp.key)) throw Object.assign(new Error('directory vanished while being created'), { code: 'ENOENT' });
  return created;
}
