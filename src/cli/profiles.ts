import type { Profile } from '../profiles/define-profile.js';
import { defaultProfile } from '../profiles/default-profile.js';
import { phasedWorkflow, planExecutor, snapshotLifecycle } from '../profiles/json-profiles.js';
import { CliError } from './io.js';

/** Profiles the CLI's `--profile` accepts, by name. */
const PROFILES: Readonly<Record<string, Profile<unknown>>> = {
  default: defaultProfile as Profile<unknown>,
  snapshotLifecycle: snapshotLifecycle as Profile<unknown>,
  phasedWorkflow: phasedWorkflow as Profile<unknown>,
  planExecutor: planExecutor as Profile<unknown>,
};

export const PROFILE_NAMES: readonly string[] = Object.keys(PROFILES);

/** The profile named `name`; a usage error listing the valid names otherwise. */
export function profileByName(name: string): Profile<unknown> {
  const profile = Object.hasOwn(PROFILES, name) ? PROFILES[name] : undefined;
  if (!profile) throw new CliError(`unknown profile "${name}"; valid: ${PROFILE_NAMES.join(', ')}`);
  return profile;
}
