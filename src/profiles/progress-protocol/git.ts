import { execFile } from 'node:child_process';
import { access, constants } from 'node:fs/promises';
import { isAbsolute, posix, relative, resolve, sep } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { assertOptionsArgument, assertStringArgument } from '../../contract/arguments.js';

/** What {@link gitSnapshot} did. */
export type GitSnapshotResult =
  | { readonly outcome: 'committed'; readonly commit: string; readonly files: readonly string[]; readonly message: string }
  | { readonly outcome: 'skipped'; readonly reason: 'clean' | 'no_scope' | 'nothing_to_stage' | 'hook_failed'; readonly message: string };

/** Options of {@link gitSnapshot}. */
export interface GitSnapshotOptions {
  /** The project directory (inside the work tree). */
  readonly cwd: string;
  /** In-scope files (`.ccc-state.json` `activeTaskFiles`), relative to `cwd` or absolute; a path ending in `/` covers a folder. */
  readonly inScopeFiles: readonly string[] | undefined;
  /** The commit message. */
  readonly message: string;
  /** Git executable. @default 'git' */
  readonly gitBinary?: string;
  /** Longest a git call may take. @default 30000 */
  readonly timeoutMs?: number;
}

interface GitRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function runGit(args: readonly string[], cwd: string, options: GitSnapshotOptions): Promise<GitRun> {
  return new Promise((resolvePromise, reject) => {
    execFile(
      options.gitBinary ?? 'git',
      args,
      {
        cwd,
        timeout: options.timeoutMs ?? 30_000,
        maxBuffer: 64 * 1024 * 1024,
        // Non-interactive: never wait for a credential or an editor; paths are literal, never globs.
        env: { ...process.env, GIT_TERMINAL_PROMPT: '0', GIT_LITERAL_PATHSPECS: '1', GIT_EDITOR: 'true', LC_ALL: 'C' },
        windowsHide: true,
      },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          const why = error.code === 'ENOENT' ? 'git not found' : error.killed ? 'git timed out' : 'git could not run';
          reject(new CheckpointError('checkpoint_unsupported', why, { details: { cause: why } }));
          return;
        }
        resolvePromise({ code: error ? Number(error.code) : 0, stdout: String(stdout), stderr: String(stderr) });
      },
    ).stdin?.end();
  });
}

function gitFailure(
  cause: string,
  code: 'checkpoint_unsupported' | 'checkpoint_atomic_write_failed' = 'checkpoint_unsupported',
): CheckpointError {
  return new CheckpointError(code, `git snapshot failed: ${cause}`, { details: { cause } });
}

/** Entries of `git status --porcelain=v1 -z`: the two-letter status and the path (renames: the new path and the original). */
export function parsePorcelainZ(output: string): { xy: string; path: string; from?: string }[] {
  assertStringArgument(output, 'parsePorcelainZ', 'output');
  const parts = output.split('\0');
  const out: { xy: string; path: string; from?: string }[] = [];
  for (let i = 0; i < parts.length; i++) {
    const entry = parts[i]!;
    if (entry.length < 4) continue;
    const xy = entry.slice(0, 2);
    const path = entry.slice(3);
    if (xy.includes('R') || xy.includes('C')) out.push({ xy, path, from: parts[++i] ?? '' });
    else out.push({ xy, path });
  }
  return out;
}

/**
 * Step 2 of progress-protocol.md: commit only the in-scope tracked files.
 *
 * 1. `git status --porcelain`: a clean tree → skipped, "Git snapshot skipped — working tree clean."
 * 2. In scope: the files listed in `.ccc-state.json` `activeTaskFiles`; none listed → skipped.
 * 3. Of those, the tracked files with changes; none → skipped, "nothing in scope to stage".
 *    Untracked files are never staged, out-of-scope files are never touched, and neither
 *    `git add .` nor `git add -A` is ever run.
 * 4. `git commit --only -m <message> -- <files>`: stages and commits exactly those files in
 *    one call, so changes the user staged elsewhere stay staged and uncommitted, and a
 *    commit that fails leaves the index as it was.
 * 5. A failing pre-commit hook → skipped, "Git snapshot skipped — pre-commit hook failed."
 *
 * Rejects (a failed step) when git is missing, the folder is not a work tree, or the
 * commit fails without a pre-commit hook to blame.
 */
export async function gitSnapshot(options: GitSnapshotOptions): Promise<GitSnapshotResult> {
  assertOptionsArgument(options, 'gitSnapshot');
  const top = await runGit(['rev-parse', '--show-toplevel'], options.cwd, options);
  if (top.code !== 0) throw gitFailure('not a git repository');
  const root = top.stdout.trim();
  const status = await runGit(['status', '--porcelain=v1', '-z', '--untracked-files=all'], root, options);
  if (status.code !== 0) throw gitFailure(`git status exited with code ${status.code}`, 'checkpoint_atomic_write_failed');
  const entries = parsePorcelainZ(status.stdout);
  if (entries.length === 0) return { outcome: 'skipped', reason: 'clean', message: 'Git snapshot skipped — working tree clean.' };

  const scope = (options.inScopeFiles ?? []).filter((f) => typeof f === 'string' && f.trim() !== '');
  if (scope.length === 0) {
    return {
      outcome: 'skipped',
      reason: 'no_scope',
      message: 'Git snapshot skipped — no in-scope files (.ccc-state.json has no activeTaskFiles).',
    };
  }
  const scoped = scope
    .map((f) => {
      const rel = relative(root, isAbsolute(f) ? f : resolve(options.cwd, f))
        .split(sep)
        .join('/');
      return { rel, folder: f.endsWith('/') };
    })
    .filter(({ rel }) => rel !== '' && !rel.startsWith('..') && !posix.isAbsolute(rel));
  const inScope = (path: string): boolean => scoped.some(({ rel, folder }) => path === rel || (folder && path.startsWith(`${rel}/`)));

  const files = new Set<string>();
  for (const e of entries) {
    if (e.xy === '??' || e.xy === '!!' || !inScope(e.path)) continue;
    files.add(e.path);
    if (e.from) files.add(e.from);
  }
  if (files.size === 0)
    return { outcome: 'skipped', reason: 'nothing_to_stage', message: 'Git snapshot skipped — nothing in scope to stage.' };

  const list = [...files].sort();
  const commit = await runGit(['commit', '--only', '--quiet', '-m', options.message, '--', ...list], root, options);
  if (commit.code !== 0) {
    if (/nothing to commit|no changes added to commit/i.test(commit.stdout + commit.stderr)) {
      return { outcome: 'skipped', reason: 'nothing_to_stage', message: 'Git snapshot skipped — nothing in scope to stage.' };
    }
    const hook = await runGit(['rev-parse', '--git-path', 'hooks/pre-commit'], root, options);
    const hookPath = resolve(root, hook.stdout.trim());
    const hasHook =
      hook.code === 0 &&
      (await access(hookPath, constants.X_OK).then(
        () => true,
        () => false,
      ));
    if (hasHook) return { outcome: 'skipped', reason: 'hook_failed', message: 'Git snapshot skipped — pre-commit hook failed.' };
    throw gitFailure(`git commit exited with code ${commit.code}`, 'checkpoint_atomic_write_failed');
  }
  const head = await runGit(['rev-parse', '--short', 'HEAD'], root, options);
  const sha = head.stdout.trim();
  return {
    outcome: 'committed',
    commit: sha,
    files: list,
    message: `Git snapshot: committed ${list.length} in-scope file${list.length === 1 ? '' : 's'} (${sha}).`,
  };
}
