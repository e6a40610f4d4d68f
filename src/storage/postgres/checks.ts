import { CheckpointError } from '../../contract/errors.js';

// What a write is checked against before it reaches the server.

const MAX_BIGINT = 9223372036854775807n;
/** A version this store could have issued (a positive bigint in canonical form), or undefined: then no stored row can have it. */
export function versionParam(version: string): string | undefined {
  if (!/^[1-9][0-9]{0,18}$/.test(version) || BigInt(version) > MAX_BIGINT) return undefined;
  return version;
}

/** Refuses a value that is not bytes, or larger than `maxValueBytes`. */
export function checkSize(maxValueBytes: number, key: string, bytes: unknown): void {
  if (!(bytes instanceof Uint8Array))
    throw new CheckpointError('checkpoint_config_invalid', `value of ${key} must be a Uint8Array`, { details: { key } });
  if (bytes.length > maxValueBytes) {
    throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${maxValueBytes}-byte limit`, {
      details: { key, size: bytes.length, limit: maxValueBytes },
    });
  }
}
