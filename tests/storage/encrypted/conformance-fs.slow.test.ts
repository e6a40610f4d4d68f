import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { encryptedStorage, EncryptionKey, type EncryptedStorage, type StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';
import { scratchFolder } from '../../support/scratch.js';

// encryptedStorage over fsStorage, direct and journaled: the same contract, every value ciphertext on disk.
const base = scratchFolder('encrypted-fs-conformance');
const key = EncryptionKey.generate();
let n = 0;

for (const journal of [false, true]) {
  const open = (dir: string): EncryptedStorage => encryptedStorage(fsStorage({ dir, journal }), { keys: key });
  const dirOf = (adapter: StorageAdapter): string => ((adapter as EncryptedStorage).inner as FsStorage).dir;
  runStorageConformance({
    name: `encryptedStorage(fsStorage${journal ? ' journal' : ''})`,
    describe,
    it,
    fc,
    create: () => open(join(base, `store-${n++}`)),
    destroy: async (adapter) => {
      await adapter.close();
      rmSync(dirOf(adapter), { recursive: true, force: true });
    },
    reopen: (closed) => open(dirOf(closed)),
    capabilities: { atomicBatch: journal, crossProcessConditional: true, versionsPerWrite: true },
    nestedKeys: false,
    concurrency: 8,
    propertyRuns: 15,
  });
}
