import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';

const base = mkdtempSync(join(tmpdir(), 'savepoint-fs-conformance-'));
afterAll(() => rmSync(base, { recursive: true, force: true, maxRetries: 5 }));
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
