import type { StorageAdapter } from '../contract/storage.js';
import { isBufferedStorage, rateBudgetOf, tellsHeldWrites } from '../contract/buffered-storage.js';

/**
 * A run's terminal checkpoint does not wait for the hold's bounds: when the store holds
 * writes (it has `isPending`) and the budget is low but not exhausted, the held queue is
 * pushed now, so the run's end is on the backend when `checkpoint()` resolves. True when
 * it was pushed; false leaves it held (pushed by the bounds, `flush()` or `close()`).
 */
export async function pushHeldAtRunEnd(storage: StorageAdapter): Promise<boolean> {
  if (!tellsHeldWrites(storage) || !isBufferedStorage(storage)) return false;
  // An exhausted budget would make flush() wait for the reset: the checkpoint stays queued instead.
  if (!((rateBudgetOf(storage)?.remaining ?? 0) > 0)) return false;
  try {
    await storage.flush();
    return true;
  } catch {
    return false;
  }
}
