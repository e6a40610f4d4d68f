import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../support/build.js';

/**
 * A consumer project in a temp directory gets the packed tarball unpacked as
 * `node_modules/savepoint` (what `npm install ./savepoint.tgz` puts there) and the
 * package's runtime dependencies linked from this checkout's `node_modules`, so the test
 * needs neither the network nor a warm npm cache; then it uses the package the way users
 * do: `import` from ESM and `require` from CommonJS, through the exports map.
 */
describe('the packed package in a consumer project', () => {
  let dir = '';

  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'savepoint-consumer-'));
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, stdio: 'ignore' });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    execFileSync('tar', ['-xzf', join(dir, tarball), '-C', modules]);
    renameSync(join(modules, 'package'), join(modules, 'savepoint'));
    for (const dep of ['zod', 'ajv', 'fflate']) symlinkSync(join(ROOT, 'node_modules', dep), join(modules, dep), 'dir');
  }, 300_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const scenario = `
    const storage = memoryStorage();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-1' });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 2 } });
    await writer.close();
    if (!r.ok) throw new Error('checkpoint failed');
    const back = await readSnapshot(storage, defaultProfile, defaultProfile.layout.latestKey('run-1'));
    const plan = await planResume({ storage, profile: defaultProfile, runId: 'run-1' });
    if (back.payload.step !== 2 || plan.snapshot.payload.step !== 2) throw new Error('round trip failed');
    let code = '';
    try { assertKey('../escape'); } catch (err) { code = err.reasonCode; }
    const { fsStorage } = SUBPATH_FS;
    console.log(JSON.stringify({ ok: true, code, fs: typeof fsStorage, testing: typeof SUBPATH_TESTING.faultyStorage }));
  `;

  it('works from ESM (import)', () => {
    const file = join(dir, 'esm.mjs');
    writeFileSync(
      file,
      `import { memoryStorage, defaultProfile, createWriter, planResume } from 'savepoint';
       import { readSnapshot, assertKey } from 'savepoint/toolkit';
       import * as fsSub from 'savepoint/fs';
       import * as testingSub from 'savepoint/testing';
       const SUBPATH_FS = fsSub; const SUBPATH_TESTING = testingSub;
       ${scenario}`,
    );
    const out = JSON.parse(execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8' })) as Record<string, unknown>;
    expect(out).toMatchObject({ ok: true, code: 'checkpoint_key_invalid', testing: 'function' });
  });

  it('works from CommonJS (require)', () => {
    const file = join(dir, 'cjs.cjs');
    writeFileSync(
      file,
      `const { memoryStorage, defaultProfile, createWriter, planResume } = require('savepoint');
       const { readSnapshot, assertKey } = require('savepoint/toolkit');
       const SUBPATH_FS = require('savepoint/fs'); const SUBPATH_TESTING = require('savepoint/testing');
       (async () => { ${scenario} })().catch((e) => { console.error(e); process.exit(1); });`,
    );
    const out = JSON.parse(execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8' })) as Record<string, unknown>;
    expect(out).toMatchObject({ ok: true, code: 'checkpoint_key_invalid', testing: 'function' });
  });

  it('type-checks savepoint and savepoint/testing without fast-check (an optional peer) installed, and a typed resume with an interface and no profile', () => {
    expect(existsSync(join(dir, 'node_modules', 'fast-check'))).toBe(false);
    mkdirSync(join(dir, 'node_modules', '@types'), { recursive: true });
    if (!existsSync(join(dir, 'node_modules', '@types', 'node')))
      symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(dir, 'node_modules', '@types', 'node'), 'dir');
    writeFileSync(
      join(dir, 'types.mts'),
      `import { memoryStorage } from 'savepoint';
       import { faultyStorage, manualClock, runStorageConformance, type StorageConformanceFastCheck, type StorageConformanceOptions } from 'savepoint/testing';
       const storage = faultyStorage(memoryStorage(), { at: 1 });
       const clock = manualClock('2026-01-01T00:00:00Z');
       const options: StorageConformanceOptions = { create: () => memoryStorage(), it: () => undefined };
       const fc: StorageConformanceFastCheck | undefined = undefined;
       export { storage, clock, options, fc, runStorageConformance };`,
    );
    // The typed resume of the README, as an app writes it: an interface, no profile named.
    writeFileSync(
      join(dir, 'typed-resume.mts'),
      `import { createWriter, findIncompleteRuns, memoryStorage, planResume } from 'savepoint';
       interface AgentState { step: number; notes: string[] }
       const storage = memoryStorage();
       const state: AgentState = { step: 1, notes: ['a'] };
       const typed = createWriter<AgentState>({ storage, runId: 'r' });
       await typed.checkpoint({ source: 'manual', status: 'in_progress', payload: state });
       const untyped = createWriter({ storage, runId: 'u' });
       await untyped.checkpoint({ source: 'manual', status: 'in_progress', payload: state });
       const plan = await planResume<AgentState>({ storage, runId: 'r' });
       const step: number = plan.snapshot.payload.step;
       const runs = await findIncompleteRuns<AgentState>({ storage });
       export { step, runs };`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'nodenext',
          moduleResolution: 'nodenext',
          target: 'es2022',
          types: ['node'],
          skipLibCheck: false,
        },
        files: ['types.mts', 'typed-resume.mts'],
      }),
    );
    const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = spawnSync(process.execPath, [tsc, '-p', dir], { cwd: dir, encoding: 'utf8' });
    expect(result.stdout + result.stderr).not.toMatch(/fast-check/);
    expect(result.status, result.stdout).toBe(0);
  }, 120_000);
});
