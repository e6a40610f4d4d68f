import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-journal-conformance');
let n = 0;

runStorageConformance({
  name: 'fsStorage (journal)',
  describe,
  it,
  fc,
  create: () => fsStorage({ dir: join(base, `store-${n++}`), journal: true }),
  destroy: async (adapter: StorageAdapter) => {
    await adapter.close();
    rmSync((adapter as FsStorage).dir, { recursive: true, force: true });
  },
  reopen: (closed: StorageAdapter) => fsStorage({ dir: (closed as FsStorage).dir, journal: true }),
  capabilities: { atomicBatch: true, crossProcessConditional: true, move: true, versionsPerWrite: true },
  nestedKeys: false,
  concurrency: 8,
  propertyRuns: 40,
});
