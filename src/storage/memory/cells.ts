import { ownedCopy } from '../handed-over.js';
import type { MemoryState } from './state.js';

/** Values up to this size share slabs of SLAB_BYTES (see storeCopy). */
const SLAB_VALUE_LIMIT = 4096;
const SLAB_BYTES = 65536;

// A stored copy is never changed (a put replaces the cell; get() hands out copies), so the
// puts of one batch that carry the same bytes (a checkpoint's history file and `latest`)
// share one copy instead of each making its own (see batch.ts).
// Small values are copied into views of a shared slab: a Uint8Array of its own is a
// backing store allocated and tracked apart, which cost more than the copy. The views never
// leave the store (get() hands out copies), so no caller can reach a neighbour through `.buffer`.
// A cell names its place in the slab (no view per value: a typed array is an allocation of
// its own, and the store is called between LangGraph's steps, cache-cold).

/** Copies `bytes` (or takes them, when handed over) and stores them under `key`; returns the new version. */
export function storeCopy(state: MemoryState, key: string, bytes: Uint8Array): string {
  const length = bytes.length;
  // A buffer the writer made and handed over (a split checkpoint's parts) is kept as it is: no one changes it.
  if (length > SLAB_VALUE_LIMIT) return store(state, key, ownedCopy(bytes), 0, length);
  if (state.slabAt + length > state.slab.length) {
    state.slab = new Uint8Array(SLAB_BYTES);
    state.slabAt = 0;
  }
  const at = state.slabAt;
  state.slab.set(bytes, at);
  state.slabAt = at + length;
  return store(state, key, state.slab, at, length);
}

/** Stores bytes `at` to `at + length` of `data` (which the store owns) under `key`; returns the new version. */
export function store(state: MemoryState, key: string, data: Uint8Array, at: number, length: number): string {
  const version = String(++state.counter);
  const cells = state.cells;
  // One hash lookup, not two: the map grows only when the key is new.
  const size = cells.size;
  cells.set(key, { data, at, length, version });
  if (cells.size !== size) state.order.add(key);
  return version;
}

/** Removes `key`; false when it was not there. */
export function forget(state: MemoryState, key: string): boolean {
  if (!state.cells.delete(key)) return false;
  state.order.remove(key);
  return true;
}
