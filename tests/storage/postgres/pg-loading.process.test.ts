/**
 * How `savepoint/postgres` loads its optional peer `pg`: a store made from a connection string
 * starts loading it when made, so its first call does not wait for the module; without `pg`,
 * making the store still succeeds (no unhandled rejection) and the first call says `npm i pg`.
 * Each case runs in a fresh process (tests/fixtures/postgres/pg-loading-child.ts).
 */
import { spawnSync } from 'node:child_process';
import * as nodeModule from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const CHILD = join(ROOT, 'tests', 'fixtures', 'postgres', 'pg-loading-child.ts');

function runChild(mode: 'present' | 'missing'): { stdout: string; status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', CHILD, mode], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  return { stdout: r.stdout.trim(), status: r.status, stderr: r.stderr };
}

describe('loading pg', () => {
  it('a store made from a connection string loads pg before its first call', () => {
    const r = runChild('present');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('loaded');
    expect(r.status).toBe(0);
  });

  // The child makes pg unresolvable with a module hook (`module.register`, Node 20.6 and later).
  const withHooks = typeof (nodeModule as { register?: unknown }).register === 'function' ? it : it.skip;
  withHooks('without pg, the store is made and its first call fails with checkpoint_config_invalid naming pg', () => {
    const r = runChild('missing');
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('checkpoint_config_invalid pg');
    expect(r.status).toBe(0);
  });
});
