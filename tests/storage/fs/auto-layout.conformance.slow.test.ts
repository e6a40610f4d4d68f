/**
 * The storage conformance suite on `fsStorage({ dir })` without a layout: a new directory whose
 * first call is the suite's own (a plain put, so the file layout, its capabilities read before
 * any is fixed), and one its consumer declared savepoint alone reads (the packed layout).
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { runStorageConformance } from 'savepoint/testing';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-auto-conformance');
let n = 0;

const destroy = async (adapter: StorageAdapter): Promise<void> => {
  await adapter.close();
  rmSync((adapter as FsStorage).dir, { recursive: true, force: true });
};
const reopen = (closed: StorageAdapter): FsStorage => fsStorage({ dir: (closed as FsStorage).dir });

runStorageConformance({
  name: 'fsStorage without a layout, nothing declared',
  describe,
  it,
  fc,
  create: () => fsStorage({ dir: join(base, `plain-${n++}`) }),
  destroy,
  reopen,
  // What both layouts can do: the capabilities read before the first put fixes one.
  capabilities: { atomicBatch: true, crossProcessConditional: true, linkedRead: true, versionsPerWrite: true },
  // The file layout: a key and a key below it cannot both be files.
  nestedKeys: false,
  concurrency: 8,
  propertyRuns: 30,
});

runStorageConformance({
  name: "fsStorage without a layout, declared 'savepoint'",
  describe,
  it,
  fc,
  create: () => {
    const storage = fsStorage({ dir: join(base, `declared-${n++}`) });
    storage.declareReaders!('savepoint');
    return storage;
  },
  destroy,
  reopen,
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
