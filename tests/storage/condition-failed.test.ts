import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { createPackedFsStorage } from '../../src/storage/fs-packed/index.js';
import { scratchFolder } from '../support/scratch.js';

const base = scratchFolder('condition-failed');

const stores: readonly [string, () => StorageAdapter][] = [
  ['memory', () => memoryStorage()],
  ['fs direct', () => fsStorage({ dir: join(base, 'direct'), layout: 'files', journal: false })],
  ['fs journal', () => fsStorage({ dir: join(base, 'journal'), layout: 'files', journal: true })],
  ['fs packed', () => createPackedFsStorage({ dir: join(base, 'packed') })],
];

async function refusal(write: Promise<unknown>): Promise<unknown> {
  try {
    await write;
  } catch (err) {
    return err;
  }
  throw new Error('the write was not refused');
}

// Every store reports a failed condition with one message and the key in its details (one helper builds it).
describe.each(stores)('a failed condition on %s', (_name, create) => {
  it('says which key and why, as every store does', async () => {
    const store = create();
    try {
      const { version } = await store.put('a/k', new Uint8Array([1]));
      const exists = await refusal(store.put('a/k', new Uint8Array([2]), { ifAbsent: true }));
      expect(isCheckpointError(exists, 'checkpoint_conflict')).toBe(true);
      expect((exists as Error).message).toBe('checkpoint_conflict: conditional write of a/k failed: key exists');
      expect((exists as { details: unknown }).details).toEqual({ key: 'a/k' });
      await store.put('a/k', new Uint8Array([3]));
      const changed = await refusal(store.put('a/k', new Uint8Array([4]), { ifVersion: version }));
      expect((changed as Error).message).toBe('checkpoint_conflict: conditional write of a/k failed: version changed');
      const deleteChanged = await refusal(store.delete('a/k', { ifVersion: version }));
      expect((deleteChanged as Error).message).toBe('checkpoint_conflict: conditional write of a/k failed: version changed');
      expect((deleteChanged as { details: unknown }).details).toEqual({ key: 'a/k' });
      await store.delete('a/k');
      const gone = await refusal(store.put('a/k', new Uint8Array([5]), { ifVersion: version }));
      expect((gone as Error).message).toBe('checkpoint_conflict: conditional write of a/k failed: key is gone');
    } finally {
      await store.close();
    }
  });
});
