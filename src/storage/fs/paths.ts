import { constants, type BigIntStats } from 'node:fs';
import { CheckpointError } from '../../contract/errors.js';
import { readTooLarge } from '../../contract/read-limit.js';
import { errnoOf } from './io.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
/** How a key's file is opened for reading: never through a symbolic link; O_NONBLOCK keeps a planted FIFO from hanging a read. */
export const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** Where a (valid) key lives below the store root. */
export interface KeyPath {
  readonly key: string;
  /** The directory holding it, relative to the root (`''` for the root itself). */
  readonly dirKey: string;
  /** The key's last segment: the file name. */
  readonly base: string;
}

/**
 * Splits `key` into its directory and file name. `key` must already have passed
 * `assertKey`: its segments are never empty, `.` or `..` and hold no backslash, so
 * walking them one by one from the root cannot leave it.
 */
export function keyPath(key: string): KeyPath {
  const slash = key.lastIndexOf('/');
  return { key, dirKey: slash < 0 ? '' : key.slice(0, slash), base: key.slice(slash + 1) };
}

/** `checkpoint_key_invalid` for a key the file system cannot hold inside the root. */
export function keyRefused(key: string, why: string, reason: string): CheckpointError {
  return new CheckpointError('checkpoint_key_invalid', `storage key ${key} refused: ${why}`, { details: { key, reason } });
}

/** Thrown when a path below the root goes through a symbolic link. */
export function symlinkRefused(key: string): CheckpointError {
  return keyRefused(key, 'its path goes through a symbolic link, which fsStorage never follows', 'symlink');
}

/** Thrown when a key's path holds a directory or a special file instead of a regular file. */
export function occupiedRefused(key: string): CheckpointError {
  return keyRefused(
    key,
    'a directory or special file is in the way (keys "a" and "a/b" cannot both exist in a file system)',
    'path_occupied',
  );
}

/**
 * What a failed open of a key's file for reading means: no file (undefined), a symbolic link
 * in its place (refused), or a failure that is thrown as it is.
 */
export function absentOnOpen(err: unknown, key: string): undefined {
  const code = errnoOf(err);
  if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
  if (code === 'ELOOP' || code === 'EMLINK') throw symlinkRefused(key);
  throw err;
}

/**
 * Checks an opened key file before it is read: a directory or FIFO where the file should be is
 * refused (a reader must not take it for "no snapshot"), and a file over `limit` is refused from
 * its size, unread.
 */
export function assertReadable(st: BigIntStats, key: string, limit: number, whose: string): void {
  if (!st.isFile()) throw occupiedRefused(key);
  if (st.size > BigInt(limit)) throw readTooLarge(key, Number(st.size), limit, whose);
}
