import { assertBytesArgument } from '../../contract/arguments.js';
import type { PutOptions, PutResult } from '../../contract/storage.js';
import { assertKey } from '../keys.js';
import { storeCopy } from './cells.js';
import { checkCondition, checkSize, closedError } from './checks.js';
import type { MemoryState } from './state.js';

/** `put`, done at once: checks, copies `bytes` and stores them under `key` (the store's `putNow`). */
export function putNow(state: MemoryState, key: string, bytes: Uint8Array, opts: PutOptions = {}): PutResult {
  // The closed check inline, not a call: this runs cold, between LangGraph's steps, where each call costs.
  if (state.closed) throw closedError();
  assertKey(key);
  // A string would be stored as-is and come back as a string: refuse it, as batch() does.
  assertBytesArgument(bytes, 'memoryStorage.put');
  checkSize(state, key, bytes);
  checkCondition(state, key, opts);
  return { version: storeCopy(state, key, bytes) };
}
