import { CheckpointError } from '../../contract/errors.js';

/** Checks a write's conditions: a malformed one is a `checkpoint_config_invalid`, never a TypeError or an unconditional write. */
export function assertConditions(key: string, opts: unknown, what: string): void {
  if (opts === null || typeof opts !== 'object')
    throw new CheckpointError('checkpoint_config_invalid', `${what} options of ${key} must be an object`, { details: { key } });
  const { ifAbsent, ifVersion } = opts as { ifAbsent?: unknown; ifVersion?: unknown };
  if (ifAbsent !== undefined && typeof ifAbsent !== 'boolean')
    throw new CheckpointError('checkpoint_config_invalid', `${what} of ${key}: ifAbsent must be a boolean`, { details: { key } });
  // An empty or unknown version is a well-formed condition that fails (checkpoint_conflict), as on every adapter.
  if (ifVersion !== undefined && typeof ifVersion !== 'string') {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      `${what} of ${key}: ifVersion must be a string (a version the adapter returned)`,
      { details: { key } },
    );
  }
  if (ifAbsent === true && ifVersion !== undefined)
    throw new CheckpointError('checkpoint_config_invalid', `${what} of ${key}: ifAbsent and ifVersion exclude each other`, {
      details: { key },
    });
}

/** Checks a value: bytes, at most `maxValueBytes` of them. */
export function checkSize(maxValueBytes: number, key: string, bytes: Uint8Array): void {
  if (!(bytes instanceof Uint8Array))
    throw new CheckpointError('checkpoint_schema_invalid', `value of ${key} must be a Uint8Array`, { details: { key } });
  if (bytes.length > maxValueBytes) {
    throw new CheckpointError('checkpoint_too_large', `value of ${key} is ${bytes.length} bytes, over the ${maxValueBytes}-byte limit`, {
      details: { key, size: bytes.length, limit: maxValueBytes },
    });
  }
}
