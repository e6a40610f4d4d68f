import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { runStorageConformance } from 'savepoint/testing';
import { createPackedFsStorage, type PackedFsOptions, type PackedFsStorage } from '../../../src/storage/fs-packed/index.js';

const base = mkdtempSync(join(tmpdir(), 'savepoint-fs-packed-conformance-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;

const flavours: readonly Omit<PackedFsOptions, 'dir'>[] = [
  { sync: 'dsync', writes: 'async', reads: 'sync' },
  { sync: 'fdatasync', writes: 'sync', reads: 'async' },
  { sync: 'dsync', writes: 'adaptive', reads: 'sync' },
];

for (const flavour of flavours) {
  runStorageConformance({
    name: `packed fs store (${flavour.sync}, ${flavour.writes} writes, ${flavour.reads} reads)`,
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
