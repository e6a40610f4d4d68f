import { drain } from './queue-push.js';
import { assertOpen, type GitHubStoreState } from './store-state.js';

/** `flush()`: pushes the whole queue, waiting out rate limits however long they last. */
export async function flushQueue(store: GitHubStoreState): Promise<void> {
  assertOpen(store);
  await store.lock(() => drain(store, true));
}

/** `close()`: pushes the queue, stops the background push, then releases the queue's spill. */
export async function closeStore(store: GitHubStoreState): Promise<void> {
  if (store.closed) return;
  await store.lock(() => drain(store, true));
  if (store.flushTimer !== undefined) store.clock.clearTimeout(store.flushTimer);
  store.flushTimer = undefined;
  store.closed = true;
  await store.queue.close();
}
