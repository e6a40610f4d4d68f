import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-layout-conformance');
let n = 0;

runStorageConformance({
  name: "fsStorage (layout: 'packed')",
  describe,
  it,
  fc,
  create: () => fsStorage({ dir: join(base, `store-${n++}`), layout: 'packed' }),
  destroy: async (adapter: StorageAdapter) => {
    await adapter.close();
    rmSync((adapter as FsStorage).dir, { recursive: true, force: true });
  },
  reopen: (closed: StorageAdapter) => fsStorage({ dir: (closed as FsStorage).dir, layout: 'packed' }),
  capabilities: {
    atomicBatch: true,
    crossProcessConditional: true,
    multiGet: true,
    linkedRead: true,
    opaqueValues: true,
    versionsPerWrite: true,
  },
  nestedKeys: true,
  concurrency: 8,
  propertyRuns: 30,
});
