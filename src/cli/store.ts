import { fsStorage } from '../storage/fs/index.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { CliError } from './io.js';

/** `owner/repo[@branch][:path]` → its parts. */
export function parseGitHubTarget(value: string): { owner: string; repo: string; branch?: string; basePath?: string } {
  const m = /^([A-Za-z0-9-]+)\/([A-Za-z0-9._-]+)(?:@([^:]+))?(?::(.*))?$/.exec(value);
  if (!m) throw new CliError('--github takes OWNER/REPO[@BRANCH][:PATH]');
  return { owner: m[1]!, repo: m[2]!, ...(m[3] ? { branch: m[3] } : {}), ...(m[4] ? { basePath: m[4].replace(/^\/+|\/+$/g, '') } : {}) };
}

/**
 * Opens the store named by `--dir` or `--github`. `--dir` is the store's root: the
 * profiles lay their files out inside it exactly as their specs do
 * (`checkpoints/<run_id>/latest.json`, `plans/NN-CHECKPOINT.json`), so the default, the
 * current directory, reads `./checkpoints/<run_id>/…`. The CLI opens without fsStorage's
 * open-time sweep: it inspects a store that may be a whole project directory, and the
 * agent's own writers clean up after crashed ones.
 */
export async function openStore(values: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>): Promise<StorageAdapter> {
  if (typeof values.dir === 'string' && typeof values.github === 'string') throw new CliError('give --dir or --github, not both');
  if (typeof values.github === 'string') return openGitHubStore(parseGitHubTarget(values.github), env);
  return fsStorage({ dir: typeof values.dir === 'string' ? values.dir : '.', create: false, cleanupOnOpen: false });
}

async function openGitHubStore(
  target: ReturnType<typeof parseGitHubTarget>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<StorageAdapter> {
  const token = env.GITHUB_TOKEN;
  if (!token) throw new CliError('--github needs a token in GITHUB_TOKEN');
  const { githubStorage } = await import('../storage/github/index.js');
  return githubStorage({ ...target, token, ...(env.GITHUB_API_URL ? { baseUrl: env.GITHUB_API_URL } : {}) });
}
