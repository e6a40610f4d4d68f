import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage } from 'savepoint';
import { runCli, storeLabel } from '../../src/cli/run.js';
import type { CliIo } from '../../src/cli/io.js';

function fakeIo(tty: boolean, env: Record<string, string> = {}): CliIo & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    stdout: { isTTY: tty, write: (t: string) => ((io.out += t), true) },
    stderr: { isTTY: tty, write: (t: string) => ((io.err += t), true) },
    env,
    readStdin: async () => '',
  };
  return io;
}

async function storeWithRuns(runs: number): Promise<ReturnType<typeof memoryStorage>> {
  const storage = memoryStorage();
  for (let r = 0; r < runs; r++) {
    const w = createWriter({ storage, profile: defaultProfile, runId: `run-${r}`, heartbeatIntervalMs: false });
    await w.checkpoint({ source: 'manual', status: r % 2 ? 'completed' : 'in_progress', payload: { r } });
    await w.close();
  }
  return storage;
}

describe('CLI on a terminal', () => {
  it('colors statuses on a TTY, and not with NO_COLOR or off a TTY', async () => {
    const storage = await storeWithRuns(2);
    const tty = fakeIo(true);
    expect(await runCli(['runs'], tty, { storage })).toBe(0);
    expect(tty.out).toContain('\u001b[33min_progress\u001b[39m');
    const noColor = fakeIo(true, { NO_COLOR: '1' });
    await runCli(['runs'], noColor, { storage });
    expect(noColor.out).not.toContain('\u001b[');
    const pipe = fakeIo(false);
    await runCli(['runs'], pipe, { storage });
    expect(pipe.out).not.toContain('\u001b[');
  });

  it('-q draws no progress even on a TTY, and keeps the result; -v says which store and profile, never a secret', async () => {
    const storage = await storeWithRuns(60);
    const quiet = fakeIo(true);
    expect(await runCli(['verify', '-q'], quiet, { storage })).toBe(0);
    expect(quiet.err).toBe('');
    expect(quiet.out).toMatch(/0 problems/);
    const verbose = fakeIo(false);
    expect(await runCli(['runs', '-v'], verbose, { storage })).toBe(0);
    expect(verbose.err).toMatch(/^savepoint runs: store memory, profile default, \d+ ms, exit 0\n$/);
    expect(storeLabel({ postgres: 'postgres://agent:hunter2-secret@db.example:5432/runs' }, {}, undefined)).toBe(
      'PostgreSQL store db.example:5432/runs',
    );
    expect(storeLabel({}, { SAVEPOINT_POSTGRES_URL: 'postgres://a:pw-secret@h/db' }, undefined)).not.toContain('pw-secret');
    expect(storeLabel({ github: 'o/r@main' }, { GITHUB_TOKEN: 'ghp_secret' }, undefined)).toBe('GitHub store o/r@main');
  });

  it('draws a progress bar on stderr for many files on a TTY only, and clears it', async () => {
    const storage = await storeWithRuns(60);
    const tty = fakeIo(true);
    expect(await runCli(['verify'], tty, { storage })).toBe(0);
    expect(tty.err).toMatch(/\rverifying \[#+\.*\] \d+\/\d+/);
    expect(tty.err.endsWith('\r')).toBe(true);
    expect(tty.out).toMatch(/0 problems/);
    const pipe = fakeIo(false);
    await runCli(['verify'], pipe, { storage });
    expect(pipe.err).toBe('');
  });
});
