import { describe, expect, it } from 'vitest';
import {
  EncryptionKey,
  encryptedStorage,
  isCheckpointError,
  memoryStorage,
  type BatchOperation,
  type BatchOptions,
  type GetOptions,
  type StorageAdapter,
} from 'savepoint';

/** memoryStorage, recording the options its callers pass. */
function recording(): { store: StorageAdapter; gets: (GetOptions | undefined)[]; batches: (BatchOptions | undefined)[] } {
  const inner = memoryStorage();
  const gets: (GetOptions | undefined)[] = [];
  const batches: (BatchOptions | undefined)[] = [];
  const store: StorageAdapter = {
    name: 'recording',
    capabilities: inner.capabilities,
    get: (key, options) => (gets.push(options), inner.get(key, options)),
    put: (key, bytes, options) => inner.put(key, bytes, options),
    delete: (key, options) => inner.delete(key, options),
    list: (prefix) => inner.list(prefix),
    batch: (ops: readonly BatchOperation[], options?: BatchOptions) => (batches.push(options), inner.batch!(ops, options)),
    close: () => inner.close(),
  };
  return { store, gets, batches };
}

describe('encryptedStorage passes its callers’ options on', () => {
  it('a batch marked urgent reaches the inner store urgent (a buffered store must not hold it)', async () => {
    const { store, batches } = recording();
    const encrypted = encryptedStorage(store, { keys: EncryptionKey.generate() });
    await encrypted.batch!([{ type: 'put', key: 'a/b', bytes: new Uint8Array([1]) }], { urgent: true });
    expect(batches.at(-1)).toEqual({ urgent: true });
    await encrypted.close();
  });

  it('a read bound on the plaintext reaches the inner store, widened by the header and tag; a larger value is refused unread', async () => {
    const { store, gets } = recording();
    const encrypted = encryptedStorage(store, { keys: EncryptionKey.generate() });
    await encrypted.put('a/small', new Uint8Array(100));
    await encrypted.put('a/large', new Uint8Array(5000));
    expect((await encrypted.get('a/small', { maxBytes: 100 }))?.bytes.length).toBe(100);
    const bound = gets.at(-1)?.maxBytes;
    expect(bound).toBeGreaterThan(100);
    const error = await encrypted.get('a/large', { maxBytes: 1000 }).catch((e: unknown) => e);
    expect(isCheckpointError(error, 'checkpoint_too_large')).toBe(true);
    await encrypted.close();
  });
});
