/**
 * Child of kill.process.test.ts: on an encrypted fs store, either writes checkpoints forever
 * (`write`), printing `ack <sequence>` after each acknowledged one, or rotates the store's key
 * back and forth between two keys forever (`rotate`), printing `rotated` after each.
 */
import { createWriter, encryptedStorage, EncryptionKey } from 'savepoint';
import { fsStorage } from 'savepoint/fs';

const [mode, dir, keyA, keyB, journal] = process.argv.slice(2) as [string, string, string, string, string];
const a = EncryptionKey.fromText(keyA);
const b = EncryptionKey.fromText(keyB);
const storage = encryptedStorage(fsStorage({ dir, journal: journal === 'journal' }), { keys: [a, b] });

if (mode === 'write') {
  const writer = createWriter({ storage, runId: 'run-1', heartbeatIntervalMs: false });
  for (let step = 1; ; step++) {
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step, note: 'secret '.repeat(50) } });
    if (r.ok) process.stdout.write(`ack ${r.sequence}\n`);
  }
} else {
  for (let i = 0; ; i++) {
    await storage.keyring.rotate(i % 2 === 0 ? b : a);
    process.stdout.write('rotated\n');
  }
}
