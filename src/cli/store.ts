import { fsStorage } from '../storage/fs/index.js';
import type { StorageAdapter } from '../contract/storage.js';
import { stat } from 'node:fs/promises';
import { CliError, notFound } from './io.js';

/** `owner/repo[@branch][:path]` → its parts. */
export function parseGitHubTarget(value: string): { owner: string; repo: string; branch?: string; basePath?: string } {
  const m = /^([A-Za-z0-9-]+)\/([A-Za-z0-9._-]+)(?:@([^:]+))?(?::(.*))?$/.exec(value);
  if (!m) throw new CliError('--github takes OWNER/REPO[@BRANCH][:PATH]');
  return { owner: m[1]!, repo: m[2]!, ...(m[3] ? { branch: m[3] } : {}), ...(m[4] ? { basePath: m[4].replace(/^\/+|\/+$/g, '') } : {}) };
}

/**
 * The file-system store's root: `--dir`, else `SAVEPOINT_DIR` (like restic's
 * `RESTIC_REPOSITORY`), else the current directory; `undefined` when another store is named.
 * A flag always wins over the environment; of the two environment variables, a set
 * `SAVEPOINT_POSTGRES_URL` with no flag is a usage error when `SAVEPOINT_DIR` is set too.
 */
export function storeDir(values: Readonly<Record<string, unknown>>, env: Readonly<Record<string, string | undefined>>): string | undefined {
  if (typeof values.dir === 'string') return values.dir;
  if (typeof values.github === 'string' || typeof values.postgres === 'string') return undefined;
  const dir = env.SAVEPOINT_DIR === '' ? undefined : env.SAVEPOINT_DIR;
  if (dir !== undefined && env.SAVEPOINT_POSTGRES_URL !== undefined)
    throw new CliError('SAVEPOINT_DIR and SAVEPOINT_POSTGRES_URL are both set: pass --dir or --postgres to choose');
  if (env.SAVEPOINT_POSTGRES_URL !== undefined) return undefined;
  return dir ?? '.';
}

/**
 * Opens the store named by `--dir`, `--github` or `--postgres` (or, when none is given,
 * `SAVEPOINT_DIR` or `SAVEPOINT_POSTGRES_URL` from the environment). `--dir` is the store's root: the
 * profiles lay their files out inside it exactly as their specs do
 * (`checkpoints/<run_id>/latest.json`, `plans/NN-CHECKPOINT.json`), so the default, the
 * current directory, reads `./checkpoints/<run_id>/…`. The CLI opens without fsStorage's
 * open-time sweep: it inspects a store that may be a whole project directory, and the
 * agent's own writers clean up after crashed ones.
 */
export async function openStore(
  values: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<StorageAdapter> {
  const named = ['dir', 'github', 'postgres'].filter((k) => typeof values[k] === 'string');
  if (named.length > 1) throw new CliError('give one of --dir, --github and --postgres');
  if (typeof values.github === 'string') return openGitHubStore(parseGitHubTarget(values.github), env);
  const dir = storeDir(values, env);
  const postgresUrl = typeof values.postgres === 'string' ? values.postgres : dir === undefined ? env.SAVEPOINT_POSTGRES_URL : undefined;
  if (postgresUrl !== undefined)
    return openPostgresStore(postgresUrl, typeof values.postgres === 'string' ? '--postgres' : 'SAVEPOINT_POSTGRES_URL', env);
  if (dir === undefined) throw new CliError('no store named: pass --dir, --github or --postgres');
  const stats = await stat(dir).catch(() => undefined);
  if (!stats) throw notFound(`no store at ${dir}: the directory does not exist`);
  if (!stats.isDirectory()) throw notFound(`no store at ${dir}: not a directory`);
  return fsStorage({ dir, create: false, cleanupOnOpen: false });
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

/** Whether `url` is a PostgreSQL URL; a malformed one is the user's configuration, not an unavailable store. */
function isPostgresUrl(url: string): boolean {
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}

async function openPostgresStore(url: string, from: string, env: Readonly<Record<string, string | undefined>>): Promise<StorageAdapter> {
  // The value is never echoed: it may hold a password.
  if (!isPostgresUrl(url)) throw new CliError(`${from} needs a connection URL: postgres://USER[:PASSWORD]@HOST[:PORT]/DB`);
  const { postgresStorage } = await import('../storage/postgres/index.js');
  // The CLI inspects stores: it never creates a table (a typo in the URL must not make an empty store).
  return postgresStorage({
    connectionString: url,
    autoMigrate: false,
    poolSize: 2,
    ...(env.SAVEPOINT_POSTGRES_SCHEMA ? { schema: env.SAVEPOINT_POSTGRES_SCHEMA } : {}),
    ...(env.SAVEPOINT_POSTGRES_TABLE ? { table: env.SAVEPOINT_POSTGRES_TABLE } : {}),
  });
}
