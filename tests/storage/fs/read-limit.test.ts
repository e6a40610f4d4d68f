/**
 * Reading bounded: fsStorage reads a file in slices (one read call of 2 GiB or more aborts
 * Node), and refuses a file over its `maxReadBytes` or the caller's `get(key, { maxBytes })`
 * from its size, unread, with `checkpoint_too_large` naming the key and the limit. memoryStorage
 * honours `maxBytes` too. The 2 GiB case itself runs in huge-file.process.test.ts.
 */
import { open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { READ_SLICE_BYTES, readAll } from '../../../src/storage/fs/io.js';
import { scratchDirs } from '../../support/scratch.js';

const newDir = scratchDirs('read-limit');

async function reasonOf(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (err) {
    return isCheckpointError(err) ? err.reasonCode : `raw ${String(err)}`;
  }
}

describe('fsStorage: bounded reads', () => {
  it('reads a file larger than one slice in slices, each read call at most READ_SLICE_BYTES', async () => {
    const path = join(newDir(), 'big');
    const size = 2 * READ_SLICE_BYTES + 12_345;
    const fh = await open(path, 'w+');
    try {
      await fh.truncate(size);
      await fh.write(Buffer.from('end'), 0, 3, size - 3);
      const asked: number[] = [];
      const read = fh.read.bind(fh);
      const spy = Object.assign(Object.create(fh) as typeof fh, {
        read: (buffer: Uint8Array, offset: number, length: number, position: number) => {
          asked.push(length);
          return read(buffer, offset, length, position);
        },
      });
      const bytes = await readAll(spy, size);
      expect(bytes.length).toBe(size);
      expect(Buffer.from(bytes.subarray(size - 3)).toString()).toBe('end');
      expect(asked.length).toBeGreaterThanOrEqual(3);
      expect(Math.max(...asked)).toBeLessThanOrEqual(READ_SLICE_BYTES);
    } finally {
      await fh.close();
    }
  });

  it('refuses a file over maxReadBytes from its size, naming the key and the limit; one at the limit is read', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir, maxReadBytes: 1000, journal: false });
    await storage.put('a/at-limit', new Uint8Array(1000));
    await writeFile(join(dir, 'a', 'over'), new Uint8Array(1001)); // planted by another tool
    expect((await storage.get('a/at-limit'))?.bytes.length).toBe(1000);
    const err = await storage.get('a/over').catch((e: unknown) => e);
    expect(isCheckpointError(err, 'checkpoint_too_large')).toBe(true);
    expect((err as Error).message).toContain('a/over');
    expect((err as Error).message).toContain('maxReadBytes');
    expect((err as { details: unknown }).details).toEqual({ key: 'a/over', bytes: 1001, limit: 1000 });
    await storage.close();
  });

  it('refuses a file over the caller’s maxBytes (the smaller limit wins), in direct and journal mode', async () => {
    for (const journal of [false, true]) {
      const storage = fsStorage({ dir: newDir(), journal });
      await storage.put('k', new Uint8Array(500));
      expect(await reasonOf(() => storage.get('k', { maxBytes: 499 }))).toBe('checkpoint_too_large');
      expect((await storage.get('k', { maxBytes: 500 }))?.bytes.length).toBe(500);
      expect(await storage.get('missing', { maxBytes: 1 })).toBeUndefined();
      await storage.close();
    }
  });

  it('answers a bad maxReadBytes or maxBytes with checkpoint_config_invalid', async () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '10' as never]) {
      expect(await reasonOf(async () => fsStorage({ dir: newDir(), maxReadBytes: bad }))).toBe('checkpoint_config_invalid');
    }
    const storage = fsStorage({ dir: newDir() });
    const memory: StorageAdapter = memoryStorage();
    for (const s of [storage, memory]) {
      for (const bad of [0, -5, 2.5, 'x' as never, null as never]) {
        expect(await reasonOf(() => s.get('k', { maxBytes: bad }))).toBe('checkpoint_config_invalid');
      }
      expect(await reasonOf(() => s.get('k', 'big' as never))).toBe('checkpoint_config_invalid');
    }
    await storage.close();
  });
});

describe('memoryStorage: maxBytes', () => {
  it('refuses a value over maxBytes, without copying it, and returns one that fits', async () => {
    const s = memoryStorage();
    await s.put('k', new Uint8Array(64));
    expect(await reasonOf(() => s.get('k', { maxBytes: 63 }))).toBe('checkpoint_too_large');
    expect((await s.get('k', { maxBytes: 64 }))?.bytes.length).toBe(64);
  });
});
