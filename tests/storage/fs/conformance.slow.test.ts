import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-conformance');
let n = 0;

runStorageConformance({
  // Direct mode; the journal (fsStorage's default) runs the suite in journal.conformance.slow.test.ts.
  name: 'fsStorage (direct)',
  describe,
  it,
  fc,
  create: () => fsStorage({ dir: join(base, `store-${n++}`), journal: false }),
  destroy: async (adapter: StorageAdapter) => {
    await adapter.close();
    rmSync((adapter as FsStorage).dir, { recursive: true, force: true });
  },
  reopen: (closed: StorageAdapter) => fsStorage({ dir: (closed as FsStorage).dir, journal: false }),
  capabilities: { atomicBatch: false, crossProcessConditional: true, versionsPerWrite: true },
  nestedKeys: false,
  concurrency: 8,
  propertyRuns: 40,
});
