import type { ReasonCode } from '../contract/reason-codes.js';
import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  GetOptions,
  PutOptions,
  PutResult,
  StorageAdapter,
  StorageEntry,
  StoredObject,
} from '../contract/storage.js';
import type { BufferedStorage } from '../contract/buffered-storage.js';
import { assertStorageArgument, assertOptionsArgument } from '../contract/arguments.js';
import { faultyList } from './faulty/list.js';
import { runOperation } from './faulty/run.js';
import { moveOf, type MovableStorage } from '../contract/move.js';
import { declareReadersOf, getManyOf, type MultiGetStorage, type StorageCapabilities } from '../contract/storage.js';
import { newFaultState, type FaultState } from './faulty/state.js';

/** The operations {@link faultyStorage} counts and can fault. */
export type StorageOperation = 'get' | 'put' | 'delete' | 'list' | 'batch' | 'move';

/**
 * What happens at a faulted operation:
 * - `fail`: the call rejects and the inner store is not touched.
 * - `fail-after`: the inner call completes, then the call rejects — the ambiguous
 *   "timed out but landed" case a caller must survive.
 * - `crash`: like `fail`, and every later call rejects too, as if the process died
 *   just before the call. Tests then reopen the *inner* store, like a restarted process.
 * - `crash-after`: the inner call completes, then the store is dead.
 */
export type FaultAction = 'fail' | 'fail-after' | 'crash' | 'crash-after';

/** Describes one operation as the fault plan sees it. */
export interface OperationInfo {
  /** 0-based index among counted operations. */
  readonly index: number;
  readonly operation: StorageOperation;
  /** Keys the operation touches (the prefix, for `list`). */
  readonly keys: readonly string[];
}

/** When and how {@link faultyStorage} injects faults. */
export interface FaultPlan {
  /**
   * Which counted operations fault: an index, a list of indexes, or a predicate that
   * returns the action to take (or `undefined` to let the operation through).
   */
  readonly at?: number | readonly number[] | ((op: OperationInfo) => FaultAction | undefined);
  /** @default 'fail' */
  readonly action?: FaultAction;
  /**
   * Which operations are counted: all of them, or only writes (`put`, `delete`, `batch`).
   * @default 'all'
   */
  readonly count?: 'all' | 'writes';
  /** Reason code of injected failures. @default 'checkpoint_storage_unavailable' */
  readonly reasonCode?: ReasonCode;
}

/** One operation as {@link FaultyStorage.log} records it. */
export interface OperationRecord extends OperationInfo {
  /** `ok`, the fault injected, or `rejected` (crashed store, or the inner store itself threw). */
  readonly outcome: 'ok' | FaultAction | 'rejected';
}

/** A {@link StorageAdapter} wrapper that fails or "crashes" on schedule (buffering members of the inner store pass through). */
export interface FaultyStorage extends BufferedStorage {
  /** Every counted operation so far, with its outcome. */
  readonly log: readonly OperationRecord[];
  /** True once a `crash` or `crash-after` fault fired. */
  readonly crashed: boolean;
  /** Counted operations so far. */
  readonly count: number;
}

/**
 * Wraps `inner` so that the N-th operation fails or crashes, for testing what a crash or
 * a failed storage call at any point does to the code above (invariants 1 and 2 of
 * DESIGN.md). Capabilities are the inner adapter's.
 *
 * @example
 * ```ts
 * const inner = memoryStorage();
 * for (let n = 0; ; n++) {
 *   const storage = faultyStorage(inner, { at: n, action: 'crash', count: 'writes' });
 *   // ... run the code under test on `storage`, then check `inner` ...
 * }
 * ```
 */
export function faultyStorage(inner: StorageAdapter, plan: FaultPlan = {}): FaultyStorage {
  assertStorageArgument(inner, 'faultyStorage', 'inner');
  assertOptionsArgument(plan, 'faultyStorage');
  const state = newFaultState(inner, plan);
  const adapter: FaultyStorage = {
    name: `faulty(${inner.name})`,
    capabilities: inner.capabilities,
    get log() {
      return state.log;
    },
    get crashed() {
      return state.crashed;
    },
    get count() {
      return state.counted;
    },
    get: (key: string, options?: GetOptions): Promise<StoredObject | undefined> =>
      runOperation(state, 'get', [key], () => inner.get(key, options)),
    put: (key: string, bytes: Uint8Array, options?: PutOptions): Promise<PutResult> =>
      runOperation(state, 'put', [key], () => inner.put(key, bytes, options)),
    delete: (key: string, options?: DeleteOptions): Promise<boolean> =>
      runOperation(state, 'delete', [key], () => inner.delete(key, options)),
    list: (prefix: string): AsyncIterable<StorageEntry> => faultyList(state, prefix),
    async close(): Promise<void> {
      // Closing a wrapper must not close the inner store: tests reopen it as a "new process".
      state.closed = true;
    },
  };
  passOptionalMembers(state, adapter);
  adapter.declareReaders = (readers) => {
    declareReadersOf(inner, readers);
    // The inner store may have fixed how it holds values (fsStorage without a layout): its capabilities and members now.
    (adapter as { capabilities: StorageCapabilities }).capabilities = inner.capabilities;
    passOptionalMembers(state, adapter);
  };
  return adapter;
}

/** Optional capabilities pass straight through: they describe the backend, not an operation to fault. */
function passOptionalMembers(state: FaultState, adapter: FaultyStorage): void {
  const inner = state.inner;
  const buffered: BufferedStorage = inner;
  if (buffered.rateBudget) adapter.rateBudget = buffered.rateBudget.bind(inner);
  if (buffered.flush) {
    const flush = buffered.flush.bind(inner);
    adapter.flush = () => runOperation(state, 'put', [], flush);
  }
  const move = moveOf(inner);
  if (move)
    (adapter as FaultyStorage & Partial<MovableStorage>).move = (from, to) => runOperation(state, 'move', [from, to], () => move(from, to));
  const getMany = getManyOf(inner);
  if (getMany)
    (adapter as FaultyStorage & Partial<MultiGetStorage>).getMany = (keys, options) =>
      runOperation(state, 'get', [...keys], () => getMany(keys, options));
  if (inner.batch) {
    const batch = inner.batch.bind(inner);
    adapter.batch = (operations: readonly BatchOperation[]): Promise<BatchOutcome[]> =>
      runOperation(
        state,
        'batch',
        operations.map((op) => op.key),
        () => batch(operations),
      );
  }
}
