import type { Profile } from '../contract/profile.js';
import { collectRunFiles, type StoreFiles } from '../snapshot-io/run-files.js';
import type { StorageAdapter } from '../contract/storage.js';
import { CliError, notFound } from './io.js';
import { loadEntry } from '../runs/inspect.js';
import { PROFILE_NAMES, profileByName } from './profiles.js';

/** How many runs' latest documents a probe decodes per profile: enough to tell layouts apart, cheap on a big store. */
const PROBE_RUNS = 3;

/** How well a store's files fit `profile`: runs found under its layout, and how many of the sampled latest documents decode. */
async function fit(storage: StorageAdapter, profile: Profile<unknown>): Promise<{ runs: number; decoded: number }> {
  const files = await collectRunFiles(storage, profile);
  const sample = [...files.runs.values()].filter((r) => r.latest).slice(0, PROBE_RUNS);
  let decoded = 0;
  for (const run of sample) if ((await loadEntry(storage, profile, run.latest!)).snapshot) decoded++;
  return { runs: files.runs.size, decoded };
}

/**
 * The built-in profile (other than `current`) whose layout and decoder best fit the
 * store's files, or `undefined` when none decodes anything: what names a wrong
 * `--profile` ("these files look like phasedWorkflow").
 */
export async function guessProfile(storage: StorageAdapter, current: Profile<unknown>): Promise<string | undefined> {
  let best: { name: string; decoded: number; runs: number } | undefined;
  for (const name of PROFILE_NAMES) {
    if (name === current.name) continue;
    let profile: Profile<unknown>;
    try {
      profile = await profileByName(name);
    } catch (err) {
      if (err instanceof CliError) continue; // an optional peer is missing: that profile cannot be it
      throw err;
    }
    if (profile.name === current.name) continue;
    const f = await fit(storage, profile).catch(() => ({ runs: 0, decoded: 0 }));
    if (f.decoded > 0 && (!best || f.decoded > best.decoded || (f.decoded === best.decoded && f.runs > best.runs))) best = { name, ...f };
  }
  return best?.name;
}

/** ` These files look like NAME (--profile NAME).` or an empty string. */
export async function profileHint(storage: StorageAdapter, current: Profile<unknown>): Promise<string> {
  const name = await guessProfile(storage, current);
  return name ? ` These files look like ${name}: try --profile ${name}.` : '';
}

/**
 * Checks that every run named on the command line exists in `files` (exit 2 naming the
 * first missing one), and that a store-wide command found something to work on.
 */
export async function assertRunsExist(
  storage: StorageAdapter,
  profile: Profile<unknown>,
  files: StoreFiles,
  runIds: readonly string[],
  where: string,
  /** Files found outside the listing (a symbolic link in place of a run's latest): something to report after all. */
  unlisted = 0,
): Promise<void> {
  for (const runId of runIds) {
    if (!files.runs.has(runId))
      throw notFound(`run "${runId}" not found in ${where} (profile ${profile.name}).${await profileHint(storage, profile)}`);
  }
  if (runIds.length === 0 && files.runs.size === 0 && files.storeWide.length === 0 && unlisted === 0) {
    throw notFound(`no ${profile.name} runs in ${where}.${await profileHint(storage, profile)}`);
  }
}

/** How the store is named in messages: a directory path, `github:owner/repo`, or `postgres` (never a URL: it may hold a password). */
export function storeLabel(values: Readonly<Record<string, unknown>>, storage: StorageAdapter): string {
  if (typeof values.github === 'string') return `github:${values.github}`;
  if (storage.name === 'postgres') return 'the PostgreSQL store';
  if (typeof values.dir === 'string') return values.dir;
  return storage.name === 'fs' ? 'the current directory' : `the ${storage.name} store`;
}
