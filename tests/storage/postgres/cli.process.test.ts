/** The CLI pointed at a PostgreSQL store with `--postgres URL` or `SAVEPOINT_POSTGRES_URL`. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type JsonValue } from 'savepoint';
import { postgresStorage } from 'savepoint/postgres';
import { runCli } from '../../../src/cli/run.js';
import { hasPostgres, usePostgres } from '../../support/postgres-fixture.js';

const { server } = usePostgres();

async function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io = {
    stdout: { write: (t: string) => (stdout += t) },
    stderr: { write: (t: string) => (stderr += t) },
    readStdin: async () => '',
    env,
  };
  const code = await runCli(args, io);
  return { code, stdout, stderr };
}

(hasPostgres ? describe : describe.skip)('savepoint CLI on a PostgreSQL store', () => {
  beforeAll(async () => {
    const storage = postgresStorage({ connectionString: server().url, schema: 'cli', table: 'checkpoints_store' });
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'pg-run', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
    for (let step = 1; step <= 3; step++) {
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step } as JsonValue });
      expect(r.ok).toBe(true);
    }
    await writer.close();
    await storage.close();
  });
  const tableEnv = { SAVEPOINT_POSTGRES_SCHEMA: 'cli', SAVEPOINT_POSTGRES_TABLE: 'checkpoints_store' };

  it('lists, shows and verifies runs with --postgres URL', async () => {
    const runs = await cli(['runs', '--postgres', server().url, '--json'], tableEnv);
    expect(runs.code, runs.stderr).toBe(0);
    expect((JSON.parse(runs.stdout) as { runs: { runId: string; sequence: number }[] }).runs).toEqual([
      expect.objectContaining({ runId: 'pg-run', sequence: 3 }),
    ]);
    const ls = await cli(['ls', 'pg-run', '--postgres', server().url], tableEnv);
    expect(ls.code, ls.stderr).toBe(0);
    expect(ls.stdout).toMatch(/step_boundary/);
    const verify = await cli(['verify', '--postgres', server().url], tableEnv);
    expect(verify.code, verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/0 problems/);
  });

  it('takes the URL from SAVEPOINT_POSTGRES_URL when no store is named', async () => {
    const runs = await cli(['runs', '--json'], { ...tableEnv, SAVEPOINT_POSTGRES_URL: server().url });
    expect(runs.code, runs.stderr).toBe(0);
    expect(runs.stdout).toContain('pg-run');
  });

  it('never creates a table, and never prints the password', async () => {
    const secret = 'cli-s3cret-pw';
    const withPassword = server().url.replace('postgres@', `postgres:${secret}@`);
    const missing = await cli(['runs', '--postgres', withPassword], { SAVEPOINT_POSTGRES_TABLE: 'no_such_table' });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/checkpoint_config_invalid.*migrate\(\)/);
    const dead = await cli(['runs', '--postgres', withPassword.replace(`:${server().port}/`, ':1/')], tableEnv);
    expect(dead.code).toBe(1);
    expect(dead.stderr).toMatch(/checkpoint_storage_unavailable/);
    for (const o of [missing, dead]) expect(o.stdout + o.stderr).not.toContain(secret);
    const both = await cli(['runs', '--postgres', server().url, '--dir', '.']);
    expect(both.code).toBe(2);
  });
});
