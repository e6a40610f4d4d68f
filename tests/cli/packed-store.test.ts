/**
 * The CLI on a directory the saver and defaultProfile's writer made packed (`fsStorage({ dir })` in
 * a new directory): every reading command opens it (the CLI's store takes no layout), and finds what
 * the file layout would show.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { cp, meta } from '../langgraph/checkpoints.js';
import { runCliCaptured } from '../support/cli-io.js';
import { scratchDirs } from '../support/scratch.js';

const newDir = scratchDirs('cli-packed');
let dir = '';

beforeAll(async () => {
  dir = newDir();
  const storage = fsStorage({ dir });
  const writer = createWriter({ storage, profile: defaultProfile, runId: 'r1', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (let i = 1; i <= 3; i++) await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } });
  await writer.close();
  const saver = new SavepointSaver({ storage });
  let config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
  for (let n = 1; n <= 3; n++) config = (await saver.put(config, cp(n, { n }), { ...meta, step: n }, {})) as typeof config;
  await storage.close();
}, 60_000);

describe('the CLI on a packed directory made by the writer and the saver', () => {
  it('holds a packed manifest and no file per key', () => {
    expect(existsSync(join(dir, '.sp\\packed\\manifest'))).toBe(true);
    expect(existsSync(join(dir, 'checkpoints'))).toBe(false);
    expect(existsSync(join(dir, 'langgraph'))).toBe(false);
  });

  it.each([
    ['runs', ['runs'], 'r1'],
    ['ls', ['ls', 'r1'], 'step_boundary'],
    ['show', ['show', 'r1', '--seq', '2'], '"i": 2'],
    ['verify', ['verify', 'r1'], 'Checked 5 files: 0 problems'],
    ['prune (dry run)', ['prune', 'r1', '--keep-last', '1'], 'keep-last: newest 1 per run'],
    ['resume', ['resume', 'r1'], 'restored      #3'],
    ['diff', ['diff', 'r1', '1', 'latest'], '~ /payload/i 1 → 3'],
    ['unlock (not locked)', ['unlock', 'r1'], 'run r1 is not locked'],
  ])('%s: exit 0, and what it read', async (_, args, shows) => {
    const { code, out, err } = await runCliCaptured([...args, '--dir', dir]);
    expect(code, err).toBe(0);
    expect(out).toContain(shows);
  });

  it('the saver’s thread: runs, ls, show and verify with --profile langgraph', async () => {
    for (const args of [['runs'], ['verify']]) {
      const { code, err } = await runCliCaptured([...args, '--profile', 'langgraph', '--dir', dir]);
      expect(code, `${args.join(' ')}: ${err}`).toBe(0);
    }
    const runs = await runCliCaptured(['runs', '--profile', 'langgraph', '--dir', dir, '--json']);
    const runId = (JSON.parse(runs.out) as { runs: { runId: string }[] }).runs[0]!.runId;
    for (const args of [
      ['ls', runId],
      ['show', runId],
    ]) {
      const { code, out, err } = await runCliCaptured([...args, '--profile', 'langgraph', '--dir', dir]);
      expect(code, `${args.join(' ')}: ${err}`).toBe(0);
      expect(out.length).toBeGreaterThan(0);
    }
  });
});
