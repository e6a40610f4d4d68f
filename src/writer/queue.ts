import { CheckpointError, toCheckpointError } from '../contract/errors.js';
import { commitGroup } from './commit-group.js';
import { failure, type WriterState } from './state.js';
import { sameMaterial, validateTrigger, type ValidatedTrigger } from './triggers.js';
import type { CheckpointInput, CheckpointResult } from './types.js';

/**
 * The writer's queue: checkpoint calls wait here while a group is in flight, and the next
 * group commit takes them all (one, without group commit). Opens and group commits run
 * one at a time, chained on `state.tail`.
 */

/** Runs `fn` after everything queued before it: one group commit or open at a time, in call order. */
export function exclusive<P, T>(state: WriterState<P>, fn: () => Promise<T>): Promise<T> {
  const run = state.tail.then(fn);
  state.tail = run.catch(() => undefined);
  return run;
}

/** Takes the queued jobs (one, without group commit) and commits them as one group. Never rejects. */
async function commitQueued<P>(state: WriterState<P>): Promise<void> {
  state.scheduled = false;
  const group = state.queue.splice(0, state.config.groupCommit ? state.queue.length : 1);
  if (state.queue.length > 0) schedule(state);
  try {
    if (group.length > 0) await commitGroup(state, group);
  } catch {
    // commitGroup settles every job it took; nothing else can reach a caller.
  }
}

// Chained on `tail` like exclusive(), without its per-call closures: commitQueued never rejects.
function schedule<P>(state: WriterState<P>): void {
  if (state.scheduled) return;
  state.scheduled = true;
  state.tail = state.tail.then(() => commitQueued(state));
}

function enqueue<P>(state: WriterState<P>, trigger: ValidatedTrigger): Promise<CheckpointResult<P>> {
  return new Promise((resolve) => {
    const last = state.queue.at(-1);
    if (last && sameMaterial(last.trigger, trigger) && last.riders.length < state.config.maxQueue)
      last.riders.push({ trigger, resolve, riders: [] });
    else state.queue.push({ trigger, resolve, riders: [] });
    schedule(state);
  });
}

/** A payload value JSON would keep only converted, refused (`nonJson: 'error'`): the path, never the value. */
function nonJsonRefused(path: string): CheckpointError {
  return new CheckpointError(
    'checkpoint_schema_invalid',
    `payload value at ${path} is not JSON (a Date or another object with toJSON) and would come back converted; store it as a string or number, or pass nonJson: 'warn'`,
    { details: { paths: [path], reason: 'non_json_value' } },
  );
}

/** Validates a checkpoint (or a beat) and queues it; refused when the writer is closing or the queue is full. */
export function accept<P>(
  state: WriterState<P>,
  input: CheckpointInput<P>,
  during: 'validate' | 'heartbeat',
): Promise<CheckpointResult<P>> {
  const { runId, profile, clock, maxQueue } = state.config;
  if (state.closing || state.closed) {
    return Promise.resolve(
      failure(
        state,
        new CheckpointError('checkpoint_closed', `writer of run ${runId} is closed`, { details: { runId } }),
        during === 'heartbeat' ? 'heartbeat' : 'validate',
      ),
    );
  }
  let trigger: ValidatedTrigger;
  try {
    trigger = validateTrigger(profile, input, clock.now());
    if (trigger.convertedAt !== undefined) {
      if (state.config.nonJson === 'error') throw nonJsonRefused(trigger.convertedAt);
      state.emitter.emit('converted', { runId, path: trigger.convertedAt });
    }
  } catch (raw) {
    return Promise.resolve(failure(state, toCheckpointError(raw, 'checkpoint_schema_invalid', 'invalid checkpoint'), during));
  }
  const queue = state.queue;
  const last = queue.at(-1);
  const rides = last !== undefined && sameMaterial(last.trigger, trigger) && last.riders.length < maxQueue;
  if (queue.length >= maxQueue && !rides) {
    return Promise.resolve(
      failure(
        state,
        new CheckpointError(
          'checkpoint_backpressure',
          `writer queue of run ${runId} is full (${maxQueue} checkpoints wait behind the one in flight)`,
          {
            details: { runId, queued: queue.length, maxQueue },
          },
        ),
        'queue',
      ),
    );
  }
  state.lastInput = trigger;
  if (trigger.status !== state.config.activeStatus) state.heartbeat.reset(false);
  return enqueue(state, trigger);
}

/** Resolves once nothing is queued or in flight. */
export async function idle<P>(state: WriterState<P>): Promise<void> {
  for (;;) {
    const t = state.tail;
    await t;
    if (t === state.tail && state.queue.length === 0 && !state.scheduled) return;
  }
}
