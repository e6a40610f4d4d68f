import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { runStorageConformance } from 'savepoint/testing';
import { createPackedFsStorage, type PackedFsOptions, type PackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-conformance');
let n = 0;

const flavours: readonly Omit<PackedFsOptions, 'dir'>[] = [
  { sync: 'dsync', writes: 'async', reads: 'sync' },
  { sync: 'fdatasync', writes: 'sync', reads: 'async' },
  { sync: 'dsync', writes: 'adaptive', reads: 'sync' },
  // Small segments: rotation and compaction run all through the suite.
  { sync: 'dsync', writes: 'async', reads: 'async', segmentBytes: 512, compactMinBytes: 0 },
];

for (const flavour of flavours) {
  runStorageConformance({
    name: `packed fs store (${flavour.sync}, ${flavour.writes} writes, ${flavour.reads} reads${flavour.segmentBytes ? ', small segments' : ''})`,
    describe,
    it,
    fc,
    create: () => createPackedFsStorage({ dir: join(base, `store-${n++}`), ...flavour }),
    destroy: async (adapter: StorageAdapter) => {
      await adapter.close();
      rmSync((adapter as PackedFsStorage).dir, { recursive: true, force: true });
    },
    reopen: (closed: StorageAdapter) => createPackedFsStorage({ dir: (closed as PackedFsStorage).dir, ...flavour }),
    capabilities: { atomicBatch: true, crossProcessConditional: true, multiGet: true },
    nestedKeys: true,
    concurrency: 8,
    propertyRuns: 30,
  });
}
