import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isCheckpointError } from 'savepoint';
import { gitSnapshot, parsePorcelainZ } from 'savepoint/progress-protocol';
import { git, installPreCommitHook, statusOf, tempRepo, write } from './helpers.js';

const cleanups: (() => void)[] = [];
afterEach(() => cleanups.splice(0).forEach((c) => c()));

function repo(files?: Record<string, string>): string {
  const r = tempRepo(files ?? { 'src/a.ts': 'a\n', 'src/b.ts': 'b\n', 'notes.txt': 'n\n' });
  cleanups.push(r.cleanup);
  return r.dir;
}

const headCount = (dir: string): number => Number(git(dir, 'rev-list', '--count', 'HEAD').trim());
const lastCommitFiles = (dir: string): string[] =>
  git(dir, 'show', '--name-only', '--format=', 'HEAD').trim().split('\n').filter(Boolean).sort();

describe('Step 2: git snapshot against real repositories', () => {
  it('a clean tree is skipped with exactly the spec message', async () => {
    const dir = repo();
    const result = await gitSnapshot({ cwd: dir, inScopeFiles: ['src/a.ts'], message: 'm' });
    expect(result).toEqual({ outcome: 'skipped', reason: 'clean', message: 'Git snapshot skipped — working tree clean.' });
    expect(headCount(dir)).toBe(1);
  });

  it('stages and commits only the in-scope tracked files; an out-of-scope dirty file stays unstaged', async () => {
    const dir = repo();
    write(dir, 'src/a.ts', 'a changed\n');
    write(dir, 'src/b.ts', 'b changed\n'); // out of scope
    write(dir, 'src/new.ts', 'untracked\n'); // in scope but untracked: never staged
    const result = await gitSnapshot({ cwd: dir, inScopeFiles: ['src/a.ts', 'src/new.ts'], message: 'checkpoint(CIA-1): task 1 of 2 — a' });
    expect(result).toMatchObject({ outcome: 'committed', files: ['src/a.ts'] });
    expect(result.message).toMatch(/^Git snapshot: committed 1 in-scope file \([0-9a-f]{7,}\)\.$/);
    expect(headCount(dir)).toBe(2);
    expect(lastCommitFiles(dir)).toEqual(['src/a.ts']);
    expect(git(dir, 'log', '-1', '--format=%s').trim()).toBe('checkpoint(CIA-1): task 1 of 2 — a');
    expect(statusOf(dir)).toEqual({ 'src/b.ts': ' M', 'src/new.ts': '??' });
  });

  it('leaves what the user staged out of scope staged and uncommitted', async () => {
    const dir = repo();
    write(dir, 'src/a.ts', 'a changed\n');
    write(dir, 'notes.txt', 'staged by the user\n');
    git(dir, 'add', 'notes.txt');
    await gitSnapshot({ cwd: dir, inScopeFiles: ['src/a.ts'], message: 'm' });
    expect(lastCommitFiles(dir)).toEqual(['src/a.ts']);
    expect(statusOf(dir)).toEqual({ 'notes.txt': 'M ' });
  });

  it('commits deletions, folder scopes, and paths relative to a sub-directory', async () => {
    const dir = repo();
    rmSync(join(dir, 'src/a.ts'));
    write(dir, 'src/b.ts', 'b changed\n');
    write(dir, 'notes.txt', 'changed\n');
    const result = await gitSnapshot({ cwd: join(dir, 'src'), inScopeFiles: ['./'], message: 'm' });
    expect(result).toMatchObject({ outcome: 'committed', files: ['src/a.ts', 'src/b.ts'] });
    expect(statusOf(dir)).toEqual({ 'notes.txt': ' M' });
  });

  it('treats file names as literal paths, never globs', async () => {
    const dir = repo({ 'a*.ts': '1\n', 'abc.ts': '2\n' });
    write(dir, 'a*.ts', 'changed\n');
    write(dir, 'abc.ts', 'changed\n');
    await gitSnapshot({ cwd: dir, inScopeFiles: ['a*.ts'], message: 'm' });
    expect(lastCommitFiles(dir)).toEqual(['a*.ts']);
    expect(statusOf(dir)).toEqual({ 'abc.ts': ' M' });
  });

  it('nothing in scope to stage, or no activeTaskFiles → skipped with a message', async () => {
    const dir = repo();
    write(dir, 'src/b.ts', 'b changed\n');
    expect(await gitSnapshot({ cwd: dir, inScopeFiles: ['src/a.ts'], message: 'm' })).toEqual({
      outcome: 'skipped',
      reason: 'nothing_to_stage',
      message: 'Git snapshot skipped — nothing in scope to stage.',
    });
    expect(await gitSnapshot({ cwd: dir, inScopeFiles: undefined, message: 'm' })).toMatchObject({
      outcome: 'skipped',
      reason: 'no_scope',
    });
    expect(await gitSnapshot({ cwd: dir, inScopeFiles: ['../outside.ts', '/etc/passwd'], message: 'm' })).toMatchObject({
      outcome: 'skipped',
      reason: 'nothing_to_stage',
    });
    expect(headCount(dir)).toBe(1);
    expect(statusOf(dir)).toEqual({ 'src/b.ts': ' M' });
  });

  it('a failing pre-commit hook → skipped with a message, nothing committed, the index as it was', async () => {
    const dir = repo();
    installPreCommitHook(dir, 'echo "lint failed" >&2\nexit 1');
    write(dir, 'src/a.ts', 'a changed\n');
    const result = await gitSnapshot({ cwd: dir, inScopeFiles: ['src/a.ts'], message: 'm' });
    expect(result).toEqual({ outcome: 'skipped', reason: 'hook_failed', message: 'Git snapshot skipped — pre-commit hook failed.' });
    expect(headCount(dir)).toBe(1);
    expect(statusOf(dir)).toEqual({ 'src/a.ts': ' M' });
  });

  it('a passing pre-commit hook runs and the commit lands', async () => {
    const dir = repo();
    installPreCommitHook(dir, 'exit 0');
    write(dir, 'src/a.ts', 'a changed\n');
    expect(await gitSnapshot({ cwd: dir, inScopeFiles: ['src/a.ts'], message: 'm' })).toMatchObject({ outcome: 'committed' });
  });

  it('outside a work tree, or without git, the step fails with a cause', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-nogit-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const err = await gitSnapshot({ cwd: dir, inScopeFiles: ['x'], message: 'm' }).catch((e: unknown) => e);
    expect(isCheckpointError(err)).toBe(true);
    expect((err as { details: { cause: string } }).details.cause).toBe('not a git repository');
    const missing = await gitSnapshot({ cwd: dir, inScopeFiles: ['x'], message: 'm', gitBinary: 'git-that-does-not-exist' }).catch(
      (e: unknown) => e,
    );
    expect((missing as { details: { cause: string } }).details.cause).toBe('git not found');
  });

  it('parses porcelain -z output, renames included', () => {
    expect(parsePorcelainZ(' M a b.ts\0R  new.ts\0old.ts\0?? x\0')).toEqual([
      { xy: ' M', path: 'a b.ts' },
      { xy: 'R ', path: 'new.ts', from: 'old.ts' },
      { xy: '??', path: 'x' },
    ]);
  });
});
