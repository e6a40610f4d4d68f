import type { SortedKeys } from '../sorted-keys.js';
import { sortedKeys } from '../sorted-keys.js';

/** Options of {@link memoryStorage}. */
export interface MemoryStorageOptions {
  /**
   * Largest value accepted, in bytes; larger puts fail with `checkpoint_too_large`.
   * @default undefined (no limit)
   */
  maxValueBytes?: number;
}

/** A stored value: bytes `at` to `at + length` of `data` (a shared slab, or a buffer of its own), and its version. */
export interface Cell {
  readonly data: Uint8Array;
  readonly at: number;
  readonly length: number;
  readonly version: string;
}

/**
 * Everything one memory store holds. A slab is a shared buffer that small values are copied
 * into side by side (see cells.ts for why).
 */
export interface MemoryState {
  /** The options the store was made with; `maxValueBytes` is read from them at each put. */
  readonly options: MemoryStorageOptions;
  /** The stored values by key. */
  readonly cells: Map<string, Cell>;
  /** The keys of `cells` in listing order, kept as keys come and go: a prefix is listed without scanning the whole store. */
  readonly order: SortedKeys;
  /** The last version handed out; each store of a value takes the next one. */
  counter: number;
  /** Set by close(): every later call fails with `checkpoint_closed`. */
  closed: boolean;
  /** The slab small values are being copied into. */
  slab: Uint8Array;
  /** Where the next small value goes in `slab`. */
  slabAt: number;
}

/** An empty, open store over already checked `options`. */
export function createMemoryState(options: MemoryStorageOptions): MemoryState {
  return { options, cells: new Map<string, Cell>(), order: sortedKeys(), counter: 0, closed: false, slab: new Uint8Array(0), slabAt: 0 };
}
