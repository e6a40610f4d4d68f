/**
 * Forming a group (pure planning, no I/O besides stamping the records' headers): the waiting calls
 * in order, each one's conditions decided against the durable index plus the calls placed before
 * it in the group, the placed ones' records given their sequences and laid end to end from the
 * active segment's end.
 */
import { CheckpointError, conditionFailed } from '../../contract/errors.js';
import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { placeRecord, versionOf } from './record.js';
import { footprintOf, type IndexEntry, type LoneWriteTimes, type PendingCall, type Segment } from './state.js';

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

/** How many lone groups go the faster way between two runs of probes the other way. */
export const LONE_PROBE_EVERY = 64;
/** How many lone groups a probe run sends the other way (its first only moves there: not timed). */
export const LONE_PROBE_RUN = 4;
/** The weight of the newest time in a moving average. */
const LONE_TIME_WEIGHT = 0.25;
/** Times below this count as this (a clock's resolution; never 0 in a geometric average). */
const MIN_TIMED_MS = 0.001;
/**
 * Lone writes on the loop averaging longer than this go to the pool whatever the pool takes: a
 * slow disk (a spinning one, a network volume) would stall every other callback of the process
 * for each write. The loop is then timed again only every {@link SLOW_LOOP_PROBE_EVERY} lone groups.
 */
export const LOOP_WRITE_MAX_MS = 2;
export const SLOW_LOOP_PROBE_EVERY = LONE_PROBE_EVERY * 16;

const loopTooSlow = (times: Readonly<LoneWriteTimes>): boolean => times.loopMs !== undefined && times.loopMs > LOOP_WRITE_MAX_MS;

/**
 * Where a lone group's write is made: where lone writes returned sooner lately; every
 * {@link LONE_PROBE_EVERY} lone groups, a run of {@link LONE_PROBE_RUN} the other way (so both stay
 * timed, each after a few writes made there in a row: how long a write takes depends on what the
 * threads did just before); untimed, the loop first, then the pool; never the loop while its writes
 * average over {@link LOOP_WRITE_MAX_MS} but in a probe run. A write on the loop skips the
 * pool's two hand-offs between threads; but under CPU contention a loop woken by the disk may
 * wait for a core longer than the pool's hand-off takes.
 */
export function lonePlace(times: Readonly<LoneWriteTimes>): 'loop' | 'pool' {
  if (times.probe) return times.probe.place;
  if (times.loopMs === undefined) return 'loop';
  if (times.poolMs === undefined || loopTooSlow(times)) return 'pool';
  return times.loopMs <= times.poolMs ? 'loop' : 'pool';
}

const other = (place: 'loop' | 'pool'): 'loop' | 'pool' => (place === 'loop' ? 'pool' : 'loop');

/** A geometric moving average: a write's time has a long tail on a busy disk, and the typical write is what a thread waits for. */
const averaged = (before: number | undefined, ms: number): number =>
  before === undefined ? ms : before * (ms / before) ** LONE_TIME_WEIGHT;

/**
 * Notes that a lone write made at `place` (where {@link lonePlace} sent it) took `ms`. A probe
 * run's times, but its first, replace what the other place had (it is old), so a place that
 * became faster is taken again after its next run.
 */
export function noteLoneWrite(times: LoneWriteTimes, place: 'loop' | 'pool', ms: number): void {
  const time = Math.max(ms, MIN_TIMED_MS);
  const probe = times.probe;
  if (probe) {
    if (probe.left < LONE_PROBE_RUN) probe.logSum += Math.log(time);
    if (--probe.left > 0) return;
    const mean = Math.exp(probe.logSum / (LONE_PROBE_RUN - 1));
    if (place === 'loop') times.loopMs = mean;
    else times.poolMs = mean;
    times.probe = undefined;
    times.sinceProbe = 0;
    return;
  }
  if (place === 'loop') times.loopMs = averaged(times.loopMs, time);
  else times.poolMs = averaged(times.poolMs, time);
  if (times.loopMs === undefined || times.poolMs === undefined) return;
  if (++times.sinceProbe >= (loopTooSlow(times) ? SLOW_LOOP_PROBE_EVERY : LONE_PROBE_EVERY))
    times.probe = { place: other(lonePlace(times)), left: LONE_PROBE_RUN, logSum: 0 };
}
