import type { BatchOperation, BatchOptions, BatchOutcome, PutOptions, PutResult, StorageAdapter } from './storage.js';

/**
 * Buffered storage: the extension a store of a rate-limited or slow backend adds to the
 * {@link StorageAdapter} contract. Such a store may accept a write into a local
 * durable-later queue instead of the backend ("pending"), report its request budget,
 * and push what it holds on `flush()` (githubStorage; fsStorage's journal has `flush()`).
 *
 * Every member is optional, so any StorageAdapter is a BufferedStorage that buffers
 * nothing: callers ask each member through the helpers below, never assume it.
 */

/** A put result of a buffered store. */
export type BufferedPutResult = PutResult & {
  /**
   * True when the adapter accepted the write into its local durable-later queue instead
   * of the backend (phased-workflow-github.md `emergency_fallback`: rate limit exhausted).
   * Reads through the same adapter already see it; `flush()` pushes it to the backend.
   */
  readonly pending?: boolean;
};

/** A batch outcome of a buffered store; `pending` on a put: as {@link BufferedPutResult}, the batch was accepted into the local queue, not yet stored by the backend. */
export type BufferedBatchOutcome =
  Exclude<BatchOutcome, { readonly type: 'put' }> | (Extract<BatchOutcome, { readonly type: 'put' }> & { readonly pending?: boolean });

/** A backend's request budget (GitHub's `x-ratelimit-*` headers), for callers that can batch. */
export interface RateBudget {
  /** Requests left in the current window, as last reported by the backend. */
  readonly remaining: number;
  /** Size of the window's budget. */
  readonly limit: number;
  /** When the window resets, in epoch milliseconds. */
  readonly resetAtMs: number;
  /** True below the adapter's low-water mark (spec: 100): writers should batch. */
  readonly low: boolean;
}

/** A {@link StorageAdapter} that may hold writes locally before its backend has them. */
export interface BufferedStorage extends StorageAdapter {
  put(key: string, bytes: Uint8Array, options?: PutOptions): Promise<BufferedPutResult>;
  batch?(operations: readonly BatchOperation[], options?: BatchOptions): Promise<BufferedBatchOutcome[]>;
  /** The backend's request budget, for adapters of rate-limited backends. Writers batch when it is `low`. */
  rateBudget?(): RateBudget;
  /** Pushes writes held in a local queue (see {@link BufferedPutResult.pending}) to the backend. */
  flush?(): Promise<void>;
  /**
   * Resolves once every write acknowledged so far is in the store's own files, where other
   * tools read them: for a store that answers a write when it is durable elsewhere and writes
   * the files after (fsStorage's journal). Never pushes to a remote backend (unlike `flush`).
   */
  applied?(): Promise<void>;
  /**
   * True while a write of `key` is held in the adapter's local queue (see
   * {@link BufferedPutResult.pending}), not yet at the backend. Writers use it to keep growing a
   * batch file that has not left the machine instead of starting a new one.
   */
  isPending?(key: string): boolean;
}

/** True when `storage` can push held writes (`flush()`). */
export function isBufferedStorage(storage: StorageAdapter): storage is BufferedStorage & { flush(): Promise<void> } {
  return typeof (storage as BufferedStorage).flush === 'function';
}

/**
 * True when the store may hold an acknowledged write locally and settle it (and a batch's
 * conditions) later: it pushes held writes (`flush`), and is not one whose acknowledged writes
 * are all durable already and only wait to be applied to its own files (`applied`: fsStorage's
 * journal, whose `flush` is that wait). A batch of a store that holds nothing is answered once
 * settled, so a claim may ride in it.
 */
export function holdsWrites(storage: StorageAdapter): boolean {
  return isBufferedStorage(storage) && typeof (storage as BufferedStorage).applied !== 'function';
}

/** Waits until the store's acknowledged writes are in its own files (see {@link BufferedStorage.applied}); undefined when they always are. */
export function appliedOf(storage: StorageAdapter): Promise<void> | undefined {
  return (storage as BufferedStorage).applied?.();
}

/** The store's request budget, or undefined when it reports none. */
export function rateBudgetOf(storage: StorageAdapter): RateBudget | undefined {
  return (storage as BufferedStorage).rateBudget?.();
}

/** Whether a write of `key` is still held locally: undefined when the store cannot tell (it holds nothing). */
export function isHeldLocally(storage: StorageAdapter, key: string): boolean | undefined {
  return (storage as BufferedStorage).isPending?.(key);
}

/** True when the store tells which writes it holds (`isPending`). */
export function tellsHeldWrites(storage: StorageAdapter): boolean {
  return typeof (storage as BufferedStorage).isPending === 'function';
}

/** True when a put (or a batch's put) was accepted into the store's local queue, not yet the backend's. */
export function isPendingResult(result: PutResult | BatchOutcome): boolean {
  return (result as BufferedPutResult).pending === true;
}
