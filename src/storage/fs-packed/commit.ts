/**
 * Group commit: calls wait in a queue; a group is every call waiting when the previous group's
 * write returned (async writes) or every call of one event-loop turn (sync writes). One durable
 * write a group, at the active segment's end; the index changes and the calls are answered only
 * after it. Between groups, and never during one, the store does its upkeep: recovery after a
 * failed write, rotation, compaction (see ./maintain.ts).
 *
 * Every group, and all upkeep, is done holding the store's lock (hold.ts), inside the part of its
 * lease this process trusts, and a group is answered only if its write returned inside it: a
 * holder paused past it is fenced (its calls fail, nothing of them is acknowledged).
 */
import { CheckpointError } from '../../contract/errors.js';
import { ensureHold, lingerThenLetGo, readyToWrite } from './hold.js';
import { dropSpare, holdsLease, leaseLostError, letGoLock, stopLinger } from './lock.js';
import { closeSegments } from './open.js';
import { maintain, owesZeros } from './maintain.js';
import { lonePlace, noteLoneWrite } from './lone.js';
import { planGroup, type PlannedGroup } from './plan.js';
import { activeSegment, setEntry, type PackedState, type PendingCall } from './state.js';

/** Queues `call` and makes sure a group will take it. */
export function enqueue(state: PackedState, call: PendingCall): void {
  state.queue.push(call);
  if (state.writing || state.scheduled) return;
  schedule(state);
}

// The next turn, so that the calls made in this one (threads answered by one group) go together.
function schedule(state: PackedState): void {
  state.scheduled = true;
  setImmediate(() => {
    state.scheduled = false;
    void startGroup(state);
  });
}

/** Whether the store has upkeep to do before it may append (`maintain` does it). */
const owesUpkeep = (state: PackedState): boolean =>
  state.tailUnknown || state.manifestOwed !== undefined || activeSegment(state).end >= state.options.segmentBytes || owesZeros(state);

/** Takes the lock (and tails what others wrote); the error the waiting calls fail with, if that failed. */
async function holdFailure(state: PackedState): Promise<unknown> {
  state.writing = true;
  try {
    await ensureHold(state);
    return undefined;
  } catch (err) {
    return err;
  } finally {
    state.writing = false;
  }
}

async function startGroup(state: PackedState): Promise<void> {
  if (state.queue.length === 0) return settleIdle(state);
  if (!readyToWrite(state.lock)) {
    const holdFailed = await holdFailure(state);
    if (holdFailed) {
      failQueue(state, writeFailed(state, holdFailed));
      return next(state);
    }
  }
  if (owesUpkeep(state)) {
    state.writing = true;
    const failure = await maintain(state);
    state.writing = false;
    // Nothing may be appended while the tail or the manifest is unknown: the waiting calls fail, typed.
    if (failure) failQueue(state, failure);
    if (failure || state.queue.length === 0) return next(state);
  }
  const queue = state.queue;
  state.queue = [];
  const segment = activeSegment(state);
  const group = planGroup(state.index, queue, { segment, end: segment.end, nextSequence: state.nextSequence });
  for (const { call, error } of group.refused) call.fail(error);
  if (group.bytes === 0) return finishGroup(state, group);
  const data = group.buffers.length === 1 ? group.buffers[0]! : Buffer.concat(group.buffers, group.bytes);
  const place = writePlace(state, queue.length, group.bytes);
  state.loneGroups = queue.length === 1 ? state.loneGroups + 1 : 0;
  const started = place === 'pool-untimed' ? 0 : state.now();
  if (place === 'loop' || place === 'loop-untimed') {
    try {
      writeSync(state, data);
    } catch (err) {
      return failGroup(state, group, err);
    }
    state.stats.loopWrites++;
    if (place === 'loop') noteLoneWrite(state.loneTimes, 'loop', state.now() - started);
    return holdsLease(state.lock) ? finishGroup(state, group) : fenceGroup(state, group);
  }
  state.writing = true;
  try {
    await writeAsync(state, data);
  } catch (err) {
    state.writing = false;
    return failGroup(state, group, err);
  }
  if (place === 'pool') noteLoneWrite(state.loneTimes, 'pool', state.now() - started);
  if (!holdsLease(state.lock)) return fenceGroup(state, group);
  state.writing = false;
  finishGroup(state, group);
}

/**
 * The group's write returned after the trusted part of the lease: another process may have
 * broken the lock meanwhile, so nothing of it is acknowledged. Its bytes stay (nothing is cut
 * past the trusted lease): intact records the next tail finds — ours or another process's —
 * unless a breaker sealed the segment before them. Its sequences are not used again here. The
 * hold is let go; the next group takes the lock and tails again.
 */
async function fenceGroup(state: PackedState, group: PlannedGroup): Promise<void> {
  state.nextSequence = group.nextSequence;
  const error = leaseLostError(state.dir);
  for (const { call } of group.placed) call.fail(error);
  state.writing = true;
  await letGoLock(state.lock).catch(() => undefined);
  state.writing = false;
  next(state);
}

/** The largest lone group written on the event loop: a larger one's write would hold the loop longer than a small sync does. */
export const LONE_WRITE_MAX_BYTES = 64 * 1024;

/**
 * Where a group's write is made: every one on the loop (`writes: 'sync'`) or on the pool
 * (`'async'`), untimed; or, under `adaptive`, a lone call's — the one call made in its turn,
 * after a group that was one call too, and small — where lone writes returned sooner lately
 * (`loop` or `pool`, timed), any other on the pool (untimed), the loop running on meanwhile.
 */
function writePlace(state: PackedState, calls: number, bytes: number): 'loop-untimed' | 'pool-untimed' | 'loop' | 'pool' {
  const { writes } = state.options;
  if (writes !== 'adaptive') return writes === 'sync' ? 'loop-untimed' : 'pool-untimed';
  if (calls !== 1 || state.loneGroups === 0 || bytes > LONE_WRITE_MAX_BYTES) return 'pool-untimed';
  return lonePlace(state.loneTimes);
}

function writeSync(state: PackedState, data: Buffer): void {
  const segment = activeSegment(state);
  state.io.writeAtSync(segment.fd, data, segment.end);
  if (state.options.sync === 'fdatasync') state.io.datasyncSync(segment.fd);
}

async function writeAsync(state: PackedState, data: Buffer): Promise<void> {
  const segment = activeSegment(state);
  await state.io.writeAt(segment.fd, data, segment.end);
  if (state.options.sync === 'fdatasync') await state.io.datasync(segment.fd);
}

function finishGroup(state: PackedState, group: PlannedGroup): void {
  for (const [key, entry] of group.changes) setEntry(state, key, entry);
  const segment = activeSegment(state);
  segment.end += group.bytes;
  if (segment.end > segment.allocated) segment.allocated = segment.end;
  if (group.bytes > 0) segment.maxSequence = group.nextSequence - 1;
  state.nextSequence = group.nextSequence;
  state.stats.writes += group.bytes > 0 ? 1 : 0;
  state.stats.records += group.buffers.length;
  state.stats.bytes += group.bytes;
  for (const { call, outcomes } of group.placed) call.done(outcomes);
  next(state);
}

function writeFailed(state: PackedState, cause: unknown): CheckpointError {
  return cause instanceof CheckpointError
    ? cause
    : new CheckpointError('checkpoint_atomic_write_failed', `packed store ${state.dir}: write failed`, { cause });
}

/**
 * A write that failed may have left part of the group (or all of it) in the file, and after a
 * failed fsync the page cache's state is unknown: nothing is appended again until recovery cut
 * the segment back to its acknowledged end. The group's sequences are never used again.
 */
function failGroup(state: PackedState, group: PlannedGroup, cause: unknown): void {
  state.tailUnknown = true;
  state.nextSequence = group.nextSequence;
  const error = writeFailed(state, cause);
  for (const { call } of group.placed) call.fail(error);
  next(state);
}

function failQueue(state: PackedState, error: CheckpointError): void {
  const queue = state.queue;
  state.queue = [];
  for (const call of queue) call.fail(error);
}

/** The next group one turn later: the calls the answered ones make next (a thread's next put) join it. */
function next(state: PackedState): void {
  if (state.queue.length === 0) return settleIdle(state);
  schedule(state);
}

const isIdle = (state: PackedState): boolean => !state.writing && !state.scheduled && state.queue.length === 0;

function settleIdle(state: PackedState): void {
  if (!isIdle(state)) return;
  if (!state.closed) lingerThenLetGo(state, () => isIdle(state));
  const waiting = state.idle;
  state.idle = [];
  for (const resolve of waiting) resolve();
}

/** Resolves once no group or upkeep is under way or scheduled. */
export async function whenIdle(state: PackedState): Promise<void> {
  if (state.writing || state.scheduled || state.queue.length > 0) await new Promise<void>((resolve) => state.idle.push(resolve));
}

/** Runs `task` in the writer's slot (no group is written meanwhile), then lets queued calls go on. */
export async function exclusively<T>(state: PackedState, task: () => Promise<T>): Promise<T> {
  while (state.writing || state.scheduled) await new Promise<void>((resolve) => state.idle.push(resolve));
  state.writing = true;
  try {
    stopLinger(state.lock);
    if (!readyToWrite(state.lock)) await ensureHold(state);
    return await task();
  } finally {
    state.writing = false;
    next(state);
  }
}

/** Resolves once every queued call is answered and every tail (a read's) is done; then closes the files. */
export async function closeWhenIdle(state: PackedState): Promise<void> {
  await whenIdle(state);
  await letGoLock(state.lock, false).catch(() => undefined);
  await dropSpare(state.lock);
  // A tail may open segments (a reload) and keep the manifest open: closed after it.
  await state.tails.last;
  await closeSegments(state);
}

export type { PendingCall };
