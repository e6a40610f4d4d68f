import type { Profile } from '../profiles/define-profile.js';
import { defaultProfile } from '../profiles/default-profile.js';
import { phasedWorkflow } from '../profiles/phased-workflow/profile.js';
import { planExecutor } from '../profiles/plan-executor/profile.js';
import { snapshotLifecycle } from '../profiles/snapshot-lifecycle/profile.js';
import { CliError } from './io.js';

/**
 * Profiles the CLI's `--profile` accepts, by name. The two document profiles live in
 * their own subpaths (handoffMarkdown needs the optional `yaml` peer), so they are
 * loaded only when named.
 */
const PROFILES: Readonly<Record<string, () => Promise<Profile<unknown>>>> = {
  default: async () => defaultProfile as Profile<unknown>,
  snapshotLifecycle: async () => snapshotLifecycle as Profile<unknown>,
  phasedWorkflow: async () => phasedWorkflow as Profile<unknown>,
  planExecutor: async () => planExecutor as Profile<unknown>,
  handoffMarkdown: async () => {
    try {
      return (await import('../profiles/handoff-markdown/index.js')).handoffMarkdown as Profile<unknown>;
    } catch (err) {
      if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') throw new CliError('--profile handoffMarkdown needs the "yaml" package: npm install yaml');
      throw err;
    }
  },
  progressProtocol: async () => (await import('../profiles/progress-protocol/index.js')).progressProtocol as Profile<unknown>,
  // Stores written by SavepointSaver (savepoint/langgraph); reading them needs no LangGraph package.
  langgraph: async () => (await import('../langgraph/profile.js')).langGraphProfile as Profile<unknown>,
};

export const PROFILE_NAMES: readonly string[] = Object.keys(PROFILES);

/** The profile named `name`; a usage error listing the valid names otherwise. */
export async function profileByName(name: string): Promise<Profile<unknown>> {
  const load = Object.hasOwn(PROFILES, name) ? PROFILES[name] : undefined;
  if (!load) throw new CliError(`unknown profile "${name}"; valid: ${PROFILE_NAMES.join(', ')}`);
  return load();
}
