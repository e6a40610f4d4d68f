import type { JsonPayload } from '../contract/json.js';
import type { Profile } from '../contract/profile.js';
import { assertOptionsArgument } from '../contract/arguments.js';
import { createWriter as createProfileWriter } from '../writer/create-writer.js';
import type { CheckpointWriter, WriterOptions } from '../writer/types.js';
import { defaultProfile, type DefaultTrigger, type LifecycleStatus } from './default-profile.js';

/**
 * Creates the {@link CheckpointWriter} of one run: the object an agent runtime calls at
 * every boundary. It validates triggers against the profile, coalesces triggers that
 * carry no material change, runs the heartbeat, numbers snapshots (recovering the
 * numbering from storage when the run exists), and stores each group of checkpoints in
 * an order no crash can corrupt. By default it never throws into the agent.
 *
 * Without a `profile` it writes with {@link defaultProfile} (any JSON state). The writer
 * engine itself always takes a profile: this front is where the default is chosen, so the
 * engine knows no profile by name.
 *
 * @example
 * ```ts
 * const writer = createWriter({ storage: memoryStorage(), runId: 'run-1' }); // profile: defaultProfile
 * const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
 * if (r.ok) console.log(r.outcome, r.sequence); else console.warn(r.reasonCode);
 * await writer.close();
 * ```
 */
export function createWriter<P = JsonPayload>(
  options: WriterOptions<P, DefaultTrigger, LifecycleStatus> & { readonly profile?: undefined },
): CheckpointWriter<P, DefaultTrigger, LifecycleStatus>;
export function createWriter<P, T extends string = string, S extends string = string>(
  options: WriterOptions<P, T, S> & { readonly profile: Profile<P, T, S> },
): CheckpointWriter<P, T, S>;
export function createWriter<P>(options: WriterOptions<P>): CheckpointWriter<P> {
  assertOptionsArgument(options, 'createWriter');
  // No profile: the default one (any JSON state). The payload type is the caller's to name;
  // encoding still refuses anything canonical JSON cannot carry.
  if ('profile' in options && options.profile !== undefined)
    return createProfileWriter(options as WriterOptions<P> & { readonly profile: Profile<P> });
  return createProfileWriter({ ...options, profile: defaultProfile as unknown as Profile<P> });
}
