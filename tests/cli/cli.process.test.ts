import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type JsonValue, type LifecycleStatus } from 'savepoint';
import { initialPhasedPayload, phasedWorkflow, type PhaseOutputs, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { fsStorage } from 'savepoint/fs';
import { githubStorage } from 'savepoint/github';
import { handoffMarkdown, parseHandoff } from 'savepoint/handoff-markdown';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';
import { ensureBuilt, ROOT } from '../support/build.js';

/** Runs the built `savepoint` binary as a child process, the way a shell hook does. */
function cli(
  args: string[],
  options: { env?: Record<string, string>; stdin?: string; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [join(ROOT, 'dist', 'cli.js'), ...args],
      {
        env: { PATH: process.env.PATH ?? '', ...options.env },
        encoding: 'utf8',
        timeout: 60_000,
        ...(options.cwd ? { cwd: options.cwd } : {}),
      },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
    if (options.stdin !== undefined) child.stdin!.end(options.stdin);
    else child.stdin!.end();
  });
}

async function writeRun(storage: ReturnType<typeof fsStorage>, runId: string, steps: number, finalStatus: LifecycleStatus): Promise<void> {
  const writer = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (let i = 1; i <= steps; i++) {
    const r = await writer.checkpoint({
      source: 'step_boundary',
      status: i === steps ? finalStatus : 'in_progress',
      payload: { step: i } as JsonValue,
    });
    expect(r.ok).toBe(true);
  }
  await writer.close();
}

describe('savepoint CLI on a file-system store', () => {
  let dir = '';
  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'savepoint-cli-'));
    const storage = fsStorage({ dir, layout: 'files' });
    await writeRun(storage, 'run-a', 3, 'in_progress');
    await writeRun(storage, 'run-b', 2, 'completed');
    await storage.close();
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));

  it('prints help and exits 0; an unknown command or flag exits 2', async () => {
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    for (const c of ['runs', 'ls', 'show', 'verify', 'prune', 'resume', 'checkpoint']) expect(help.stdout).toContain(c);
    expect((await cli(['frobnicate'])).code).toBe(2);
    const badFlag = await cli(['runs', '--dir', dir, '--nope']);
    expect(badFlag.code).toBe(2);
    expect(badFlag.stderr).toContain('unknown flag --nope');
  });

  it('runs: a table with status, sequence, count, activity and size; --incomplete; --json', async () => {
    const table = await cli(['runs', '--dir', dir]);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^RUN\s+STATUS\s+SEQ\s+SNAPSHOTS\s+LAST ACTIVITY\s+SIZE$/m);
    expect(table.stdout).toMatch(/^run-a\s+in_progress\s+3\s+3\s+\S+Z\s+[\d.]+ KB$/m);
    expect(table.stdout).toMatch(/^run-b\s+completed\s+2\s+2\s/m);
    expect(table.stdout).not.toContain('\u001b['); // not a TTY: no color

    const incomplete = await cli(['runs', '--incomplete', '--dir', dir]);
    expect(incomplete.stdout).toContain('run-a');
    expect(incomplete.stdout).not.toContain('run-b');

    const json = JSON.parse((await cli(['runs', '--json', '--dir', dir])).stdout) as {
      runs: { runId: string; sequence: number; terminal: boolean }[];
    };
    // Newest activity first: the order is tests/cli/manners.test.ts's business.
    expect(json.runs.map((r) => [r.runId, r.sequence, r.terminal]).sort()).toEqual([
      ['run-a', 3, false],
      ['run-b', 2, true],
    ]);
  });

  it("reads the specs' ./checkpoints/<run>/ from the current directory when --dir is not given", async () => {
    const here = await cli(['runs', '--json'], { cwd: dir });
    expect((JSON.parse(here.stdout) as { runs: unknown[] }).runs).toHaveLength(2);
    const missing = await cli(['runs', '--dir', join(dir, 'no-such-store')]);
    // A store that does not exist is "not found" (exit 2), named by its path, not a raw ENOENT.
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(join(dir, 'no-such-store'));
  });

  it('ls and show', async () => {
    const ls = await cli(['ls', 'run-a', '--dir', dir]);
    expect(ls.code).toBe(0);
    expect(ls.stdout.trim().split('\n')).toHaveLength(4);
    expect(ls.stdout).toMatch(/^\s+2\s+\S+Z\s+step_boundary\s+in_progress\s+\d+ B\s+plain$/m);

    const show = await cli(['show', 'run-a', '--seq', '2', '--dir', dir]);
    expect(show.stdout).toMatch(/^sequence\s+2$/m);
    expect(show.stdout).toContain('"step": 2');
    const byId = JSON.parse((await cli(['show', 'run-a', '--json', '--dir', dir])).stdout) as {
      snapshot: { sequence: number; id: string };
    };
    expect(byId.snapshot.sequence).toBe(3);
    const again = JSON.parse((await cli(['show', 'run-a', '--id', byId.snapshot.id, '--json', '--dir', dir])).stdout) as {
      snapshot: { sequence: number };
    };
    expect(again.snapshot.sequence).toBe(3);
    expect((await cli(['show', 'run-a', '--seq', '99', '--dir', dir])).code).toBe(2); // a snapshot that does not exist, as diff
    expect((await cli(['show', '../etc', '--dir', dir])).code).toBe(2);
  });

  it('resume prints where and why', async () => {
    const r = await cli(['resume', 'run-a', '--dir', dir]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^restored\s+#3 /m);
    expect(r.stdout).toMatch(/^next sequence 4$/m);
    const json = JSON.parse((await cli(['resume', 'run-a', '--json', '--dir', dir])).stdout) as { nextSequence: number; payload: unknown };
    expect(json).toMatchObject({ nextSequence: 4, payload: { step: 3 } });
  });

  it('checkpoint writes the manual trigger with a payload from stdin; an unknown trigger is a usage error', async () => {
    const r = await cli(['checkpoint', 'run-a', '--source', 'manual', '--payload', '-', '--dir', dir], {
      stdin: '{"step": 4, "note": "from a hook"}',
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^written run-a #4 cp_/);
    const show = JSON.parse((await cli(['show', 'run-a', '--json', '--dir', dir])).stdout) as {
      snapshot: { source: string; payload: unknown };
    };
    expect(show.snapshot).toMatchObject({ source: 'manual', payload: { step: 4, note: 'from a hook' } });
    const bad = await cli(['checkpoint', 'run-a', '--source', 'phase_complete', '--dir', dir]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('no trigger "phase_complete"');
  });

  it('verify: 0 on a sound store; a corrupt file is reported with its reason code and exits 1', async () => {
    const ok = await cli(['verify', '--dir', dir]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/Checked \d+ files: 0 problems/);
    const historyDir = join(dir, 'checkpoints', 'run-b', 'history');
    const victim = readdirSync(historyDir).sort()[0]!;
    writeFileSync(join(historyDir, victim), '{"snapshot_id": "broken"');
    const bad = await cli(['verify', '--dir', dir]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toMatch(/problem\s+checkpoint_schema_invalid\s+checkpoints\/run-b\/history\//);
    const json = JSON.parse((await cli(['verify', 'run-b', '--json', '--dir', dir])).stdout) as { problems: number };
    expect(json.problems).toBe(1);
  });

  it('reads a Markdown hand-off store with --profile handoffMarkdown', async () => {
    const mdDir = mkdtempSync(join(tmpdir(), 'savepoint-cli-md-'));
    try {
      const storage = fsStorage({ dir: mdDir });
      const example = parseHandoff(readFileSync(new URL('../fixtures/handoff/chk-003.md', import.meta.url), 'utf8'));
      const { checkpoint: _c, created: _d, frontMatter: _f, ...payload } = example;
      const writer = createWriter({ storage, profile: handoffMarkdown, runId: 'quest', heartbeatIntervalMs: false });
      expect((await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload })).ok).toBe(true);
      await writer.close();
      await storage.close();
      const ls = await cli(['ls', 'quest', '--profile', 'handoffMarkdown', '--dir', mdDir]);
      expect(ls.code, ls.stderr).toBe(0);
      expect(ls.stdout).toMatch(/^\s+1\s+\S+Z\s+phase_completion\s+in_progress/m);
      const resume = await cli(['resume', 'quest', '--profile', 'handoffMarkdown', '--dir', mdDir]);
      expect(resume.stdout).toContain('CONTINUATION PROMPT');
      expect(resume.stdout).toContain('Phase 3: Implement game mechanics');
    } finally {
      rmSync(mdDir, { recursive: true, force: true });
    }
  });

  it('prune is a dry run by default and deletes only with --apply', async () => {
    const dry = await cli(['prune', '--keep-last', '1', '--dir', dir]);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('Dry run: nothing was changed');
    expect(dry.stdout).toMatch(/run-a\s+1\s+\S+\s+\S+\s+in_progress\s+delete/);
    expect(readdirSync(join(dir, 'checkpoints', 'run-a', 'history'))).toHaveLength(4);
    const applied = await cli(['prune', '--keep-last', '1', '--apply', '--dir', dir]);
    expect(applied.code).toBe(0);
    expect(readdirSync(join(dir, 'checkpoints', 'run-a', 'history'))).toHaveLength(1);
    const runs = JSON.parse((await cli(['runs', '--json', '--dir', dir])).stdout) as { runs: { runId: string; sequence: number }[] };
    expect(runs.runs.find((r) => r.runId === 'run-a')?.sequence).toBe(4);
  });
});

describe('savepoint CLI on a GitHub store (local emulator)', () => {
  const TOKEN = 'ghp_clitestsecret0000000000000000000000';
  let gh: GitHubEmulator;
  beforeAll(async () => {
    await ensureBuilt();
    gh = await startGitHubEmulator({ token: TOKEN, secondaryLimit: false });
    const storage = githubStorage({ owner: gh.owner, repo: gh.repo, token: TOKEN, baseUrl: gh.url, minWriteIntervalMs: 0 });
    const runId = '8d3f1c2a-4b5e-4c6d-9e7f-0a1b2c3d4e5f';
    const writer = createWriter({ storage, profile: phasedWorkflow, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    const payload = (phase: string, done: Partial<PhaseOutputs>): PhasedWorkflowPayload => {
      const empty = initialPhasedPayload(phase, '2026-11-22T00:00:00Z');
      const state = empty.state_snapshot;
      return { ...empty, state_snapshot: { ...state, phase_outputs: { ...state.phase_outputs, ...done }, cost_accumulated: 1.25 } };
    };
    expect(
      (
        await writer.checkpoint({
          source: 'phase_complete',
          status: 'in_progress',
          payload: payload('phase_0_intake', { phase_0: { ok: true } }),
        })
      ).ok,
    ).toBe(true);
    expect(
      (
        await writer.checkpoint({
          source: 'gate_decision',
          status: 'in_progress',
          payload: payload('phase_1_design', { phase_0: { ok: true } }),
        })
      ).ok,
    ).toBe(true);
    await writer.close();
    await storage.close();
  }, 300_000);
  afterAll(async () => {
    await gh?.close();
  });

  const env = (): Record<string, string> => ({ GITHUB_TOKEN: TOKEN, GITHUB_API_URL: gh.url });

  it('lists, shows, verifies and resumes without ever printing the token', async () => {
    const target = `${gh.owner}/${gh.repo}`;
    const outputs = [
      await cli(['runs', '--github', target, '--profile', 'phasedWorkflow'], { env: env() }),
      await cli(['ls', '8d3f1c2a-4b5e-4c6d-9e7f-0a1b2c3d4e5f', '--github', target, '--profile', 'phasedWorkflow'], { env: env() }),
      await cli(['verify', '--github', target, '--profile', 'phasedWorkflow'], { env: env() }),
      await cli(['resume', '8d3f1c2a-4b5e-4c6d-9e7f-0a1b2c3d4e5f', '--github', target, '--profile', 'phasedWorkflow'], { env: env() }),
    ];
    for (const o of outputs) {
      expect(o.code, o.stderr).toBe(0);
      expect(o.stdout + o.stderr).not.toContain(TOKEN);
    }
    expect(outputs[0]!.stdout).toMatch(/8d3f1c2a-4b5e-4c6d-9e7f-0a1b2c3d4e5f\s+in_progress\s+2\s+2/);
    expect(outputs[1]!.stdout).toMatch(/^\s+2\s+\S+Z\s+gate_decision \(|^\s+2\s+\S+Z\s+gate_decision\s/m);
    expect(outputs[2]!.stdout).toMatch(/0 problems/);
    expect(outputs[3]!.stdout).toMatch(/^resume at\s+phase_1_design_gate/m);
    expect(outputs[3]!.stdout).toContain('RESUME: Continuing run 8d3f1c2a-4b5e-4c6d-9e7f-0a1b2c3d4e5f');
  });

  it('refuses --github without a token, and a bad token fails without echoing it', async () => {
    const noToken = await cli(['runs', '--github', `${gh.owner}/${gh.repo}`], { env: { GITHUB_API_URL: gh.url } });
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain('GITHUB_TOKEN');
    const wrong = 'ghp_wrongtoken11111111111111111111111111';
    const bad = await cli(['runs', '--github', `${gh.owner}/${gh.repo}`], { env: { GITHUB_TOKEN: wrong, GITHUB_API_URL: gh.url } });
    expect(bad.code).toBe(1);
    expect(bad.stdout + bad.stderr).not.toContain(wrong);
  });
});

describe('savepoint ls with coalesced triggers under immutable history', () => {
  let dir = '';
  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'savepoint-cli-coalesced-'));
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5 }));

  it('lists each trigger with the snapshot it joined, whether latest or the next history entry records it', async () => {
    const storage = fsStorage({ dir });
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-c', heartbeatIntervalMs: false, coalesceWindowMs: 60_000 });
    for (const [source, step] of [
      ['step_boundary', 1],
      ['manual', 1],
      ['step_boundary', 2],
      ['error_boundary', 2],
    ] as const) {
      expect((await writer.checkpoint({ source, status: 'in_progress', payload: { step } })).ok).toBe(true);
    }
    await writer.close();
    await storage.close();
    const ls = JSON.parse((await cli(['ls', 'run-c', '--json', '--dir', dir])).stdout) as {
      snapshots: { sequence: number; source: string; coalesced: string[] }[];
    };
    expect(ls.snapshots.map((s) => [s.sequence, s.source, s.coalesced])).toEqual([
      [1, 'step_boundary', ['manual']], // carried by #2's history entry (coalesced_into #1)
      [2, 'step_boundary', ['error_boundary']], // in latest.json only
    ]);
    const table = await cli(['ls', 'run-c', '--dir', dir]);
    expect(table.stdout).toMatch(/^\s+1\s+\S+Z\s+step_boundary \(\+manual\)\s/m);
    expect(table.stdout).toMatch(/^\s+2\s+\S+Z\s+step_boundary \(\+error_boundary\)\s/m);
  });
});
