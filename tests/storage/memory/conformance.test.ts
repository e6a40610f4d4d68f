import fc from 'fast-check';
import { describe, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { faultyStorage, runStorageConformance } from 'savepoint/testing';

runStorageConformance({
  name: 'memoryStorage',
  describe,
  it,
  fc,
  create: () => memoryStorage(),
  capabilities: { atomicBatch: true, crossProcessConditional: false, versionsPerWrite: true },
  nestedKeys: true,
  propertyRuns: 100,
});

runStorageConformance({
  name: 'memoryStorage with a size limit',
  describe,
  it,
  fc,
  create: () => memoryStorage({ maxValueBytes: 4096 }),
  capabilities: { atomicBatch: true, crossProcessConditional: false, maxValueBytes: 4096, versionsPerWrite: true },
  nestedKeys: true,
  propertyRuns: 10,
});

// A fault plan that never fires must be invisible: the wrapper is a conforming adapter.
runStorageConformance({
  name: 'faultyStorage(memoryStorage()) without faults',
  describe,
  it,
  fc,
  create: () => faultyStorage(memoryStorage()),
  capabilities: { atomicBatch: true, crossProcessConditional: false, versionsPerWrite: true },
  nestedKeys: true,
  propertyRuns: 20,
});
