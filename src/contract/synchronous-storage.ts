import type { BatchOperation, BatchOutcome, PutOptions, PutResult, StorageAdapter } from './storage.js';

/**
 * A store whose `put` and `batch` do all their work synchronously, and say so: an optional
 * capability any adapter may declare (`memoryStorage` does) by carrying these members.
 *
 * - `putNow` / `batchNow` are `put` / `batch` done at once, returning (or throwing) what the
 *   promise would resolve to (or reject with): same checks, same errors, same effect.
 * - `copiesOnPut: true` declares that `put`, `batch`, `putNow` and `batchNow` copy the bytes
 *   they are given before the call returns, so a caller may reuse its buffer at once (the
 *   LangGraph saver seals each document into one reused buffer). A store that may still read
 *   the bytes later (fs's journal, a network store) must not declare it.
 *
 * Why: the LangGraph saver puts twice a superstep, each time between LangGraph's own steps,
 * where a promise costs more than the store's work (LangGraph's AsyncLocalStorage hooks run
 * for every promise and every await). The write step (writer/write-step.ts) takes this path
 * when a store declares it.
 *
 * A wrapper whose `put` differs from the store it wraps must not carry the inner store's
 * members (it would be bypassed): `memoryStorage` makes them non-enumerable, so an adapter
 * made by spreading it (`{ ...storage, put }`) does not inherit them.
 */
export interface SynchronousStorage extends StorageAdapter {
  readonly copiesOnPut: true;
  putNow(key: string, bytes: Uint8Array, options?: PutOptions): PutResult;
  batchNow(operations: readonly BatchOperation[]): BatchOutcome[];
}

/** True when `store` declares the {@link SynchronousStorage} capability. */
export function isSynchronousStorage(store: StorageAdapter): store is SynchronousStorage {
  const s = store as Partial<SynchronousStorage>;
  return s.copiesOnPut === true && typeof s.putNow === 'function' && typeof s.batchNow === 'function';
}

/** Whether `store` copies a put's bytes before the call returns, so the caller may reuse its buffer at once. */
export function copiesOnPut(store: StorageAdapter): boolean {
  return (store as Partial<SynchronousStorage>).copiesOnPut === true;
}

/**
 * Adds the {@link SynchronousStorage} members to `adapter` as non-enumerable properties (see
 * there why) and returns it: for an adapter whose `put` and `batch` are `putNow` and `batchNow`
 * behind a promise, and which copies its input before each call returns.
 */
export function declareSynchronous(adapter: StorageAdapter, now: Pick<SynchronousStorage, 'putNow' | 'batchNow'>): SynchronousStorage {
  Object.defineProperties(adapter, {
    copiesOnPut: { value: true },
    putNow: { value: now.putNow },
    batchNow: { value: now.batchNow },
  });
  return adapter as SynchronousStorage;
}
