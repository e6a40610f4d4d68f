/**
 * Where a group's durable write is made under the default `writes: 'adaptive'`: a lone call's on
 * the event loop (no thread-pool round trip for a thread checkpointing alone), calls made together
 * on the pool; a lone write that fails acknowledges nothing and the store goes on; and the sync a
 * store makes where the platform has no `O_DSYNC`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { storeContents } from '../../support/store-contents.js';
import { LONE_WRITE_MAX_BYTES } from '../../../src/storage/fs-packed/commit.js';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { syncOf } from '../../../src/storage/fs-packed/open.js';
import { MAGIC } from '../../../src/storage/fs-packed/record.js';

const base = mkdtempSync(join(tmpdir(), 'savepoint-fs-packed-lone-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;
const encoder = new TextEncoder();

/** Whether `bytes` begin with a record (not the zeros written ahead of the records). */
const isRecords = (bytes: Uint8Array): boolean =>
  bytes.length >= 4 && Buffer.from(bytes.buffer, bytes.byteOffset, 4).readUInt32LE(0) === MAGIC;

/** The real calls, the writes of records counted by where they are made: on the pool (`writeAt`) or on the event loop (`writeAtSync`). */
function countingIo(): { io: PackedIo; counts: { pool: number; loop: number }; failNextLoopWrite: () => void } {
  const counts = { pool: 0, loop: 0 };
  let fail = false;
  const io: PackedIo = {
    ...realPackedIo,
    writeAt(fd, bytes, position) {
      if (isRecords(bytes)) counts.pool++;
      return realPackedIo.writeAt(fd, bytes, position);
    },
    writeAtSync(fd, bytes, position) {
      if (isRecords(bytes)) counts.loop++;
      if (!fail) return realPackedIo.writeAtSync(fd, bytes, position);
      fail = false;
      // Half the bytes land, then the write fails: a torn group the store must cut before appending.
      realPackedIo.writeAtSync(fd, bytes.subarray(0, bytes.length >> 1), position);
      throw Object.assign(new Error('injected fault in writeAtSync'), { code: 'EIO', syscall: 'write' });
    },
  };
  return { io, counts, failNextLoopWrite: () => (fail = true) };
}

describe('packed fs store: where a group is written (default options)', () => {
  it('a thread writing alone makes its writes on the event loop: no thread-pool write after its first', async () => {
    const counting = countingIo();
    const store = createPackedFsStorage({ dir: join(base, `lone-${n++}`) }, { io: counting.io });
    for (let i = 0; i < 20; i++) {
      await store.batch([{ type: 'put', key: `writes/${i}`, bytes: encoder.encode(`w${i}`) }]);
      await store.put(`checkpoint/${i}`, encoder.encode(`c${i}`));
    }
    // The first group follows none: it goes to the pool; every lone one after it is written on the loop.
    expect(counting.counts).toEqual({ pool: 1, loop: 39 });
    expect(store.stats()).toMatchObject({ writes: 40, loopWrites: 39 });
    await store.close();
  });

  it('calls made together go to the pool as one group, and so does the lone call right after them', async () => {
    const counting = countingIo();
    const store = createPackedFsStorage({ dir: join(base, `together-${n++}`) }, { io: counting.io });
    await store.put('a', encoder.encode('1'));
    await store.put('b', encoder.encode('2'));
    const loopBefore = counting.counts.loop;
    const poolBefore = counting.counts.pool;
    await Promise.all([0, 1, 2, 3].map((i) => store.put(`t${i}`, encoder.encode(`${i}`))));
    await store.put('after', encoder.encode('x'));
    expect(counting.counts.loop - loopBefore).toBe(0);
    expect(counting.counts.pool - poolBefore).toBe(2);
    // Lone again: back on the loop.
    await store.put('later', encoder.encode('y'));
    expect(counting.counts.loop - loopBefore).toBe(1);
    await store.close();
  });

  it(`a lone group larger than ${LONE_WRITE_MAX_BYTES} bytes is written on the pool (the loop is not held through a large write)`, async () => {
    const counting = countingIo();
    const store = createPackedFsStorage({ dir: join(base, `large-${n++}`) }, { io: counting.io });
    await store.put('a', encoder.encode('1'));
    await store.put('b', encoder.encode('2'));
    const before = { ...counting.counts };
    await store.put('large', new Uint8Array(LONE_WRITE_MAX_BYTES).fill(1));
    expect(counting.counts).toEqual({ pool: before.pool + 1, loop: before.loop });
    expect((await store.get('large'))?.bytes.length).toBe(LONE_WRITE_MAX_BYTES);
    await store.close();
  });

  it('a lone write on the loop that fails (half its bytes landed): its call fails, the store cuts the torn bytes and goes on; reopened, every acknowledged write is there and the failed one is not', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 1, max: 4 }), async (failAfter, later) => {
        const dir = join(base, `fail-${n++}`);
        const counting = countingIo();
        const store = createPackedFsStorage({ dir }, { io: counting.io });
        const acknowledged = new Map<string, string>();
        for (let i = 0; i < failAfter; i++) acknowledged.set(`k${i}`, (await store.put(`k${i}`, encoder.encode(`v${i}`))).version);
        const loopBefore = counting.counts.loop;
        counting.failNextLoopWrite();
        await expect(store.put('failed', encoder.encode('never acknowledged'))).rejects.toMatchObject({
          reasonCode: 'checkpoint_atomic_write_failed',
        });
        expect(counting.counts.loop).toBe(loopBefore + 1);
        for (let i = 0; i < later; i++) acknowledged.set(`after${i}`, (await store.put(`after${i}`, encoder.encode(`a${i}`))).version);
        await store.close();
        const again = createPackedFsStorage({ dir });
        const found = await storeContents(again);
        await again.close();
        expect(new Map([...found].map(([k, v]) => [k, v.version]))).toEqual(acknowledged);
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 10 },
    );
  });
});

describe('packed fs store: the sync it makes', () => {
  it('dsync where the platform has no O_DSYNC is a write then an fdatasync; every other choice stays', () => {
    expect(syncOf('dsync', false)).toBe('fdatasync');
    expect(syncOf('dsync', true)).toBe('dsync');
    expect(syncOf('fdatasync', false)).toBe('fdatasync');
    expect(syncOf('none', false)).toBe('none');
  });
});
