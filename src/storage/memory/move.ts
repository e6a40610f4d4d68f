import { assertMoveArguments, moveTargetExists } from '../../contract/move.js';
import { assertKey } from '../keys.js';
import { forget, store } from './cells.js';
import { assertOpen } from './checks.js';
import type { MemoryState } from './state.js';

/** `move`, done at once: the cell of `from` stored under `to` (no copy: stored bytes are never changed), then `from` forgotten. */
export function moveNow(state: MemoryState, from: string, to: string): boolean {
  assertOpen(state);
  assertMoveArguments(from, to, 'memoryStorage.move');
  assertKey(from);
  assertKey(to);
  const cell = state.cells.get(from);
  if (state.cells.has(to)) throw moveTargetExists(to);
  if (!cell) return false;
  store(state, to, cell.data, cell.at, cell.length);
  forget(state, from);
  return true;
}
