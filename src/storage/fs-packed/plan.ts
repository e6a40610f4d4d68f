/**
 * Forming a group (pure planning, no I/O): the waiting calls in order, each one's conditions
 * decided against the durable index plus the calls placed before it in the group, the placed
 * ones' records laid end to end from the segment's end.
 */
import { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { versionAt } from './record.js';
import type { IndexEntry, PendingCall } from './state.js';

/** What the group changes in the index once its write returns: an entry, or null for a key deleted. */
export type IndexChanges = Map<string, IndexEntry | null>;

export interface PlannedGroup {
  /** The records to write, in order, from the segment's end. */
  readonly buffers: Buffer[];
  bytes: number;
  readonly changes: IndexChanges;
  /** The calls placed (or only checked), each with its outcomes, answered once the write returns. */
  readonly placed: { readonly call: PendingCall; readonly outcomes: BatchOutcome[] }[];
  /** The calls whose conditions failed: refused at once. */
  readonly refused: { readonly call: PendingCall; readonly error: CheckpointError }[];
}

function conflict(key: string, why: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `conditional write of ${key} failed: ${why}`, { details: { key } });
}

/** The first condition of `ops` that fails against `current`, as an error. */
function failedCondition(ops: readonly BatchOperation[], current: (key: string) => IndexEntry | undefined): CheckpointError | undefined {
  for (const op of ops as readonly (BatchOperation & { readonly ifAbsent?: boolean })[]) {
    if (!op.ifAbsent && op.ifVersion === undefined) continue;
    const entry = current(op.key);
    if (op.ifAbsent && entry) return conflict(op.key, 'key exists');
    if (op.ifVersion !== undefined && entry?.version !== op.ifVersion) return conflict(op.key, entry ? 'version changed' : 'key is gone');
  }
  return undefined;
}

/** The group of `queue`, placed from `end`. */
export function planGroup(index: ReadonlyMap<string, IndexEntry>, queue: readonly PendingCall[], end: number): PlannedGroup {
  const changes: IndexChanges = new Map();
  const current = (key: string): IndexEntry | undefined => {
    const changed = changes.get(key);
    return changed === undefined ? index.get(key) : (changed ?? undefined);
  };
  const group: PlannedGroup = { buffers: [], bytes: 0, changes, placed: [], refused: [] };
  for (const call of queue) {
    const error = failedCondition(call.ops, current);
    if (error) {
      group.refused.push({ call, error });
      continue;
    }
    const at = end + group.bytes;
    const outcomes: BatchOutcome[] = [];
    let op = 0;
    for (const o of call.ops) {
      if (o.type === 'check') outcomes.push({ type: 'check', key: o.key });
      else if (o.type === 'put') {
        const version = versionAt(at, op);
        changes.set(o.key, { offset: at + call.record!.valueAt[op]!, length: call.record!.valueLength[op]!, version });
        outcomes.push({ type: 'put', key: o.key, version });
        op++;
      } else {
        outcomes.push({ type: 'delete', key: o.key, existed: current(o.key) !== undefined });
        changes.set(o.key, null);
        op++;
      }
    }
    if (call.record) {
      group.buffers.push(call.record.bytes);
      group.bytes += call.record.bytes.length;
    }
    group.placed.push({ call, outcomes });
  }
  return group;
}
