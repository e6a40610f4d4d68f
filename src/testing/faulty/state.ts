import type { ReasonCode } from '../../contract/reason-codes.js';
import type { StorageAdapter } from '../../contract/storage.js';
import type { FaultPlan, OperationRecord } from '../faulty-storage.js';

/** Everything a `faultyStorage` wrapper knows: its plan, and what happened so far. */
export interface FaultState {
  readonly inner: StorageAdapter;
  readonly plan: FaultPlan;
  /** Reason code of injected failures. */
  readonly reasonCode: ReasonCode;
  /** Every counted operation so far, with its outcome. */
  readonly log: OperationRecord[];
  /** Counted operations so far (the index of the next one). */
  counted: number;
  /** True once a `crash` or `crash-after` fault fired: every later call rejects. */
  crashed: boolean;
  /** The wrapper was closed (the inner store stays open). */
  closed: boolean;
}

export function newFaultState(inner: StorageAdapter, plan: FaultPlan): FaultState {
  return {
    inner,
    plan,
    reasonCode: plan.reasonCode ?? 'checkpoint_storage_unavailable',
    log: [],
    counted: 0,
    crashed: false,
    closed: false,
  };
}
