import type { StorageEntry } from '../../contract/storage.js';
import type { GitHubStorage } from './github-storage.js';
import { surfaceError, type Scrubber } from './secrets.js';

/**
 * Every public call of the adapter, with whatever it throws passed through
 * {@link surfaceError}: one place, so no path (a new code path, a throwing `fetch`, a
 * spill failure) can hand a caller an unscrubbed error or a raw TypeError.
 */
export function guardErrors(adapter: GitHubStorage, scrubber: Scrubber): GitHubStorage {
  const guard =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      try {
        return await fn(...args);
      } catch (err) {
        throw surfaceError(err, scrubber);
      }
    };
  return {
    ...adapter,
    get: guard(adapter.get),
    put: guard(adapter.put),
    delete: guard(adapter.delete),
    batch: guard(adapter.batch),
    flush: guard(adapter.flush),
    discardPendingWrite: guard(adapter.discardPendingWrite),
    close: guard(adapter.close),
    async *list(prefix: string): AsyncIterable<StorageEntry> {
      try {
        yield* adapter.list(prefix);
      } catch (err) {
        throw surfaceError(err, scrubber);
      }
    },
  };
}
