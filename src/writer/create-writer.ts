import type { Profile } from '../contract/profile.js';
import { onBeat } from './beat.js';
import { closeWriter, flushWriter, openRun } from './close.js';
import { accept } from './queue.js';
import { createWriterState } from './state.js';
import type { CheckpointResult, CheckpointWriter, WriterOptions } from './types.js';
import { resolveWriterConfig } from './writer-config.js';
import { assertOptionsArgument } from '../contract/arguments.js';

/**
 * The writer engine: the {@link CheckpointWriter} of one run of `options.profile`. It validates
 * triggers against the profile, coalesces triggers that carry no material change, runs the
 * heartbeat, numbers snapshots (recovering the numbering from storage when the run exists), and
 * stores each group of checkpoints in an order no crash can corrupt. The public `createWriter`
 * (`src/profiles/default-writer.ts`) fills in the default profile when none is given.
 */
export function createWriter<P, T extends string = string, S extends string = string>(
  options: WriterOptions<P, T, S> & { readonly profile: Profile<P, T, S> },
): CheckpointWriter<P, T, S>;
export function createWriter<P>(options: WriterOptions<P> & { readonly profile: Profile<P> }): CheckpointWriter<P> {
  assertOptionsArgument(options, 'createWriter');
  const { profile } = options;
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
