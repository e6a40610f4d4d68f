import { CheckpointError } from '../../contract/errors.js';

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
