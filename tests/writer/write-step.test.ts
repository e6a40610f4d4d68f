/**
 * The write step every front end uses (src/writer/write-step.ts over ordered-write.ts): a
 * group's puts, merge-on-conflict creates and the deletes the per-run bound lets go, as one
 * batch or in order, and without a promise on a store that declares SynchronousStorage.
 */
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import type { StorageAdapter } from '../../src/contract/storage.js';
import { isSynchronousStorage } from '../../src/contract/synchronous-storage.js';
import { planKeepLast } from '../../src/writer/auto-retention.js';
import { executeWrite, type WritePlan, type WriteReport } from '../../src/writer/ordered-write.js';
import { writeGroup } from '../../src/writer/write-step.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = async (storage: StorageAdapter, key: string): Promise<string | undefined> => {
  const stored = await storage.get(key);
  return stored && new TextDecoder().decode(stored.bytes);
};

/** A wrapper with its own put: it must not inherit memoryStorage's synchronous members. */
function counted(inner: StorageAdapter, calls: string[]): StorageAdapter {
  return {
    ...inner,
    put: (key, b, options) => (calls.push(`put ${key}`), inner.put(key, b, options)),
    delete: (key, options) => (calls.push(`delete ${key}`), inner.delete(key, options)),
    batch: (ops) => (calls.push(`batch ${ops.length}`), inner.batch!(ops)),
  };
}

describe('writeGroup', () => {
  it('answers without a promise on memoryStorage, and with one on a wrapper around it (which declares nothing)', async () => {
    const storage = memoryStorage();
    expect(isSynchronousStorage(storage)).toBe(true);
    const plan: WritePlan = { creates: [], replaces: [], puts: [{ key: 'a/1', bytes: bytes('one') }] };
    const report = writeGroup(storage, plan, false);
    expect(report).not.toBeInstanceOf(Promise);
    expect((report as WriteReport).versions.has('a/1')).toBe(true);
    const calls: string[] = [];
    const wrapped = counted(storage, calls);
    expect(isSynchronousStorage(wrapped)).toBe(false);
    const later = writeGroup(wrapped, { creates: [], replaces: [], puts: [{ key: 'a/2', bytes: bytes('two') }] }, false);
    expect(later).toBeInstanceOf(Promise);
    await later;
    expect(calls).toEqual(['put a/2']);
    expect(await text(storage, 'a/2')).toBe('two');
  });

  it('deletes what the bound lets go in the same batch with useBatch, after the write without', async () => {
    for (const useBatch of [true, false]) {
      const storage = memoryStorage();
      await storage.put('old/1', bytes('x'));
      await storage.put('old/2', bytes('y'));
      const calls: string[] = [];
      await writeGroup(
        counted(storage, calls),
        { creates: [], replaces: [], puts: [{ key: 'new', bytes: bytes('n') }], deletes: ['old/1', 'old/2'] },
        useBatch,
      );
      expect(calls).toEqual(useBatch ? ['batch 3'] : ['put new', 'delete old/1', 'delete old/2']);
      expect(await text(storage, 'new')).toBe('n');
      expect(await text(storage, 'old/1')).toBeUndefined();
      expect(await text(storage, 'old/2')).toBeUndefined();
    }
  });

  it('a merge-on-conflict create merges with what is stored, and says so', async () => {
    for (const sync of [true, false]) {
      const memory = memoryStorage();
      const storage = sync ? memory : counted(memory, []);
      const merge = (stored: Uint8Array | undefined): Uint8Array => bytes(stored ? `${new TextDecoder().decode(stored)}+b` : 'b');
      const first = await writeGroup(storage, { creates: [{ key: 'w', bytes: bytes('a'), merge }], replaces: [] }, false);
      expect(first.merged).toBeUndefined();
      const second = await writeGroup(storage, { creates: [{ key: 'w', bytes: bytes('b'), merge }], replaces: [] }, false);
      expect(second.merged?.has('w')).toBe(true);
      expect(await text(memory, 'w')).toBe('a+b');
    }
  });

  it('a plain create that finds foreign bytes is a conflict; equal bytes have landed', async () => {
    const storage = memoryStorage();
    await storage.put('c', bytes('theirs'));
    await expect(
      Promise.resolve().then(() => writeGroup(storage, { creates: [{ key: 'c', bytes: bytes('ours') }], replaces: [] }, false)),
    ).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    const report = await writeGroup(storage, { creates: [{ key: 'c', bytes: bytes('theirs') }], replaces: [] }, true);
    expect(report.versions.get('c')).toBe((await storage.get('c'))!.version);
  });

  it('executeWrite deletes after a sequential write, in order', async () => {
    const storage = memoryStorage();
    await storage.put('d', bytes('x'));
    const calls: string[] = [];
    const report = await executeWrite(
      counted(storage, calls),
      'r',
      { creates: [{ key: 'e', bytes: bytes('e') }], replaces: [], deletes: ['d'] },
      {},
      () => '',
      false,
    );
    expect(report.mode).toBe('sequential');
    expect(calls).toEqual(['put e', 'delete d']);
  });
});

describe('planKeepLast', () => {
  it('lets go of the oldest beyond keep once the new id is stored, never the new id itself', () => {
    expect(planKeepLast(['a', 'b', 'c'], 3, 'd', false)).toEqual(['a']);
    expect(planKeepLast(['a', 'b', 'c'], 3, 'c', true)).toEqual([]);
    expect(planKeepLast(['a', 'b', 'c'], 2, 'c', true)).toEqual(['a']);
    expect(planKeepLast(['b', 'c', 'd'], 3, 'a', false)).toBeUndefined();
    expect(planKeepLast(['a', 'b', 'c'], 2, 'a', true)).toBeUndefined();
    expect(planKeepLast([], 1, 'a', false)).toEqual([]);
  });
});
