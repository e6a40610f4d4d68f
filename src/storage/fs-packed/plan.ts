/**
 * Forming a group (pure planning, no I/O besides stamping the records' headers): the waiting calls
 * in order, each one's conditions decided against the durable index plus the calls placed before
 * it in the group, the placed ones' records given their sequences and laid end to end from the
 * active segment's end.
 */
import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { placeRecord, versionOf } from './record.js';
import { footprintOf, type IndexEntry, type PendingCall, type Segment } from './state.js';

/** What the group changes in the index once its write returns: an entry, or null for a key deleted. */
export type IndexChanges = Map<string, IndexEntry | null>;

export interface PlannedGroup {
  /** The records to write, in order, from the segment's end. */
  readonly buffers: Buffer[];
  bytes: number;
  readonly changes: IndexChanges;
  /** The sequence the group after this one starts from, once this one is durable. */
  nextSequence: number;
  /** The calls placed (or only checked), each with its outcomes, answered once the write returns. */
  readonly placed: { readonly call: PendingCall; readonly outcomes: BatchOutcome[] }[];
  /** The calls whose conditions failed: refused at once. */
  readonly refused: { readonly call: PendingCall; readonly error: CheckpointError }[];
}

/** The first condition of `ops` that fails against `current`, as an error. */
function failedCondition(ops: readonly BatchOperation[], current: (key: string) => IndexEntry | undefined): CheckpointError | undefined {
  for (const op of ops as readonly (BatchOperation & { readonly ifAbsent?: boolean })[]) {
    if (!op.ifAbsent && op.ifVersion === undefined) continue;
    const entry = current(op.key);
    if (op.ifAbsent && entry) return conditionFailed(op.key, 'key exists');
    if (op.ifVersion !== undefined && (entry === undefined || versionOf(entry.sequence) !== op.ifVersion))
      return conditionFailed(op.key, entry ? 'version changed' : 'key is gone');
  }
  return undefined;
}

/** Where the group lands: the active segment, its end, and the first sequence free. */
export interface Placement {
  readonly segment: Segment;
  readonly end: number;
  readonly nextSequence: number;
}

/** The group of `queue`, placed at `at`. */
export function planGroup(index: ReadonlyMap<string, IndexEntry>, queue: readonly PendingCall[], at: Placement): PlannedGroup {
  const changes: IndexChanges = new Map();
  const current = (key: string): IndexEntry | undefined => {
    const changed = changes.get(key);
    return changed === undefined ? index.get(key) : (changed ?? undefined);
  };
  const group: PlannedGroup = { buffers: [], bytes: 0, changes, nextSequence: at.nextSequence, placed: [], refused: [] };
  for (const call of queue) {
    const error = failedCondition(call.ops, current);
    if (error) group.refused.push({ call, error });
    else group.placed.push({ call, outcomes: placeCall(group, call, at.segment, at.end + group.bytes, current) });
  }
  return group;
}

/** Places one call's record at `offset`: its sequences taken, its outcomes and index changes made. */
function placeCall(
  group: PlannedGroup,
  call: PendingCall,
  segment: Segment,
  offset: number,
  current: (key: string) => IndexEntry | undefined,
): BatchOutcome[] {
  const record = call.record;
  const first = group.nextSequence;
  const outcomes: BatchOutcome[] = [];
  let op = 0;
  for (const o of call.ops) {
    if (o.type === 'check') {
      outcomes.push({ type: 'check', key: o.key });
      continue;
    }
    const sequence = first + op;
    if (o.type === 'put') {
      const length = record!.valueLength[op]!;
      const entry = { segment, offset: offset + record!.valueAt[op]!, length, sequence, footprint: footprintOf(o.key, length) };
      group.changes.set(o.key, entry);
      outcomes.push({ type: 'put', key: o.key, version: versionOf(sequence) });
    } else {
      outcomes.push({ type: 'delete', key: o.key, existed: current(o.key) !== undefined });
      group.changes.set(o.key, null);
    }
    op++;
  }
  if (record) {
    placeRecord(record, first);
    group.nextSequence += record.sequences;
    group.buffers.push(record.bytes);
    group.bytes += record.bytes.length;
  }
  return outcomes;
}
