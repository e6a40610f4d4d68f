/**
 * "Safe by default": no positional argument ignored, RUN… limits prune and
 * verify, a missing run or store is exit 2 naming it, --keep-status checked against the
 * profile, a wrong --profile named, global flags anywhere, JSON errors, EPIPE.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type JsonValue } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { initialPhasedPayload, phasedWorkflow } from 'savepoint/phased-workflow';
import { runCli } from '../../src/cli/run.js';
import { captureIo } from '../support/cli-io.js';

const ROOT = new URL('../..', import.meta.url).pathname;

const io = captureIo;

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const x = io();
  const code = await runCli(args, x);
  return { code, out: x.out, err: x.err };
}

let dir = '';
let phasedDir = '';
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'savepoint-cli-safe-'));
  const storage = fsStorage({ dir });
  for (const runId of ['build-1', 'build-2', 'build-3']) {
    const w = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    for (let i = 1; i <= 3; i++)
      await w.checkpoint({ source: 'step_boundary', status: i === 3 ? 'completed' : 'in_progress', payload: { i } as JsonValue });
    await w.close();
  }
  await storage.close();
  phasedDir = mkdtempSync(join(tmpdir(), 'savepoint-cli-phased-'));
  const ps = fsStorage({ dir: phasedDir });
  const pw = createWriter({
    storage: ps,
    profile: phasedWorkflow,
    runId: '3b241101-e2bb-4255-8caf-4136c566a962',
    heartbeatIntervalMs: false,
    coalesceWindowMs: 0,
  });
  await pw.checkpoint({
    source: 'phase_complete',
    status: 'in_progress',
    payload: initialPhasedPayload('phase_0_intake', '2026-01-15T14:00:00.000Z'),
  });
  await pw.close();
  await ps.close();
}, 120_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(phasedDir, { recursive: true, force: true });
});

describe('no argument is ignored', () => {
  it('a stray positional is a usage error (exit 2) naming it', async () => {
    const r = await cli(['runs', 'extra-arg', '--dir', dir]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('"extra-arg"');
    expect((await cli(['show', 'build-1', 'x', '--dir', dir])).code).toBe(2);
  });

  it('global flags may come before the command', async () => {
    const r = await cli(['--dir', dir, 'runs', '--json']);
    expect(r.code).toBe(0);
    expect(
      JSON.parse(r.out)
        .runs.map((x: { runId: string }) => x.runId)
        .sort(),
    ).toEqual(['build-1', 'build-2', 'build-3']);
    expect((await cli(['--json', '--dir', dir, 'verify'])).code).toBe(0);
    expect((await cli(['--dir=' + dir, 'runs'])).code).toBe(0);
  });
});

describe('prune RUN… and verify RUN…', () => {
  it('prune plans only the runs named', async () => {
    const r = await cli(['prune', 'build-1', '--keep-last', '1', '--dir', dir, '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.out);
    expect(out.schemaVersion).toBe(1);
    expect(out.dryRun).toBe(true);
    expect(new Set(out.plan.snapshots.map((s: { snapshot: { runId: string } }) => s.snapshot.runId))).toEqual(new Set(['build-1']));
    expect(out.plan.totals.delete).toBe(2);
    const all = JSON.parse((await cli(['prune', '--keep-last', '1', '--dir', dir, '--json'])).out);
    expect(all.plan.totals.delete).toBe(6);
  });

  it('prune --apply on one run leaves the others whole', async () => {
    const copy = mkdtempSync(join(tmpdir(), 'savepoint-cli-prune-'));
    try {
      const storage = fsStorage({ dir: copy });
      for (const runId of ['a', 'b']) {
        const w = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
        for (let i = 1; i <= 3; i++) await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } as JsonValue });
        await w.close();
      }
      await storage.close();
      expect((await cli(['prune', 'a', '--keep-last', '1', '--apply', '-q', '--dir', copy])).code).toBe(0);
      const runs = JSON.parse((await cli(['runs', '--json', '--dir', copy])).out).runs as { runId: string; snapshots: number }[];
      expect(runs.find((x) => x.runId === 'a')!.snapshots).toBe(1);
      expect(runs.find((x) => x.runId === 'b')!.snapshots).toBe(3);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('verify RUN… checks only those runs; a missing run is exit 2 naming it', async () => {
    const one = JSON.parse((await cli(['verify', 'build-2', '--dir', dir, '--json'])).out);
    const all = JSON.parse((await cli(['verify', '--dir', dir, '--json'])).out);
    expect(one.checked).toBeGreaterThan(0);
    expect(one.checked).toBeLessThan(all.checked);
    const typo = await cli(['verify', 'buld-1', '--dir', dir]);
    expect(typo.code).toBe(2);
    expect(typo.err).toContain('"buld-1"');
    expect((await cli(['prune', 'buld-1', '--keep-last', '1', '--dir', dir])).code).toBe(2);
    expect((await cli(['verify', 'build-1', 'buld-1', '--dir', dir])).code).toBe(2);
  });
});

describe('a store that does not exist', () => {
  it('--dir of a missing directory is exit 2 naming the path', async () => {
    const missing = join(dir, 'nonexistent');
    const r = await cli(['runs', '--dir', missing]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(missing);
    expect(r.err).not.toContain('ENOENT');
  });

  it('verify of a directory that holds no store is exit 2, not "0 problems"', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'savepoint-cli-empty-'));
    try {
      const r = await cli(['verify', '--dir', empty]);
      expect(r.code).toBe(2);
      expect(r.err).toContain(empty);
      expect(r.out).not.toContain('0 problems');
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('values are checked against the profile', () => {
  it('--keep-status must be a status of the profile', async () => {
    const r = await cli(['prune', '--keep-status', 'bogus', '--dir', dir]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('"bogus"');
    expect(r.err).toContain('completed');
    expect((await cli(['prune', '--keep-status', 'completed', '--dir', dir])).code).toBe(0);
  });

  it('a wrong --profile is named: these files look like phasedWorkflow', async () => {
    // The default profile sees the same checkpoints/<run>/ files, fails their schema and says which profile fits.
    const r = await cli(['verify', '--dir', phasedDir]);
    expect(r.code).toBe(1);
    expect(r.err).toContain('These files look like phasedWorkflow');
    const json = JSON.parse((await cli(['verify', '--dir', phasedDir, '--json'])).out);
    expect(json.hint).toContain('--profile phasedWorkflow');
    const right = await cli(['verify', '--dir', phasedDir, '--profile', 'phasedWorkflow']);
    expect(right.code).toBe(0);
  });
});

describe('errors under --json', () => {
  it('are one JSON object on stderr with reasonCode and exitCode', async () => {
    const r = await cli(['verify', 'buld-1', '--dir', dir, '--json']);
    expect(r.code).toBe(2);
    const e = JSON.parse(r.err);
    expect(e).toMatchObject({ schemaVersion: 1, error: { command: 'verify', reasonCode: 'checkpoint_not_found', exitCode: 2 } });
    const usage = JSON.parse((await cli(['runs', 'x', '--json', '--dir', dir])).err);
    expect(usage.error.reasonCode).toBe('checkpoint_config_invalid');
  });
});

describe('a closed pipe', () => {
  it('ends quietly (no EPIPE crash) when the reader stops early', async () => {
    const big = mkdtempSync(join(tmpdir(), 'savepoint-cli-pipe-'));
    try {
      const storage = fsStorage({ dir: big });
      const w = createWriter({ storage, profile: defaultProfile, runId: 'r', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
      // More output than a pipe buffers (64 KiB), so the CLI is still writing when the reader leaves.
      await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { text: 'x'.repeat(400_000) } as JsonValue });
      await w.close();
      await storage.close();
      expect(existsSync(join(ROOT, 'src/cli/main.ts'))).toBe(true);
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'show', 'r', '--json', '--dir', big], {
          cwd: ROOT,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let err = '';
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        // Read one chunk, then close our end like `head -2` does.
        child.stdout.once('data', () => child.stdout.destroy());
        child.on('close', (c) => resolve({ code: c, stderr: err }));
      });
      expect(stderr).not.toContain('EPIPE');
      expect(stderr).not.toContain('Unhandled');
      expect(code).toBe(0);
    } finally {
      rmSync(big, { recursive: true, force: true });
    }
  }, 120_000);
});

describe('diff RUN A B', () => {
  it('shows the payload paths that changed between two snapshots, as text and --json', async () => {
    const text = await cli(['diff', 'build-1', '1', 'latest', '--dir', dir]);
    expect(text.code).toBe(0);
    expect(text.out).toContain('~ /payload/i 1 → 3');
    const json = JSON.parse((await cli(['diff', 'build-1', '1', '2', '--dir', dir, '--json', '--all'])).out);
    expect(json.schemaVersion).toBe(1);
    expect(json.changes.map((c: { path: string }) => c.path)).toEqual(expect.arrayContaining(['/payload/i', '/sequence']));
    expect((await cli(['diff', 'build-1', '1', '99', '--dir', dir])).code).toBe(2);
    expect((await cli(['diff', 'nope', '1', '2', '--dir', dir])).code).toBe(2);
    expect((await cli(['diff', 'build-1', '1', '--dir', dir])).code).toBe(2);
  });
});

describe('--json outputs validate against schemas/cli/<command>.v1.json', () => {
  it('runs, verify, prune, diff, ls, show, resume, import, checkpoint and a JSON error', async () => {
    const { readFileSync } = await import('node:fs');
    const { default: Ajv2020 } = await import('ajv/dist/2020.js');
    const ajv = new (Ajv2020 as unknown as typeof import('ajv').default)({ strict: false });
    const compiled = new Map<string, ReturnType<typeof ajv.compile>>();
    const check = (name: string, text: string): void => {
      if (!compiled.has(name))
        compiled.set(name, ajv.compile(JSON.parse(readFileSync(join(ROOT, 'schemas/cli', `${name}.v1.json`), 'utf8'))));
      const validate = compiled.get(name)!;
      const ok = validate(JSON.parse(text));
      expect(validate.errors ?? [], name).toEqual([]);
      expect(ok).toBe(true);
    };
    check('runs', (await cli(['runs', '--json', '--dir', dir])).out);
    check('verify', (await cli(['verify', '--json', '--dir', dir])).out);
    check('verify', (await cli(['verify', '--json', '--dir', phasedDir])).out);
    check('prune', (await cli(['prune', '--keep-last', '1', '--json', '--dir', dir])).out);
    check('diff', (await cli(['diff', 'build-1', '1', 'latest', '--json', '--dir', dir])).out);
    check('error', (await cli(['verify', 'buld-1', '--json', '--dir', dir])).err);
    check('ls', (await cli(['ls', 'build-1', '--json', '--dir', dir])).out);
    check('show', (await cli(['show', 'build-1', '--json', '--dir', dir])).out);
    check('resume', (await cli(['resume', 'build-1', '--json', '--dir', dir])).out);
    check('import', (await cli(['import', '--json', '--dir', phasedDir, '--profile', 'phasedWorkflow'])).out);
    const scratch = mkdtempSync(join(tmpdir(), 'savepoint-cli-schema-'));
    const io = captureIo();
    io.readStdin = async () => '{"step":1}';
    expect(await runCli(['checkpoint', 'fresh-1', '--source', 'manual', '--payload', '-', '--json', '--dir', scratch], io), io.err).toBe(0);
    check('checkpoint', io.out);
    rmSync(scratch, { recursive: true, force: true });
    expect(() => check('runs', JSON.stringify({ schemaVersion: 2, profile: 'x', runs: [] }))).toThrow();
  });
});

describe('no secret is printed', () => {
  it('a PostgreSQL password or GitHub token never reaches stdout or stderr, text or --json', async () => {
    // Port 1 on 127.0.0.1 refuses the connection: the error path that used to be most tempting to echo the URL.
    for (const json of [[], ['--json']]) {
      const pg = await cli(['runs', '--postgres', 'postgres://agent:hunter2-secret@127.0.0.1:1/db', ...json]);
      expect(pg.code).not.toBe(0);
      expect(pg.out + pg.err).not.toContain('hunter2-secret');
    }
    const x = io();
    (x as { env: Record<string, string> }).env = { GITHUB_TOKEN: 'ghp_supersecret123', GITHUB_API_URL: 'http://127.0.0.1:1' };
    const code = await runCli(['verify', 'buld-1', '--github', 'o/r', '--json'], x);
    expect(code).not.toBe(0);
    expect(x.out + x.err).not.toContain('ghp_supersecret123');
  }, 60_000);
});
