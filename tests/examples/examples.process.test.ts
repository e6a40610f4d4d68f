import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/build.js';
import { freshTable, hasPostgres, usePostgres } from '../support/postgres-fixture.js';

const pg = hasPostgres ? usePostgres() : undefined;

/**
 * Every runnable example runs as its own process, exactly as the README tells a reader to
 * run it (`npx tsx examples/<name>.ts`), and must exit 0 and print what it promises.
 * (crash-and-resume, handoff-markdown and progress-protocol-stop-hook are run by their
 * components' tests; custom-adapter and unit-testing also have vitest files of their own.)
 */
const EXAMPLES: Record<string, RegExp[]> = {
  readme: [/incomplete runs on the next start: run-42/],
  quickstart: [
    /checkpoint after "run tests" failed: checkpoint_storage_unavailable/,
    /resuming agent-run-1 from snapshot #3/,
    /checkpoint #5 after "open pull request" — run completed/,
  ],
  writing: [/latest: #4 step_boundary completed/, /\[heartbeat\] the state has not changed/],
  retention: [/retention is idempotent/],
  'plan-executor': [/incomplete plans now: 0/, /imported plan 03/],
  'snapshot-lifecycle': [/retention \(snapshotLifecycle\): history \d+ → 50 files/, /resume: at after:/],
  'phased-workflow': [/read back whole: true/, /preserved run: \d+ checkpoint files/],
  'github-phased-workflow': [/resume at human_review/, /0 schema violations/],
  encrypted: [
    /latest.json on disk holds the plaintext: false/,
    /with another key: checkpoint_encryption_key_missing/,
    /the new key resumes at snapshot #2/,
  ],
  'packed-layout': [
    /after the restart: 40 messages, the last "reply to: message 20"/,
    /60 checkpoints kept/,
    /files in the directory: \.sp\\packed\\manifest, \.sp\\packed\\seg-\d+ \(no file per key\)/,
    /snapshot-lifecycle on the packed store: checkpoint_unsupported/,
  ],
  'custom-adapter': [/racing replaces: A fulfilled, B rejected \(checkpoint_conflict\)/, /oversize put refused: checkpoint_too_large/],
};

/** The environment without anything that would point an example at a real service. */
function offlineEnv(): NodeJS.ProcessEnv {
  const { GITHUB_TOKEN: _t, SAVEPOINT_GITHUB_REPO: _r, GITHUB_API_URL: _u, ...env } = process.env;
  return { ...env, NO_COLOR: '1' };
}

function run(name: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(ROOT, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(ROOT, 'examples', `${name}.ts`)],
      { cwd: ROOT, env: { ...offlineEnv(), ...env }, timeout: 120_000, encoding: 'utf8' },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

describe('examples', () => {
  it.each(Object.keys(EXAMPLES))(
    '%s runs and exits 0',
    async (name) => {
      const { code, out } = await run(name);
      expect(code, out).toBe(0);
      for (const pattern of EXAMPLES[name]!) expect(out).toMatch(pattern);
    },
    150_000,
  );
});

describe.skipIf(!hasPostgres)('examples on the PostgreSQL the tests start', () => {
  it('langgraph-postgres: a tool call, an interrupt, the thread resumed by another process', async () => {
    const { code, out } = await run('langgraph-postgres', {
      SAVEPOINT_POSTGRES_URL: pg!.server().url,
      SAVEPOINT_POSTGRES_TABLE: freshTable('example'),
    });
    expect(code, out).toBe(0);
    expect(out).toMatch(/tool called \(60 EUR\), paused at review: "approve a refund of 60 EUR\?"/);
    expect(out).toMatch(/resumed, refund of 60 EUR approved/);
    expect(out).toMatch(/finished=true, \d+ checkpoints, 1 tool result/);
    // Two processes: the one that paused and the one that resumed.
    const pids = [...out.matchAll(/process (\d+):/g)].map((m) => m[1]);
    expect(new Set(pids).size).toBe(2);
    expect(out).not.toContain(pg!.server().url);
  }, 150_000);
});
