/**
 * After a failed durable write the active segment gets no zeros again: a reader in another
 * process may have indexed records of the failed group, and past the cut it must find the file
 * shorter (`packed_segment_shrunk`), not zeros that later records overwrite. The groups after
 * the recovery append past the file's end; the next segment gets zeros again.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { segmentName } from '../../../src/storage/fs-packed/manifest.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-zeros-failure');

/** The real calls, with each write of zeros alone recorded (where it starts), and the next write of records failing once when `failNext` is set (with the default `O_DSYNC` file, the write is the sync). */
function failingIo(): { io: PackedIo; zeroWrites: number[]; failNext: () => void } {
  const zeroWrites: number[] = [];
  let fail = false;
  const io: PackedIo = {
    ...realPackedIo,
    writeAt(fd, bytes, position) {
      const zeros = bytes.every((b) => b === 0);
      if (zeros) zeroWrites.push(position);
      if (!fail || zeros) return realPackedIo.writeAt(fd, bytes, position);
      fail = false;
      return Promise.reject(Object.assign(new Error('injected EIO'), { code: 'EIO', syscall: 'write' }));
    },
  };
  return { io, zeroWrites, failNext: () => (fail = true) };
}

describe('packed fs store: no zeros after a failed durable write', () => {
  it('the segment a failed write hit grows by appends only until it is sealed; the next segment gets zeros again', async () => {
    const dir = join(base, 'store');
    const faults = failingIo();
    const segmentBytes = 512 * 1024;
    const store = createPackedFsStorage({ dir, writes: 'async', segmentBytes, compactMinBytes: Infinity }, { io: faults.io });
    const value = new Uint8Array(4000).fill(9);
    for (let i = 0; i < 20; i++) await store.put(`a${i}`, value);
    expect(faults.zeroWrites.length).toBeGreaterThan(0);
    faults.failNext();
    await expect(store.put('lost', value)).rejects.toMatchObject({ reasonCode: 'checkpoint_atomic_write_failed' });
    const zerosBefore = faults.zeroWrites.length;
    // The next group's upkeep cut the segment back to its acknowledged end: from there it grows by each group.
    await store.put('b0', value);
    const path = join(dir, segmentName(1));
    let size = statSync(path).size;
    let appended = 0;
    // Enough puts to use more than a step of zeros.
    for (let i = 1; i < 60 && store.stats().rotations === 0; i++) {
      await store.put(`b${i}`, value);
      if (store.stats().rotations > 0) break;
      const now = statSync(path).size;
      expect(now).toBeGreaterThan(size);
      size = now;
      appended++;
    }
    expect(appended).toBeGreaterThan(20);
    expect(faults.zeroWrites.length).toBe(zerosBefore);
    // Past the segment's bound: a new segment, with zeros again.
    for (let i = 0; i < 400 && store.stats().rotations === 0; i++) await store.put(`c${i}`, value);
    expect(store.stats().rotations).toBeGreaterThan(0);
    await store.put('after', value);
    expect(faults.zeroWrites.length).toBeGreaterThan(zerosBefore);
    expect(await store.get('lost')).toBeUndefined();
    expect((await store.get('b0'))?.bytes).toEqual(value);
    await store.close();
  });
});
