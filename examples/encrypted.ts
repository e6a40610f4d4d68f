/**
 * Encryption at rest: checkpoints in a directory that holds only ciphertext, resumed with the
 * key, refused without it, and the key rotated without rewriting a checkpoint.
 *
 *   npx tsx examples/encrypted.ts
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWriter, encryptedStorage, EncryptionKey, isCheckpointError, planResume, defaultProfile } from 'savepoint';
import { fsStorage } from 'savepoint/fs';

const dir = mkdtempSync(join(tmpdir(), 'savepoint-encrypted-example-'));
try {
  // In production: EncryptionKey.fromEnv('SAVEPOINT_KEY'), the key kept in a secret manager.
  const key = EncryptionKey.generate();
  // The file layout, to look at the files on disk (a new directory only savepoint reads is packed by default).
  const storage = encryptedStorage(fsStorage({ dir, layout: 'files' }), { keys: key });

  const writer = createWriter({ storage, runId: 'run-1', heartbeatIntervalMs: false });
  await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1, apiKey: 'sk-live-example' } });
  await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2, apiKey: 'sk-live-example' } });
  await writer.close();

  // On disk: ciphertext only.
  const latest = readFileSync(join(dir, 'checkpoints', 'run-1', 'latest.json'));
  console.log(`latest.json on disk holds the plaintext: ${latest.includes('sk-live-example')}`);
  console.log(`files: ${readdirSync(dir).sort().join(', ')}`);

  // With the key, resume works as on any store.
  const plan = await planResume({ storage, profile: defaultProfile, runId: 'run-1' });
  console.log(`resumed run-1 at snapshot #${plan.snapshot.sequence}`);

  // Without it, the error names the key id the store needs, never a key.
  try {
    await planResume({
      storage: encryptedStorage(fsStorage({ dir }), { keys: EncryptionKey.generate() }),
      profile: defaultProfile,
      runId: 'run-1',
    });
  } catch (err) {
    if (isCheckpointError(err)) console.log(`with another key: ${err.reasonCode}`);
  }

  // Rotation re-wraps the store's data key: no checkpoint is rewritten.
  const next = EncryptionKey.generate();
  const { added, removed } = await storage.keyring.rotate(next);
  console.log(`rotated to key ${added}, removed ${removed.length} key`);
  const after = await planResume({
    storage: encryptedStorage(fsStorage({ dir }), { keys: next }),
    profile: defaultProfile,
    runId: 'run-1',
  });
  console.log(`after rotation, the new key resumes at snapshot #${after.snapshot.sequence}`);
  await storage.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
