import { CheckpointError } from '../../contract/errors.js';
import { dirOf, type RepoContext } from './context.js';

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

/**
 * Refuses a key below one this adapter knows is a file (its own write, or a listing of the
 * head): git would replace that file by a directory, and the key above would be lost without
 * a word. Costs no request; a file only another writer knows of is not seen here.
 */
export function assertNoKnownFileAbove(ctx: RepoContext, key: string): void {
  for (let dir = dirOf(ctx.toPath(key)); dir !== ''; dir = dirOf(dir)) {
    const above = ctx.toKey(dir);
    if (above === undefined || above === '') break; // at or above basePath: not a key
    const own = ctx.state.ownWrites(0).get(dir);
    const isFile = own ? own.sha !== null : ctx.state.fileAt(dir)?.type === 'file';
    if (isFile) {
      throw new CheckpointError(
        'checkpoint_unsupported',
        `${key} cannot be stored: ${above} is a file, and git cannot hold a key below a file`,
        {
          details: { key, fileKey: above },
        },
      );
    }
  }
}
