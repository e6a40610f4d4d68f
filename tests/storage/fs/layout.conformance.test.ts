import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';

const base = mkdtempSync(join(tmpdir(), 'savepoint-fs-layout-conformance-'));
afterAll(() => rmSync(base, { recursive: true, force: true, maxRetries: 5 }));
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
