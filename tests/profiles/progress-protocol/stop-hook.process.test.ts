import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { renderProgress, runStopHook, sinkFromEnv } from 'savepoint/progress-protocol';
import { GITHUB_TOKEN, LINEAR_KEY, read, startFakeGitHub, startFakeLinear, write, type FakeTracker } from './helpers.js';

const child = fileURLToPath(new URL('../../fixtures/progress/stop-hook-child.ts', import.meta.url));
const tsconfig = fileURLToPath(new URL('../../../tsconfig.json', import.meta.url));
// The hook runs in the project directory, where tsx is not installed: load it by absolute URL.
const tsxLoader = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-hook-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  write(
    dir,
    '.ccc-progress.md',
    renderProgress({
      issue: { id: 'CIA-9', title: 'Hooks' },
      session: '2025-12-14T15:00:00Z',
      executionMode: 'quick',
      completedTasks: ['One'],
      currentTask: { description: 'Two', status: 'half done' },
      remainingTasks: ['Three'],
      decisions: [],
      blockers: [],
      continuationPrompt: 'Resume CIA-9. Current task: task 2 of 3 — Two. Key files: a.ts.\nNext action: finish Two.',
    }),
  );
  return dir;
}

/** Runs the stop hook as a separate process with stdin left open (it must not wait for it). */
function runHook(cwd: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', tsxLoader, child], {
      cwd,
      env: { ...process.env, TSX_TSCONFIG_PATH: tsconfig, SAVEPOINT_TRACKER: '', LINEAR_API_KEY: '', GITHUB_TOKEN: '', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    proc.on('error', reject);
    proc.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the stop-hook entry', () => {
  let server: FakeTracker;
  afterEach(() => server?.close());

  it('as a child process: exit 0 on partial success, the report on stdout', async () => {
    server = await startFakeGitHub('acme', 'app');
    server.fail({ status: 503 });
    const dir = project();
    const result = await runHook(dir, {
      SAVEPOINT_TRACKER: 'github',
      GITHUB_TOKEN,
      GITHUB_REPOSITORY: 'acme/app',
      SAVEPOINT_GITHUB_ISSUE: '7',
      GITHUB_API_URL: server.url,
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // One JSON line: the Claude Code stop-hook contract, the prompt in `reason`, the report beside it.
    expect(result.stdout.endsWith('\n') && result.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(JSON.parse(result.stdout)).toEqual({
      decision: 'block',
      reason: 'Resume CIA-9. Current task: task 2 of 3 — Two. Key files: a.ts.\nNext action: finish Two.',
      systemMessage: [
        'Progress saved to .ccc-progress.md.',
        'Warning: GitHub update skipped (HTTP 503).',
        'Checkpoint complete: 1/2 steps succeeded.',
        'Failed: GitHub update (HTTP 503) — status not persisted to issue tracker.',
      ].join('\n'),
    });
    expect(result.stdout).not.toContain(GITHUB_TOKEN);
    expect(read(dir, '.ccc-progress.md')).toContain('## Current Task\n- Two — half done');
  });

  it('as a child process: 2/2 with a reachable tracker, and the comment id stored', async () => {
    server = await startFakeLinear();
    const dir = project();
    const result = await runHook(dir, { LINEAR_API_KEY: LINEAR_KEY, LINEAR_ISSUE_ID: 'CIA-9', LINEAR_API_URL: `${server.url}/graphql` });
    expect(result.code).toBe(0);
    expect((JSON.parse(result.stdout) as { systemMessage: string }).systemMessage.split('\n').at(-1)).toBe(
      'Checkpoint complete: 2/2 steps succeeded.',
    );
    expect(JSON.parse(read(dir, '.ccc-state.json'))).toEqual({ checkpointCommentId: [...server.comments.keys()][0] });
  });

  it('exits 1 only when every step failed', async () => {
    server = await startFakeLinear();
    server.fail({ status: 503 });
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-hook-empty-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const out: string[] = [];
    const code = await runStopHook({
      cwd: dir,
      env: { LINEAR_API_KEY: LINEAR_KEY, LINEAR_ISSUE_ID: 'CIA-9', LINEAR_API_URL: `${server.url}/graphql` },
      write: (t) => out.push(t),
    });
    expect(code).toBe(1);
    expect(out.join('')).toMatch(/^Checkpoint complete: 0\/2 steps succeeded\.$/m);
  });

  it('a misconfigured tracker is a failed step naming the missing variable, not a crash', async () => {
    const dir = project();
    const out: string[] = [];
    const code = await runStopHook({ cwd: dir, env: { SAVEPOINT_TRACKER: 'github', GITHUB_TOKEN: 'x' }, write: (t) => out.push(t) });
    expect(code).toBe(0);
    expect(out.join('')).toContain('Failed: GitHub update (GITHUB_REPOSITORY not set) — status not persisted to issue tracker.');
  });

  it('injects the continuation prompt through `reason`, unless the agent already continues from a stop hook (regression)', async () => {
    const dir = project();
    const out: string[] = [];
    expect(await runStopHook({ cwd: dir, sink: null, write: (t) => out.push(t) })).toBe(0);
    expect(JSON.parse(out.join(''))).toMatchObject({ decision: 'block', reason: expect.stringContaining('Resume CIA-9.') });
    const again: string[] = [];
    expect(await runStopHook({ cwd: dir, sink: null, hookInput: { stop_hook_active: true }, write: (t) => again.push(t) })).toBe(0);
    expect(again.join('')).toMatch(/^Progress saved to \.ccc-progress\.md\.\n[\s\S]*Checkpoint complete: 2\/2 steps succeeded\.\n$/);
    const text: string[] = [];
    await runStopHook({ cwd: dir, sink: null, inject: false, write: (t) => text.push(t) });
    expect(text.join('')).not.toContain('"decision"');
  });

  it('sinkFromEnv: none, linear, github', () => {
    expect(sinkFromEnv({})).toBeUndefined();
    expect(sinkFromEnv({ SAVEPOINT_TRACKER: 'none', LINEAR_API_KEY: 'k' })).toBeUndefined();
    expect(sinkFromEnv({ LINEAR_API_KEY: 'k', LINEAR_ISSUE_ID: 'CIA-1' })?.name).toBe('Linear');
    expect(sinkFromEnv({ GITHUB_TOKEN: 't', GITHUB_REPOSITORY: 'a/b', SAVEPOINT_GITHUB_ISSUE: '3' })?.name).toBe('GitHub');
    expect(() => sinkFromEnv({ SAVEPOINT_TRACKER: 'jira' })).toThrow(/checkpoint_config_invalid/);
    expect(() => sinkFromEnv({ SAVEPOINT_TRACKER: 'linear', LINEAR_API_KEY: 'secret-value' })).toThrow(/LINEAR_ISSUE_ID is not set/);
  });
});
