/**
 * The optional move capability (contract/move.ts) where a store wraps another: encryptedStorage
 * never declares it (the key is sealed with the value), and a sweep over such a store still frees
 * chunks the other way; faultyStorage passes it through as a write it can fault.
 */
import { describe, expect, it } from 'vitest';
import { encryptedStorage, EncryptionKey, listAll, memoryStorage, sweepChunks, type StorageAdapter } from 'savepoint';
import { moveOf } from 'savepoint/toolkit';
import { faultyStorage } from 'savepoint/testing';

const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);

describe('move where a store wraps another', () => {
  it('encryptedStorage does not declare move though its inner store does', () => {
    const inner = memoryStorage();
    expect(moveOf(inner)).toBeTypeOf('function');
    const sealed = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    expect(sealed.capabilities.move).not.toBe(true);
    expect(moveOf(sealed)).toBeUndefined();
  });

  it('a value moved on the inner store does not open under its new key through encryptedStorage', async () => {
    const inner = memoryStorage();
    const sealed = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await sealed.put('a/b', utf8('secret'));
    const [stored] = (await listAll(inner, '')).map((e) => e.key);
    await sealed.put('a/c', utf8('other'));
    // The inner store's key of a/c, whatever form the wrapper gives names there.
    const target = (await listAll(inner, '')).map((e) => e.key).find((k) => k !== stored)!;
    await inner.delete(target);
    expect(await moveOf(inner)!(stored!, target)).toBe(true);
    await expect(sealed.get('a/c')).rejects.toMatchObject({ name: 'CheckpointError' });
  });

  it('faultyStorage passes move through, counted as a write it can fault', async () => {
    const inner = memoryStorage();
    await inner.put('k', utf8('v'));
    const storage = faultyStorage(inner, { at: 0, action: 'fail', count: 'writes' });
    const move = moveOf(storage);
    expect(move).toBeTypeOf('function');
    await expect(move!('k', 'k2')).rejects.toMatchObject({ name: 'CheckpointError' });
    expect(storage.log).toMatchObject([{ operation: 'move', keys: ['k', 'k2'], outcome: 'fail' }]);
    expect(await move!('k', 'k2')).toBe(true);
    expect(await inner.get('k')).toBeUndefined();
  });

  it('a wrapper made by spreading memoryStorage does not carry its move (it would bypass the wrapper)', () => {
    const inner = memoryStorage();
    const wrapped: StorageAdapter = { ...inner, put: (k, b, o) => inner.put(k, b, o) };
    expect(moveOf(wrapped)).toBeUndefined();
  });

  it('a sweep hides and frees by move on a store that has it: one move per chunk, no copy', async () => {
    const inner = memoryStorage();
    await inner.put('chunks/ab/abcdef', utf8('a chunk nothing references'));
    const storage = faultyStorage(inner);
    expect((await sweepChunks(storage, { graceMs: 0 })).hidden).toEqual(['abcdef']);
    const writes = storage.log.filter((e) => e.operation !== 'get' && e.operation !== 'list');
    expect(writes.map((e) => [e.operation, ...e.keys])).toEqual([
      ['move', 'chunks/ab/abcdef', expect.stringMatching(/^chunks\/ab\/abcdef\.hidden-\d+$/)],
    ]);
  });

  it('a sweep over encryptedStorage (no move) still hides and frees unreferenced chunks', async () => {
    const inner: StorageAdapter = memoryStorage();
    const sealed = encryptedStorage(inner, { keys: EncryptionKey.generate() });
    await sealed.put('chunks/ab/abcdef', utf8('a chunk nothing references'));
    const report = await sweepChunks(sealed, { graceMs: 0 });
    expect(report.hidden).toEqual(['abcdef']);
    const again = await sweepChunks(sealed, { graceMs: 0 });
    expect(again.deleted).toHaveLength(1);
  });
});
