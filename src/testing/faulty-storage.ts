import { CheckpointError } from '../model/errors.js';
import type { ReasonCode } from '../model/reason-codes.js';
import type { BatchOperation, BatchOutcome, DeleteOptions, PutOptions, PutResult, StorageAdapter, StorageEntry, StoredObject } from '../storage/adapter.js';
import type { BufferedStorage } from '../storage/buffered.js';
import { assertStorageArgument, assertOptionsArgument } from '../model/arguments.js';

/** The operations {@link faultyStorage} counts and can fault. */
export type StorageOperation = 'get' | 'put' | 'delete' | 'list' | 'batch';

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
  const log: OperationRecord[] = [];
  let counted = 0;
  let crashed = false;
  let closed = false;
  const reasonCode = plan.reasonCode ?? 'checkpoint_storage_unavailable';

  const decide = (info: OperationInfo): FaultAction | undefined => {
    const at = plan.at;
    if (at === undefined) return undefined;
    if (typeof at === 'function') return at(info);
    const hit = typeof at === 'number' ? at === info.index : at.includes(info.index);
    return hit ? (plan.action ?? 'fail') : undefined;
  };

  const injected = (info: OperationInfo, action: FaultAction): CheckpointError =>
    new CheckpointError(reasonCode, `injected ${action} at ${info.operation} #${info.index}`, {
      details: { operation: info.operation, index: info.index, injected: true },
    });

  async function run<T>(operation: StorageOperation, keys: readonly string[], call: () => Promise<T>): Promise<T> {
    // The wrapper honours close() itself (the inner store stays open for the "restarted process").
    if (closed) throw new CheckpointError('checkpoint_closed', `faulty(${inner.name}) is closed`);
    const isWrite = operation === 'put' || operation === 'delete' || operation === 'batch';
    const counts = plan.count !== 'writes' || isWrite;
    const info: OperationInfo = { index: counts ? counted : -1, operation, keys };
    if (counts) counted++;
    if (crashed) {
      if (counts) log.push({ ...info, outcome: 'rejected' });
      throw new CheckpointError(reasonCode, `storage crashed before ${operation}`, { details: { operation, crashed: true } });
    }
    const action = counts ? decide(info) : undefined;
    if (action === 'fail' || action === 'crash') {
      if (action === 'crash') crashed = true;
      log.push({ ...info, outcome: action });
      throw injected(info, action);
    }
    let result: T;
    try {
      result = await call();
    } catch (err) {
      if (counts) log.push({ ...info, outcome: 'rejected' });
      throw err;
    }
    if (action === 'fail-after' || action === 'crash-after') {
      if (action === 'crash-after') crashed = true;
      log.push({ ...info, outcome: action });
      throw injected(info, action);
    }
    if (counts) log.push({ ...info, outcome: 'ok' });
    return result;
  }

  const adapter: FaultyStorage = {
    name: `faulty(${inner.name})`,
    capabilities: inner.capabilities,
    get log() {
      return log;
    },
    get crashed() {
      return crashed;
    },
    get count() {
      return counted;
    },
    get: (key: string): Promise<StoredObject | undefined> => run('get', [key], () => inner.get(key)),
    put: (key: string, bytes: Uint8Array, options?: PutOptions): Promise<PutResult> => run('put', [key], () => inner.put(key, bytes, options)),
    delete: (key: string, options?: DeleteOptions): Promise<boolean> => run('delete', [key], () => inner.delete(key, options)),
    list(prefix: string): AsyncIterable<StorageEntry> {
      return {
        [Symbol.asyncIterator]: () => {
          let iterator: AsyncIterator<StorageEntry> | undefined;
          return {
            async next(): Promise<IteratorResult<StorageEntry>> {
              if (!iterator) {
                // The whole listing counts as one operation, faulted before the first entry.
                iterator = await run('list', [prefix], async () => inner.list(prefix)[Symbol.asyncIterator]());
              }
              if (crashed) throw new CheckpointError(reasonCode, 'storage crashed during list', { details: { operation: 'list', crashed: true } });
              return iterator.next();
            },
          };
        },
      };
    },
    async close(): Promise<void> {
      // Closing a wrapper must not close the inner store: tests reopen it as a "new process".
      closed = true;
    },
  };
  // Optional capabilities pass straight through: they describe the backend, not an operation to fault.
  const buffered: BufferedStorage = inner;
  if (buffered.rateBudget) adapter.rateBudget = buffered.rateBudget.bind(inner);
  if (buffered.flush) {
    const flush = buffered.flush.bind(inner);
    adapter.flush = () => run('put', [], flush);
  }
  if (inner.batch) {
    const batch = inner.batch.bind(inner);
    adapter.batch = (operations: readonly BatchOperation[]): Promise<BatchOutcome[]> =>
      run(
        'batch',
        operations.map((op) => op.key),
        () => batch(operations),
      );
  }
  return adapter;
}
