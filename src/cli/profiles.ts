import type { Profile } from '../contract/profile.js';
import { defaultProfile } from '../profiles/default-profile.js';
import { phasedWorkflow } from '../profiles/phased-workflow/profile.js';
import { planExecutor } from '../profiles/plan-executor/profile.js';
import { snapshotLifecycle } from '../profiles/snapshot-lifecycle/profile.js';
import { existsSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { assertProfileArgument } from '../contract/arguments.js';
import { CliError, notFound } from './io.js';

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
      if ((err as { code?: string }).code === 'ERR_MODULE_NOT_FOUND')
        throw new CliError('--profile handoffMarkdown needs the "yaml" package: npm install yaml');
      throw err;
    }
  },
  progressProtocol: async () => (await import('../profiles/progress-protocol/index.js')).progressProtocol as Profile<unknown>,
  // Stores written by SavepointSaver (savepoint/langgraph); reading them needs no LangGraph package.
  langgraph: async () => (await import('../langgraph/profile.js')).langGraphProfile as Profile<unknown>,
};

export const PROFILE_NAMES: readonly string[] = Object.keys(PROFILES);

/** A `--profile` value that names a module file rather than a built-in profile. */
export const isProfilePath = (name: string): boolean => name.startsWith('.') || isAbsolute(name) || /\.[cm]?js$/.test(name);

/**
 * A custom profile from a module file (`--profile ./my-profile.js`): its default export, or a
 * named export `profile`, made by `defineProfile` or `jsonProfile`. The module runs as code:
 * load only files you trust, as with any script.
 */
async function profileFromModule(path: string, cwd: string): Promise<Profile<unknown>> {
  const file = resolve(cwd, path);
  if (!existsSync(file)) throw notFound(`profile module ${path} not found`);
  let mod: { default?: unknown; profile?: unknown };
  try {
    mod = (await import(pathToFileURL(file).href)) as typeof mod;
  } catch (err) {
    throw new CliError(`profile module ${path} could not be loaded: ${(err as Error).message ?? String(err)}`);
  }
  const candidate = mod.profile ?? mod.default;
  try {
    assertProfileArgument(candidate, '--profile');
  } catch {
    throw new CliError(
      `profile module ${path} exports no profile: export one made by defineProfile or jsonProfile as the default export or as "profile"`,
    );
  }
  return candidate as Profile<unknown>;
}

/** The profile named `name` (or in the module file `name` names); a usage error listing the valid names otherwise. */
export async function profileByName(name: string, cwd: string = process.cwd()): Promise<Profile<unknown>> {
  if (isProfilePath(name)) return profileFromModule(name, cwd);
  const load = Object.hasOwn(PROFILES, name) ? PROFILES[name] : undefined;
  if (!load)
    throw new CliError(
      `unknown profile "${name}"; valid: ${PROFILE_NAMES.join(', ')}, or a module file that exports one (./my-profile.js)`,
    );
  return load();
}
