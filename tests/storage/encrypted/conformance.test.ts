import fc from 'fast-check';
import { describe, it } from 'vitest';
import { encryptedStorage, EncryptionKey, memoryStorage } from 'savepoint';
import { runStorageConformance } from 'savepoint/testing';

// encryptedStorage is a StorageAdapter like any other: the suite holds it to the same contract.
const key = EncryptionKey.generate();

runStorageConformance({
  name: 'encryptedStorage(memoryStorage())',
  describe,
  it,
  fc,
  create: () => encryptedStorage(memoryStorage(), { keys: key }),
  capabilities: { atomicBatch: true, crossProcessConditional: false, versionsPerWrite: true },
  nestedKeys: true,
  propertyRuns: 30,
});

// The size limit left after the encryption overhead is declared, and held.
runStorageConformance({
  name: 'encryptedStorage(memoryStorage({ maxValueBytes: 4096 }))',
  describe,
  it,
  fc,
  create: () => encryptedStorage(memoryStorage({ maxValueBytes: 4096 }), { keys: [EncryptionKey.generate(), key] }),
  capabilities: { atomicBatch: true, crossProcessConditional: false, maxValueBytes: 4096 - 40, versionsPerWrite: true },
  nestedKeys: true,
  propertyRuns: 5,
});
