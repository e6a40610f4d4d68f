/**
 * The built CLI (`dist/cli.js`) in a real pseudo-terminal (util-linux `script`), as an
 * operator runs it, and the same command as a pipe: colours and the progress bar only on the
 * terminal, plain text in the pipe, the same exit code either way.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { ensureBuilt, ROOT } from '../support/build.js';

const SCRIPT = ['/usr/bin/script', '/bin/script'].find((p) => existsSync(p));
const CLI = join(ROOT, 'dist/cli.js');
let dir = '';

/** Runs the CLI in a pseudo-terminal; returns what the terminal showed (stdout and stderr together) and the exit code. */
function inPty(args: string[]): { screen: string; code: number } {
  const command = [process.execPath, CLI, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  // -q quiet, -e the child's exit code, -c the command; the typescript file is /dev/null.
  const r = spawnSync(SCRIPT!, ['-qec', command, '/dev/null'], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '', TERM: 'xterm' },
    timeout: 60_000,
  });
  return { screen: r.stdout, code: r.status ?? -1 };
}

function inPipe(args: string[]): { out: string; err: string; code: number } {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '' }, timeout: 60_000 });
  return { out: r.stdout, err: r.stderr, code: r.status ?? -1 };
}

beforeAll(async () => {
  if (!SCRIPT) throw new Error('util-linux `script` not found: install util-linux (Debian: apt-get install bsdutils)');
  await ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'savepoint-pty-'));
  const storage = fsStorage({ dir });
  // 60 runs: enough files for verify to draw its progress bar on a terminal.
  for (let r = 0; r < 60; r++) {
    const w = createWriter({ storage, profile: defaultProfile, runId: `run-${r}`, heartbeatIntervalMs: false });
    await w.checkpoint({ source: 'manual', status: r % 2 ? 'completed' : 'in_progress', payload: { r } });
    await w.close();
  }
  await storage.close();
}, 300_000);
afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the CLI in a real terminal and in a pipe', () => {
  it('colours statuses on the terminal only', () => {
    const tty = inPty(['runs', '--dir', dir]);
    expect(tty.code).toBe(0);
    expect(tty.screen).toContain('\u001b[33min_progress\u001b[39m');
    expect(tty.screen).toMatch(/\rreading runs \[#+\.*\] \d+\/60/); // 60 runs: a progress bar while they are read
    const pipe = inPipe(['runs', '--dir', dir]);
    expect(pipe.code).toBe(0);
    expect(pipe.out).toContain('in_progress');
    expect(pipe.out + pipe.err).not.toContain('\u001b[');
    expect(pipe.err).toBe('');
  });

  it('draws and clears a progress bar for a long verify on the terminal; a pipe gets no carriage return', () => {
    const tty = inPty(['verify', '--dir', dir]);
    expect(tty.code).toBe(0);
    expect(tty.screen).toMatch(/\rverifying \[#+\.*\] \d+\/\d+/);
    expect(tty.screen).toMatch(/0 problems/);
    const pipe = inPipe(['verify', '--dir', dir]);
    expect(pipe.code).toBe(0);
    expect(pipe.out + pipe.err).not.toContain('\r');
    expect(pipe.out).toMatch(/0 problems/);
  });

  it('the same exit codes on the terminal as in the pipe; --json in a pipe is plain JSON', () => {
    expect(inPty(['ls', 'no-such-run', '--dir', dir]).code).toBe(2);
    expect(inPipe(['ls', 'no-such-run', '--dir', dir]).code).toBe(2);
    expect(inPty(['unlock', 'run-1', '--dir', dir]).code).toBe(0);
    expect(JSON.parse(execFileSync(process.execPath, [CLI, 'runs', '--dir', dir, '--json'], { encoding: 'utf8' }))).toMatchObject({
      schemaVersion: 1,
    });
  });
});
