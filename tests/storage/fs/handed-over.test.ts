/**
 * fsStorage keeps a buffer the writer hands over (a large sealed document or part it never
 * touches again) instead of copying it, as memoryStorage does (a 64 MiB
 * one-document checkpoint on fs was held twice at the peak). Any other buffer is still
 * copied before put()/batch() return, so a caller reusing its buffer changes nothing stored.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fsStorage } from '../../../src/storage/fs/index.js';
import { handOver } from '../../../src/storage/handed-over.js';
import { scratchFolder } from '../../support/scratch.js';

const scratch = scratchFolder('fs-handed-over');
afterEach(() => vi.restoreAllMocks());

const big = (fill: number): Uint8Array => new Uint8Array(128 * 1024).fill(fill);

describe.each([false, true])('fsStorage (journal: %s)', (journal) => {
  it('keeps a handed-over buffer without copying it, and copies any other', async () => {
    const store = fsStorage({ dir: join(scratch, `copies-${journal}`), journal });
    await store.ready;
    const slice = vi.spyOn(Uint8Array.prototype, 'slice');
    const kept = handOver(big(1));
    await store.put('a/kept.json', kept);
    if (journal) await store.batch!([{ type: 'put', key: 'a/kept-batch.json', bytes: kept }]);
    expect(slice.mock.contexts.filter((c) => c === kept)).toHaveLength(0);
    const other = big(2);
    await store.put('a/copied.json', other);
    expect(slice.mock.contexts.filter((c) => c === other)).toHaveLength(1);
    slice.mockRestore();
    await store.close();
  });

  it('a buffer not handed over is copied before put() returns: changing it afterwards changes nothing stored', async () => {
    const store = fsStorage({ dir: join(scratch, `reuse-${journal}`), journal });
    const bytes = big(3);
    const put = store.put('a/b.json', bytes);
    bytes.fill(9); // the caller reuses its buffer at once
    await put;
    const got = await store.get('a/b.json');
    expect(got?.bytes.every((b) => b === 3)).toBe(true);
    await store.close();
  });
});
