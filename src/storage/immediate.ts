import type { BatchOperation, BatchOutcome, PutOptions, PutResult } from './adapter.js';

/**
 * A store's `put` and `batch` done at once, returning (or throwing) what its promise would
 * resolve to (or reject with): same checks, same errors, same effect. Only a store whose work
 * is all synchronous has one (`memoryStorage`). Internal, as `markCopiesOnPut`: not exported
 * to users, and a wrapper around such a store has none.
 *
 * Why: the LangGraph saver puts twice a superstep, each time between LangGraph's own steps,
 * where a promise costs more than the store's work (LangGraph's AsyncLocalStorage hooks run
 * for every promise and every await: issue 17).
 */
export interface ImmediateStore {
  put(key: string, bytes: Uint8Array, options?: PutOptions): PutResult;
  batch(operations: readonly BatchOperation[]): BatchOutcome[];
}

const immediateStores = new WeakMap<object, ImmediateStore>();

/** Records `now` as `store`'s immediate form (see {@link ImmediateStore}) and returns `store`. */
export function markImmediate<T extends object>(store: T, now: ImmediateStore): T {
  immediateStores.set(store, now);
  return store;
}

/** `store`'s immediate form, when it has one. */
export function immediateOf(store: object): ImmediateStore | undefined {
  return immediateStores.get(store);
}
