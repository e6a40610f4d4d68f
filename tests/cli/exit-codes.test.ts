/**
 * docs/cli.md's exit codes, command by command: 0 success, 1 problems found or the operation
 * failed, 2 bad usage or something named that does not exist, 3 a run held by a live writer.
 * Every command meets an unknown flag (2) and, where it takes a RUN, a run that is not there (2).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { COMMANDS, runCli } from '../../src/cli/run.js';
import { captureIo } from '../support/cli-io.js';

let dir = '';
let damaged = '';
async function code(args: string[], stdin = ''): Promise<number> {
  const io = captureIo();
  io.readStdin = async () => stdin;
  return runCli(args, io);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'savepoint-cli-exit-'));
  const storage = fsStorage({ layout: 'files', dir });
  const w = createWriter({ storage, profile: defaultProfile, runId: 'r1', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (let i = 1; i <= 3; i++) await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } });
  await w.close();
  await storage.close();
  damaged = mkdtempSync(join(tmpdir(), 'savepoint-cli-exit-bad-'));
  const bad = fsStorage({ layout: 'files', dir: damaged });
  const w2 = createWriter({ storage: bad, profile: defaultProfile, runId: 'r1', heartbeatIntervalMs: false });
  await w2.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 1 } });
  await w2.close();
  // Closed before the file is damaged behind its back: an open journal store replays its records over such a change when reopened.
  await bad.close();
  writeFileSync(join(damaged, 'checkpoints/r1/latest.json'), '{"not":"a snapshot"}');
}, 60_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(damaged, { recursive: true, force: true });
});

describe('exit codes, per command', () => {
  it.each([
    ['runs', ['runs']],
    ['ls', ['ls', 'r1']],
    ['show', ['show', 'r1', '--seq', '2']],
    ['verify', ['verify', 'r1']],
    ['prune (dry run)', ['prune', 'r1', '--keep-last', '1']],
    ['resume', ['resume', 'r1']],
    ['diff', ['diff', 'r1', '1', 'latest']],
    ['unlock (not locked)', ['unlock', 'r1']],
  ])('%s: 0 on success', async (_, args) => {
    expect(await code([...args, '--dir', dir])).toBe(0);
  });

  it('checkpoint: 0 on success, 1 when the write is refused by the profile', async () => {
    const scratch = mkdtempSync(join(tmpdir(), 'savepoint-cli-exit-cp-'));
    try {
      expect(await code(['checkpoint', 'new-run', '--source', 'manual', '--payload', '-', '--dir', scratch], '{"a":1}')).toBe(0);
      expect(await code(['checkpoint', 'new-run', '--source', 'no_such_trigger', '--payload', '-', '--dir', scratch], '{"a":1}')).not.toBe(
        0,
      );
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  it('verify: 1 when it finds a problem', async () => {
    expect(await code(['verify', '--dir', damaged])).toBe(1);
  });

  it.each(COMMANDS.filter((c) => c.name !== 'ui').map((c) => [c.name]))('%s: 2 for an unknown flag', async (name) => {
    expect(await code([name, '--no-such-flag', '--dir', dir])).toBe(2);
  });

  it.each([['ls'], ['show'], ['verify'], ['prune'], ['resume'], ['unlock'], ['import']])(
    '%s: 2 for a run that does not exist',
    async (name) => {
      const args = name === 'import' ? [name, 'no-such-run', '--profile', 'phasedWorkflow'] : [name, 'no-such-run'];
      expect(await code([...args, '--dir', dir])).toBe(2);
    },
  );

  it('diff: 2 for a snapshot that does not exist; every command: 2 for an unknown command or a store directory that does not exist', async () => {
    expect(await code(['diff', 'r1', '1', '99', '--dir', dir])).toBe(2);
    expect(await code(['no-such-command', '--dir', dir])).toBe(2);
    expect(await code(['runs', '--dir', join(dir, 'nope')])).toBe(2);
  });
});
