/**
 * Runs savepoint's storage conformance suite on the example adapter — the same file you
 * would write for your own adapter:
 *   npx vitest run examples/custom-adapter.test.ts
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { runStorageConformance } from 'savepoint/testing';
import { compressedMapStorage } from './custom-adapter.js';

runStorageConformance({
  name: 'compressedMapStorage',
  describe,
  it,
  fc,
  create: () => compressedMapStorage({ maxValueBytes: 300 * 1024 }),
  // What the adapter claims; the suite checks the claim and tests the size limit it declares.
  capabilities: { atomicBatch: false, crossProcessConditional: false, maxValueBytes: 300 * 1024 },
  // A Map can hold "a" and "a/b" at once.
  nestedKeys: true,
});
