/**
 * Group commit: calls wait in a queue; a group is every call waiting when the previous group's
 * write returned (async writes) or every call of one event-loop turn (sync writes). One durable
 * write a group, at the segment's end; the index changes and the calls are answered only after it.
 *
 * Every group is formed and written holding the store's lock (hold.ts), inside the part of its
 * lease this process trusts, and answered only if its write returned inside it: a holder paused
 * past it is fenced (its calls fail, nothing of them is acknowledged).
 */
import { closeSync, fdatasync, fdatasyncSync, ftruncateSync, write, writeSync } from 'node:fs';
import { CheckpointError } from '../../contract/errors.js';
import { ensureHold, lingerThenLetGo, readyToWrite } from './hold.js';
import { dropSpare, holdsLease, leaseLostError, letGoLock, stopLinger } from './lock.js';
import { planGroup, type PlannedGroup } from './plan.js';
import type { PackedState, PendingCall } from './state.js';

/** Queues `call` and makes sure a group will take it. */
export function enqueue(state: PackedState, call: PendingCall): void {
  state.queue.push(call);
  if (state.writing || state.scheduled) return;
  state.scheduled = true;
  // The next turn, so that the calls made in this one (threads answered by one group) go together.
  setImmediate(() => {
    state.scheduled = false;
    startGroup(state);
  });
}

function startGroup(state: PackedState): void {
  if (state.queue.length === 0) return settleIdle(state);
  if (!readyToWrite(state.lock)) return holdThenStart(state);
  writeGroup(state);
}

/** Takes the lock (and tails what others wrote) before the group is formed; its failure fails every waiting call. */
function holdThenStart(state: PackedState): void {
  state.writing = true;
  ensureHold(state).then(
    () => {
      state.writing = false;
      writeGroup(state);
    },
    (err: unknown) => {
      state.writing = false;
      const queue = state.queue;
      state.queue = [];
      for (const call of queue) call.fail(err);
      next(state);
    },
  );
}

function writeGroup(state: PackedState): void {
  stopLinger(state.lock);
  const queue = state.queue;
  state.queue = [];
  const group = planGroup(state.index, queue, state.end);
  for (const { call, error } of group.refused) call.fail(error);
  if (state.broken) return failGroup(state, group, state.broken);
  const data = group.buffers.length === 1 ? group.buffers[0]! : Buffer.concat(group.buffers, group.bytes);
  const writes = state.options.writes;
  if (writes === 'sync' || (writes === 'adaptive' && group.buffers.length <= 1)) {
    try {
      if (data.length > 0) writeAll(state, data);
    } catch (err) {
      return failGroup(state, group, err);
    }
    return holdsLease(state.lock) ? finishGroup(state, group) : fenceGroup(state, group);
  }
  state.writing = true;
  writeAsync(state, data, (err) => {
    state.writing = false;
    if (err) failGroup(state, group, err);
    else if (!holdsLease(state.lock)) fenceGroup(state, group);
    else finishGroup(state, group);
  });
}

/**
 * The group's write returned after the trusted part of the lease: another process may have
 * broken the lock meanwhile, so nothing of it is acknowledged. Its bytes stay: they are
 * intact records (found by the next tail, ours or another's) unless a breaker sealed the
 * segment before them. The hold is let go; the next group takes the lock and tails again.
 */
function fenceGroup(state: PackedState, group: PlannedGroup): void {
  const error = leaseLostError(state.options.dir);
  for (const { call } of group.placed) call.fail(error);
  state.writing = true;
  void letGoLock(state.lock)
    .catch(() => undefined)
    .then(() => {
      state.writing = false;
      next(state);
    });
}

function writeAll(state: PackedState, data: Buffer): void {
  let done = 0;
  while (done < data.length) done += writeSync(state.fd, data, done, data.length - done, state.end + done);
  if (state.options.sync === 'fdatasync') fdatasyncSync(state.fd);
}

function writeAsync(state: PackedState, data: Buffer, callback: (err: Error | null) => void): void {
  if (data.length === 0) return callback(null);
  const from = (done: number): void =>
    write(state.fd, data, done, data.length - done, state.end + done, (err, written) => {
      if (err) return callback(err);
      if (done + written < data.length) return from(done + written);
      if (state.options.sync === 'fdatasync') fdatasync(state.fd, callback);
      else callback(null);
    });
  from(0);
}

function finishGroup(state: PackedState, group: PlannedGroup): void {
  for (const [key, entry] of group.changes) {
    if (entry) {
      if (!state.index.has(key)) state.order.add(key);
      state.index.set(key, entry);
    } else if (state.index.delete(key)) state.order.remove(key);
  }
  state.end += group.bytes;
  state.stats.writes += group.bytes > 0 ? 1 : 0;
  state.stats.records += group.buffers.length;
  state.stats.bytes += group.bytes;
  for (const { call, outcomes } of group.placed) call.done(outcomes);
  next(state);
}

/**
 * A write that failed may have left part of the group in the file: cut it off, so that no
 * unanswered record is found on reopen. If even that fails, the tail is unknown: the store
 * refuses every later write (a reopen scans the file again).
 */
function failGroup(state: PackedState, group: PlannedGroup, cause: unknown): void {
  // Past the trusted lease another process may own the segment's end: nothing is cut then.
  if (!state.broken && group.bytes > 0 && holdsLease(state.lock)) {
    try {
      ftruncateSync(state.fd, state.end);
      fdatasyncSync(state.fd);
    } catch (err) {
      state.broken = new CheckpointError(
        'checkpoint_atomic_write_failed',
        `packed store ${state.path}: a failed write could not be undone`,
        { cause: err },
      );
    }
  }
  const error =
    cause instanceof CheckpointError
      ? cause
      : new CheckpointError('checkpoint_atomic_write_failed', `packed store ${state.path}: write failed`, { cause });
  for (const { call } of group.placed) call.fail(error);
  next(state);
}

/** The next group one turn later: the calls the answered ones make next (a thread's next put) join it. */
function next(state: PackedState): void {
  if (state.queue.length === 0) return settleIdle(state);
  state.scheduled = true;
  setImmediate(() => {
    state.scheduled = false;
    startGroup(state);
  });
}

const isIdle = (state: PackedState): boolean => !state.writing && !state.scheduled && state.queue.length === 0;

function settleIdle(state: PackedState): void {
  if (!isIdle(state)) return;
  if (!state.closed) lingerThenLetGo(state, () => isIdle(state));
  const waiting = state.idle;
  state.idle = [];
  for (const resolve of waiting) resolve();
}

/** Resolves once every queued call is answered; then closes the file. */
export async function closeWhenIdle(state: PackedState): Promise<void> {
  if (!isIdle(state)) await new Promise<void>((resolve) => state.idle.push(resolve));
  await letGoLock(state.lock, false).catch(() => undefined);
  await dropSpare(state.lock);
  closeSync(state.fd);
}

export type { PendingCall };
