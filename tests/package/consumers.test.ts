import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, ROOT } from '../support/build.js';

/**
 * A consumer project in a temp directory installs the packed tarball (offline, from the
 * npm cache `npm ci` filled, so no test reaches the network) and uses the package the
 * way users do: `import` from ESM and `require` from CommonJS.
 */
describe('the packed package in a consumer project', () => {
  let dir = '';

  beforeAll(async () => {
    await ensureBuilt();
    dir = mkdtempSync(join(tmpdir(), 'savepoint-consumer-'));
    execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], { cwd: ROOT, stdio: 'ignore' });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'))!;
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', `./${tarball}`], { cwd: dir, stdio: 'ignore' });
  }, 300_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const scenario = `
    const storage = memoryStorage();
    const draft = { id: newSnapshotId(Date.now()), runId: 'run-1', sequence: 1, createdAt: new Date().toISOString(),
      source: 'manual', sourceDetails: [], status: 'in_progress', payload: { step: 2 } };
    const { bytes } = await defaultProfile.document.encode(draft);
    await storage.put(defaultProfile.layout.latestKey('run-1'), bytes, { ifAbsent: true });
    const back = await readSnapshot(storage, defaultProfile, defaultProfile.layout.latestKey('run-1'));
    if (back.payload.step !== 2) throw new Error('round trip failed');
    let code = '';
    try { assertKey('../escape'); } catch (err) { code = err.reasonCode; }
    const { fsStorage } = SUBPATH_FS;
    console.log(JSON.stringify({ ok: true, code, fs: typeof fsStorage, testing: typeof SUBPATH_TESTING.faultyStorage }));
  `;

  it('works from ESM (import)', () => {
    const file = join(dir, 'esm.mjs');
    writeFileSync(
      file,
      `import { memoryStorage, defaultProfile, newSnapshotId, readSnapshot, assertKey } from 'savepoint';
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
      `const { memoryStorage, defaultProfile, newSnapshotId, readSnapshot, assertKey } = require('savepoint');
       const SUBPATH_FS = require('savepoint/fs'); const SUBPATH_TESTING = require('savepoint/testing');
       (async () => { ${scenario} })().catch((e) => { console.error(e); process.exit(1); });`,
    );
    const out = JSON.parse(execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8' })) as Record<string, unknown>;
    expect(out).toMatchObject({ ok: true, code: 'checkpoint_key_invalid', testing: 'function' });
  });
});
