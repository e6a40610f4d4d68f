import { CheckpointError } from '../../contract/errors.js';
import type { FaultAction, OperationInfo, StorageOperation } from '../faulty-storage.js';
import type { FaultState } from './state.js';

/** The fault the plan gives a counted operation, if any. */
function decideFault(state: FaultState, info: OperationInfo): FaultAction | undefined {
  const at = state.plan.at;
  if (at === undefined) return undefined;
  if (typeof at === 'function') return at(info);
  const hit = typeof at === 'number' ? at === info.index : at.includes(info.index);
  return hit ? (state.plan.action ?? 'fail') : undefined;
}

function injectedFault(state: FaultState, info: OperationInfo, action: FaultAction): CheckpointError {
  return new CheckpointError(state.reasonCode, `injected ${action} at ${info.operation} #${info.index}`, {
    details: { operation: info.operation, index: info.index, injected: true },
  });
}

/** Runs one operation through the fault plan: counts and logs it, and faults it before or after `call` when the plan says so. */
export async function runOperation<T>(
  state: FaultState,
  operation: StorageOperation,
  keys: readonly string[],
  call: () => Promise<T>,
): Promise<T> {
  // The wrapper honours close() itself (the inner store stays open for the "restarted process").
  if (state.closed) throw new CheckpointError('checkpoint_closed', `faulty(${state.inner.name}) is closed`);
  const isWrite = operation === 'put' || operation === 'delete' || operation === 'batch' || operation === 'move';
  const counts = state.plan.count !== 'writes' || isWrite;
  const info: OperationInfo = { index: counts ? state.counted : -1, operation, keys };
  if (counts) state.counted++;
  if (state.crashed) {
    if (counts) state.log.push({ ...info, outcome: 'rejected' });
    throw new CheckpointError(state.reasonCode, `storage crashed before ${operation}`, { details: { operation, crashed: true } });
  }
  const action = counts ? decideFault(state, info) : undefined;
  if (action === 'fail' || action === 'crash') {
    if (action === 'crash') state.crashed = true;
    state.log.push({ ...info, outcome: action });
    throw injectedFault(state, info, action);
  }
  let result: T;
  try {
    result = await call();
  } catch (err) {
    if (counts) state.log.push({ ...info, outcome: 'rejected' });
    throw err;
  }
  if (action === 'fail-after' || action === 'crash-after') {
    if (action === 'crash-after') state.crashed = true;
    state.log.push({ ...info, outcome: action });
    throw injectedFault(state, info, action);
  }
  if (counts) state.log.push({ ...info, outcome: 'ok' });
  return result;
}
