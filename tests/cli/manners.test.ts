import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { phasedWorkflow } from 'savepoint/phased-workflow';
import { runCli } from '../../src/cli/run.js';
import { captureIo, runCliCaptured } from '../support/cli-io.js';
import { PHASED_RUN, putFixtures, tempDirs } from '../support/foreign.js';
import { manualClock } from 'savepoint/testing';

const tempDir = tempDirs('savepoint-manners-');

/** A store with runs `old`, `mid` and `new`, written in that order (a manual clock an hour apart). */
async function threeRuns(): Promise<string> {
  const dir = tempDir();
  const storage = fsStorage({ dir });
  const clock = manualClock(Date.parse('2026-01-01T00:00:00Z'));
  for (const runId of ['mid', 'new', 'old'].sort((a, b) => ['old', 'mid', 'new'].indexOf(a) - ['old', 'mid', 'new'].indexOf(b))) {
    const writer = createWriter({ storage, runId, clock, coalesceWindowMs: 0, heartbeatIntervalMs: false });
    await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { runId } });
    await writer.close();
    await clock.advance(3_600_000);
  }
  await storage.close();
  return dir;
}

describe('CLI manners', () => {
  it('an unknown command or flag is one line with a "did you mean" and where help is, not the whole help', async () => {
    const command = await runCliCaptured(['verfy']);
    expect(command.code).toBe(2);
    expect(command.err).toBe('savepoint: unknown command "verfy" (did you mean "verify"?). Run "savepoint --help" for the commands.\n');
    const flag = await runCliCaptured(['runs', '--jsn']);
    expect(flag.code).toBe(2);
    expect(flag.err).toBe('savepoint runs: unknown flag --jsn (did you mean --json?). Run "savepoint runs --help" for its options.\n');
    const value = await runCliCaptured(['runs', '--json=yes']);
    expect(value.err.trim().split('\n')).toHaveLength(1);
    expect(value.err).toContain('--json takes no value');
    const json = await runCliCaptured(['runs', '--jsn', '--json']);
    expect(JSON.parse(json.err).error).toMatchObject({ reasonCode: 'checkpoint_config_invalid', exitCode: 2 });
  });

  it('a negative --seq, --keep-last or --port says what the value must be, not "argument is ambiguous"', async () => {
    const dir = await threeRuns();
    for (const [args, expected] of [
      [['show', 'old', '--seq', '-3'], '--seq takes a positive integer'],
      [['prune', '--keep-last', '-1'], '--keep-last'],
      [['ui', '--port', '-5'], '--port'],
    ] as const) {
      const r = await runCliCaptured([...args, '--dir', dir]);
      expect(r.code).toBe(2);
      expect(r.err).toContain(expected);
      expect(r.err).not.toContain('ambiguous');
    }
  });

  it('SAVEPOINT_DIR names the store; --dir wins over it; SAVEPOINT_DIR with SAVEPOINT_POSTGRES_URL asks to choose', async () => {
    const dir = await threeRuns();
    const withEnv = async (args: string[], env: Record<string, string>): Promise<{ code: number; out: string; err: string }> => {
      const io = captureIo();
      (io as { env: Record<string, string> }).env = env;
      const code = await runCli(args, io);
      return { code, out: io.out, err: io.err };
    };
    const runs = await withEnv(['runs', '--json'], { SAVEPOINT_DIR: dir });
    expect(runs.code).toBe(0);
    expect((JSON.parse(runs.out) as { runs: unknown[] }).runs).toHaveLength(3);
    const flag = await withEnv(['runs', '--dir', join(dir, 'nowhere')], { SAVEPOINT_DIR: dir });
    expect(flag.code).toBe(2);
    expect(flag.err).toContain('nowhere');
    const both = await withEnv(['runs'], { SAVEPOINT_DIR: dir, SAVEPOINT_POSTGRES_URL: 'postgres://u@h/db' });
    expect(both.code).toBe(2);
    expect(both.err).toContain('SAVEPOINT_DIR and SAVEPOINT_POSTGRES_URL are both set');
  });

  it('runs lists the newest activity first', async () => {
    const dir = await threeRuns();
    const json = JSON.parse((await runCliCaptured(['runs', '--json', '--dir', dir])).out) as { runs: { runId: string }[] };
    expect(json.runs.map((r) => r.runId)).toEqual(['new', 'mid', 'old']);
    const table = (await runCliCaptured(['runs', '--dir', dir])).out.split('\n').slice(1, 4);
    expect(table.map((l) => l.split(/\s+/)[0])).toEqual(['new', 'mid', 'old']);
  });

  it('ls streams: the first rows are printed after a window of reads, not after reading the whole run', async () => {
    const inner = memoryStorage();
    const writer = createWriter({ storage: inner, runId: 'long', coalesceWindowMs: 0, heartbeatIntervalMs: false, autoRetention: false });
    for (let i = 0; i < 120; i++) await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { i } });
    await writer.close();
    let gets = 0;
    const storage: StorageAdapter = { ...inner, get: (k) => (gets++, inner.get(k)) };
    const io = captureIo();
    let readsAtFirstRow: number | undefined;
    const lines: string[] = [];
    (io as { stdout: unknown }).stdout = {
      isTTY: false,
      write: (t: string) => {
        for (const l of t.split('\n').filter(Boolean)) {
          if (!l.startsWith('SEQ') && readsAtFirstRow === undefined) readsAtFirstRow = gets;
          lines.push(l);
        }
        return true;
      },
    };
    expect(await runCli(['ls', 'long'], io, { storage })).toBe(0);
    expect(readsAtFirstRow).toBeLessThan(60);
    // In sequence order, every snapshot once, although the default layout's names carry no sequence.
    expect(lines.slice(1).map((l) => Number(l.trim().split(/\s+/)[0]))).toEqual(Array.from({ length: 120 }, (_, i) => i + 1));
  });

  it('a store holding another profile\'s runs answers "no default runs — try --profile phasedWorkflow"', async () => {
    const dir = tempDir();
    const storage = fsStorage({ dir });
    await putFixtures(storage, 'phased-workflow', { [`checkpoints/${PHASED_RUN}/latest.json`]: 'latest.json' });
    await storage.close();
    const r = await runCliCaptured(['runs', '--dir', dir]);
    expect(r.code).toBe(0);
    expect(r.out).toBe(`No default runs in ${dir} — try --profile phasedWorkflow.\n`);
  });

  it('errors name CLI flags and commands, never library-only options', async () => {
    const dir = await threeRuns();
    const storage = fsStorage({ dir });
    const holder = createWriter({ storage, runId: 'old', heartbeatIntervalMs: false });
    expect((await holder.open()).ok).toBe(true);
    try {
      const locked = await runCliCaptured(['checkpoint', 'old', '--source', 'manual', '--dir', dir]);
      expect(locked.code).toBe(1);
      expect(locked.err).toContain('savepoint unlock RUN --force');
      expect(locked.err).not.toMatch(/createWriter|takeover/);
    } finally {
      await holder.close();
      await storage.close();
    }
    const uuid = await runCliCaptured(['show', 'not-a-uuid', '--profile', 'phasedWorkflow', '--dir', dir]);
    expect(uuid.code).toBe(2);
    expect(uuid.err).toContain('UUID v4');
    expect(uuid.err).not.toContain('uuidRunIds');
    expect(phasedWorkflow.name).toBe('phasedWorkflow');
  });

  it('prune --apply ends with a newline and honours -q (totals only)', async () => {
    const dir = await threeRuns();
    const full = await runCliCaptured(['prune', '--keep-last', '1', '--apply', '--dir', dir]);
    expect(full.code).toBe(0);
    expect(full.out.endsWith('\n')).toBe(true);
    const quiet = await runCliCaptured(['prune', '--keep-last', '1', '--apply', '-q', '--dir', dir]);
    expect(quiet.code).toBe(0);
    expect(quiet.out.endsWith('\n')).toBe(true);
    expect(quiet.out).not.toContain('Retention apply');
    expect(quiet.out.trim().split('\n')).toHaveLength(2);
  });

  it('unlock --json has the documented forced field when the run was not locked', async () => {
    const dir = await threeRuns();
    const r = await runCliCaptured(['unlock', 'old', '--json', '--dir', dir]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ runId: 'old', removed: false, forced: false, lock: null });
  });

  it('a malformed --postgres URL is a configuration error (exit 2), never echoed', async () => {
    for (const url of ['not a url', 'http://host/db', 'postgres://']) {
      const r = await runCliCaptured(['runs', '--json', '--postgres', url]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.err).error.reasonCode).toBe('checkpoint_config_invalid');
      expect(r.err).not.toContain(url === 'postgres://' ? 'postgres:///' : url);
    }
  });

  it('a run whose only file is a symbolic link as latest.json is reported by verify, not invisible', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'checkpoints/r1'), { recursive: true });
    writeFileSync(join(dir, 'elsewhere.json'), '{}');
    symlinkSync(join(dir, 'elsewhere.json'), join(dir, 'checkpoints/r1/latest.json'));
    for (const args of [['verify'], ['verify', 'r1']]) {
      const r = await runCliCaptured([...args, '--json', '--dir', dir]);
      expect(r.code).toBe(1);
      const json = JSON.parse(r.out) as { problems: number; findings: { key: string; message: string }[] };
      expect(json.problems).toBe(1);
      expect(json.findings[0]!.key).toBe('checkpoints/r1/latest.json');
      expect(json.findings[0]!.message).toMatch(/symbolic link/);
    }
  });
});
