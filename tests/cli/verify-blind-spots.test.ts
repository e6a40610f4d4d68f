import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { applyRetention, createWriter, defaultProfile, isCheckpointError, keepLast, planResume, planRetention } from 'savepoint';
import { buildInventory } from 'savepoint/toolkit';
import { fsStorage } from 'savepoint/fs';
import { faultyStorage } from 'savepoint/testing';
import { runCli } from '../../src/cli/run.js';
import { captureIo } from '../support/cli-io.js';

// Verify's blind spots, now closed. With latest.json replaced by a directory or a
// symbolic link, verify said 0 problems while every write was refused; an unreadable lock
// made planResume fail although latest.json was fine.

const profile = defaultProfile;
const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const io = captureIo;

interface VerifyJson {
  problems: number;
  findings: { key: string; level: string; reasonCode: string; message: string }[];
}

async function verify(dir: string): Promise<{ code: number; json: VerifyJson }> {
  const out = io();
  const code = await runCli(['verify', '--json', '--dir', dir], out);
  return { code, json: JSON.parse(out.out) as VerifyJson };
}

async function storeWithRun(steps = 3): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-verify-'));
  dirs.push(dir);
  const storage = fsStorage({ layout: 'files', dir });
  const writer = createWriter({ storage, profile, runId: 'run-a', heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (let i = 1; i <= steps; i++)
    expect((await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: i } })).ok).toBe(true);
  await writer.close();
  await storage.close();
  return dir;
}

const LATEST = 'checkpoints/run-a/latest.json';

describe('verify sees what the listing hides', () => {
  it('a clean store: 0 problems, exit 0', async () => {
    const dir = await storeWithRun();
    const { code, json } = await verify(dir);
    expect(json.findings).toEqual([]);
    expect(code).toBe(0);
  });

  it('latest.json replaced by a directory is a problem, exit 1', async () => {
    const dir = await storeWithRun();
    rmSync(join(dir, LATEST));
    mkdirSync(join(dir, LATEST));
    const { code, json } = await verify(dir);
    expect(code).toBe(1);
    expect(json.findings).toContainEqual(expect.objectContaining({ key: LATEST, level: 'problem', reasonCode: 'checkpoint_key_invalid' }));
    expect(json.findings.find((f) => f.key === LATEST)!.message).toContain('directory');
  });

  it('latest.json replaced by a symbolic link is a problem, exit 1', async () => {
    const dir = await storeWithRun();
    writeFileSync(join(dir, 'elsewhere.json'), '{}');
    rmSync(join(dir, LATEST));
    symlinkSync(join(dir, 'elsewhere.json'), join(dir, LATEST));
    const { code, json } = await verify(dir);
    expect(code).toBe(1);
    expect(json.findings).toContainEqual(expect.objectContaining({ key: LATEST, level: 'problem', reasonCode: 'checkpoint_key_invalid' }));
  });

  it('an index.json replaced by a directory is a problem too', async () => {
    const dir = await storeWithRun();
    rmSync(join(dir, 'checkpoints/run-a/index.json'));
    mkdirSync(join(dir, 'checkpoints/run-a/index.json'));
    const { code, json } = await verify(dir);
    expect(code).toBe(1);
    expect(json.findings).toContainEqual(
      expect.objectContaining({ key: 'checkpoints/run-a/index.json', reasonCode: 'checkpoint_key_invalid' }),
    );
  });
});

describe('an unreadable lock costs resume a scan, not the resume', () => {
  const lockKey = profile.layout.lockKey('run-a');

  it('a lock the store refuses to read (a symbolic link): planResume resumes from latest; verify warns', async () => {
    const dir = await storeWithRun();
    writeFileSync(join(dir, 'elsewhere.json'), '{}');
    symlinkSync(join(dir, 'elsewhere.json'), join(dir, lockKey));
    const storage = fsStorage({ layout: 'files', dir, cleanupOnOpen: false });
    const plan = await planResume({ storage, profile, runId: 'run-a' });
    expect(plan.snapshot.sequence).toBe(3);
    expect(plan.source.latest).toBe('valid');
    await storage.close();
    const { code, json } = await verify(dir);
    expect(json.findings).toContainEqual(expect.objectContaining({ key: lockKey, level: 'warning', reasonCode: 'checkpoint_key_invalid' }));
    expect(code).toBe(0);
  });

  it.skipIf(process.getuid?.() === 0)('a lock file without read permission: planResume resumes from latest', async () => {
    const dir = await storeWithRun();
    writeFileSync(join(dir, lockKey), '{}');
    chmodSync(join(dir, lockKey), 0o000);
    const storage = fsStorage({ layout: 'files', dir, cleanupOnOpen: false });
    const plan = await planResume({ storage, profile, runId: 'run-a' });
    expect(plan.snapshot.sequence).toBe(3);
    await storage.close();
  });
});

describe('verify after a crash mid-prune', () => {
  it('finds nothing wrong at any crash point of a prune that deletes and compresses', async () => {
    for (let at = 0; at < 12; at++) {
      const dir = await storeWithRun(6);
      const inner = fsStorage({ layout: 'files', dir, cleanupOnOpen: false });
      const later = Date.now() + 3 * 24 * 3_600_000; // old enough to compress
      const plan = planRetention(await buildInventory({ storage: inner, profile }), { rules: [keepLast(3)], compressAfter: '1d' }, later);
      expect(plan.operations.some((o) => o.type === 'compress')).toBe(true);
      const storage = faultyStorage(inner, { at, action: 'crash', count: 'writes' });
      try {
        await applyRetention({ storage, profile, plan, log: false });
      } catch (err) {
        expect(isCheckpointError(err, 'checkpoint_retention_prune_failed')).toBe(true);
      }
      await inner.close();
      const { code, json } = await verify(dir);
      expect(json.findings, `crash at write ${at}`).toEqual([]);
      expect(code).toBe(0);
    }
  });
});
