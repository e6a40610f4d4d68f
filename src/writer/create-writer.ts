import type { Profile } from '../contract/profile.js';
import { defaultProfile, type DefaultTrigger, type LifecycleStatus } from '../profiles/default-profile.js';
import type { JsonValue } from '../contract/json.js';
import { onBeat } from './beat.js';
import { closeWriter, flushWriter, openRun } from './close.js';
import { accept } from './queue.js';
import { createWriterState } from './state.js';
import type { CheckpointResult, CheckpointWriter, WriterOptions } from './types.js';
import { resolveWriterConfig } from './writer-config.js';
import { assertOptionsArgument } from '../contract/arguments.js';

/**
 * Creates the {@link CheckpointWriter} of one run: the object an agent runtime calls at
 * every boundary. It validates triggers against the profile, coalesces triggers that
 * carry no material change, runs the heartbeat, numbers snapshots (recovering the
 * numbering from storage when the run exists), and stores each group of checkpoints in
 * an order no crash can corrupt. By default it never throws into the agent.
 *
 * @example
 * ```ts
 * const writer = createWriter({ storage: memoryStorage(), runId: 'run-1' }); // profile: defaultProfile
 * const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
 * if (r.ok) console.log(r.outcome, r.sequence); else console.warn(r.reasonCode);
 * await writer.close();
 * ```
 */
export function createWriter<P = JsonValue>(
  options: WriterOptions<P, DefaultTrigger, LifecycleStatus> & { readonly profile?: undefined },
): CheckpointWriter<P, DefaultTrigger, LifecycleStatus>;
export function createWriter<P, T extends string = string, S extends string = string>(options: WriterOptions<P, T, S> & { readonly profile: Profile<P, T, S> }): CheckpointWriter<P, T, S>;
export function createWriter<P>(options: WriterOptions<P>): CheckpointWriter<P> {
  assertOptionsArgument(options, 'createWriter');
  // No profile: the default one (any JSON state). The payload type is the caller's to name;
  // encoding still refuses anything canonical JSON cannot carry.
  const profile = 'profile' in options && options.profile !== undefined ? options.profile : (defaultProfile as unknown as Profile<P>);
  const state = createWriterState(resolveWriterConfig(options, profile), onBeat);
  const { failMode } = state.config;
  const deliver = (result: CheckpointResult<P>): CheckpointResult<P> => {
    if (!result.ok && failMode === 'throw') throw result.error;
    return result;
  };
  const writer: CheckpointWriter<P> = {
    runId: options.runId,
    profile,
    get lastSequence() {
      return state.lastSequence;
    },
    get closed() {
      return state.closed;
    },
    open: () => openRun(state),
    // Not an async function: in failMode 'result' the queue's own promise is handed back (one
    // promise and one microtask turn less per checkpoint).
    checkpoint(input) {
      let result: Promise<CheckpointResult<P>>;
      try {
        result = accept(state, input, 'validate');
      } catch (err) {
        return Promise.reject(err);
      }
      return failMode === 'throw' ? result.then(deliver) : result;
    },
    flush: () => flushWriter(state),
    close: () => closeWriter(state),
    on: (event, listener) => state.emitter.on(event, listener),
  };
  return writer;
}
