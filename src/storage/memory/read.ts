import { CheckpointError } from '../../contract/errors.js';
import { assertGetOptions, readTooLarge } from '../../contract/read-limit.js';
import type { GetOptions, StorageEntry, StoredObject } from '../../contract/storage.js';
import { assertKey, assertPrefix } from '../keys.js';
import { assertOpen } from './checks.js';
import type { MemoryState } from './state.js';

/** The value under `key`, as a copy the caller may change, or undefined (the store's `get`, done at once). */
export function getNow(state: MemoryState, key: string, options?: GetOptions): StoredObject | undefined {
  assertOpen(state);
  assertKey(key);
  assertGetOptions(options, 'memoryStorage.get');
  const cell = state.cells.get(key);
  if (!cell) return undefined;
  const limit = options?.maxBytes;
  if (limit !== undefined && cell.length > limit) throw readTooLarge(key, cell.length, limit, "the reader's limit (maxBytes)");
  return { bytes: cell.data.slice(cell.at, cell.at + cell.length), version: cell.version };
}

/** The values under `keys`, in their order (the store's `getMany`, done at once). */
export function getManyNow(state: MemoryState, keys: readonly string[], options?: GetOptions): (StoredObject | undefined)[] {
  if (!Array.isArray(keys)) throw new CheckpointError('checkpoint_config_invalid', 'memoryStorage.getMany: keys must be an array');
  return keys.map((key) => getNow(state, key, options));
}

/**
 * The entries whose keys start with `prefix`, in listing order (the store's `list`). Lazy, as
 * any async generator: the checks run at the first `next()`, and a key removed while the caller
 * walks is skipped.
 */
export async function* listEntries(state: MemoryState, prefix: string): AsyncGenerator<StorageEntry> {
  assertOpen(state);
  assertPrefix(prefix);
  for (const key of state.order.withPrefix(prefix)) {
    const cell = state.cells.get(key);
    if (cell) yield { key, version: cell.version, size: cell.length };
  }
}

/** The keys whose names start with `prefix`, in listing order (the store's `listKeys`): {@link listEntries} without versions. */
export async function* listKeyNames(state: MemoryState, prefix: string): AsyncGenerator<string> {
  for await (const entry of listEntries(state, prefix)) yield entry.key;
}
