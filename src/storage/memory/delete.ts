import type { DeleteOptions } from '../../contract/storage.js';
import { assertKey } from '../keys.js';
import { forget } from './cells.js';
import { assertOpen, checkCondition } from './checks.js';
import type { MemoryState } from './state.js';

/** Removes `key` when `opts`' condition holds (the store's `delete`, done at once); false when it was not there. */
export function deleteNow(state: MemoryState, key: string, opts: DeleteOptions): boolean {
  assertOpen(state);
  assertKey(key);
  checkCondition(state, key, opts);
  return forget(state, key);
}
