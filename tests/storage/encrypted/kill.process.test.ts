import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, encryptedStorage, EncryptionKey, isCheckpointError, listAll, planResume } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { ROOT } from '../../support/build.js';
import { bundledChildPerFile } from '../../support/bundle-child.js';
import { scratchFolder } from '../../support/scratch.js';

// Real SIGKILLs of a process writing checkpoints to an encrypted fs store (direct and journal),
// and of a process rotating its key: after every kill each value opens (with the old key or the
// new one, and always with both), and resume finds at least the last acknowledged checkpoint.
const KILLS = Number(process.env.SAVEPOINT_ENCRYPTED_KILLS ?? 6);
const base = scratchFolder('encrypted-kill');
const keyA = EncryptionKey.generate();
const keyB = EncryptionKey.generate();
// One bundle for every start: a plain `node` start, where the tsx loader cost about a second of CPU each.
const bundled = bundledChildPerFile(join(ROOT, 'tests/storage/encrypted/kill-child.ts'), 'savepoint-encrypted-kill-');

/** Starts the child, SIGKILLs it after `afterLines` lines plus a random delay; resolves with the lines it printed. */
function runAndKill(args: string[], afterLines: number): Promise<string[]> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [bundled.bundle, ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const lines: string[] = [];
    let buffer = '';
    let armed = false;
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      lines.push(...parts);
      if (!armed && lines.length >= afterLines) {
        armed = true;
        setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 40));
      }
    });
    // A child that never gets that far is killed all the same (the checks then say why).
    const stuck = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', () => {
      clearTimeout(stuck);
      resolve(lines);
    });
  });
}

async function failures(dir: string, keys: EncryptionKey[]): Promise<string[]> {
  const store = encryptedStorage(fsStorage({ dir }), { keys });
  const out: string[] = [];
  for (const { key } of await listAll(store, '')) {
    await store.get(key).catch((err: unknown) => out.push(`${key}: ${isCheckpointError(err) ? err.reasonCode : String(err)}`));
  }
  await store.close();
  return out;
}

describe.each(['direct', 'journal'] as const)('encrypted fsStorage (%s) under SIGKILL', (journal) => {
  it(
    `writing checkpoints: after each of ${KILLS} kills every value opens and resume reaches the last acknowledged`,
    { timeout: 300_000 },
    async () => {
      const dir = join(base, `write-${journal}`);
      for (let kill = 0; kill < KILLS; kill++) {
        const lines = await runAndKill(['write', dir, EncryptionKey.toText(keyA), EncryptionKey.toText(keyB), journal], 3 + kill * 2);
        const acked = Math.max(0, ...lines.filter((l) => l.startsWith('ack ')).map((l) => Number(l.slice(4))));
        expect(await failures(dir, [keyA, keyB])).toEqual([]);
        const storage = encryptedStorage(fsStorage({ dir, journal: journal === 'journal' }), { keys: [keyA, keyB] });
        const plan = await planResume({ storage, profile: defaultProfile, runId: 'run-1' });
        expect(plan.snapshot.sequence).toBeGreaterThanOrEqual(acked);
        await storage.close();
      }
    },
  );
});

describe('encrypted fsStorage: SIGKILL during key rotation', () => {
  it(`after each of ${KILLS} kills every value opens with one of the two keys alone, and with both`, { timeout: 300_000 }, async () => {
    const dir = join(base, 'rotate');
    const seed = encryptedStorage(fsStorage({ dir }), { keys: keyA });
    const writer = createWriter({ storage: seed, runId: 'run-1', heartbeatIntervalMs: false });
    for (let i = 1; i <= 3; i++) await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } });
    await writer.close();
    await seed.close();
    for (let kill = 0; kill < KILLS; kill++) {
      await runAndKill(['rotate', dir, EncryptionKey.toText(keyA), EncryptionKey.toText(keyB), 'direct'], 1 + kill);
      expect(await failures(dir, [keyA, keyB])).toEqual([]);
      const withA = await failures(dir, [keyA]);
      const withB = await failures(dir, [keyB]);
      expect(withA.length === 0 || withB.length === 0).toBe(true);
    }
  });
});
