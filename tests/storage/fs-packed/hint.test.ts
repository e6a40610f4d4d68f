import { copyFileSync, existsSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BatchOperation } from 'savepoint';
import { createPackedFsStorage, type PackedFsOptions, type PackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { HINT_NAME } from '../../../src/storage/fs-packed/hint.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-hint', existsSync('/dev/shm') ? '/dev/shm' : tmpdir());
let n = 0;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
const SMALL: Omit<PackedFsOptions, 'dir'> = { segmentBytes: 200, compactMinBytes: Infinity };

/** An io counting the bytes read. */
function countingIo(): { io: PackedIo; bytesRead: () => number } {
  let bytes = 0;
  return {
    io: {
      ...realPackedIo,
      async read(fd, size, position) {
        const out = await realPackedIo.read(fd, size, position);
        bytes += out.length;
        return out;
      },
    },
    bytesRead: () => bytes,
  };
}

/** Every key's value and version, and the bytes the open read. */
async function snapshot(dir: string, options = SMALL): Promise<{ contents: string; bytesRead: number; fresh: string }> {
  const { io, bytesRead } = countingIo();
  const store = createPackedFsStorage({ dir, ...options }, { io });
  const out: [string, string, string][] = [];
  for await (const entry of store.list('')) {
    if (entry.key === 'zz-fresh') continue; // written by an earlier snapshot
    const got = await store.get(entry.key);
    out.push([entry.key, decoder.decode(got!.bytes), got!.version]);
  }
  const read = bytesRead();
  // The version a new write takes: the same with the hint as with a full scan.
  const { version: fresh } = await store.put('zz-fresh', encoder.encode('x'));
  await store.close();
  return { contents: JSON.stringify(out), bytesRead: read, fresh };
}

const op = fc.oneof(
  fc.record({ type: fc.constant('put' as const), key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), value: fc.string({ maxLength: 60 }) }),
  fc.record({ type: fc.constant('delete' as const), key: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f') }),
);

async function fill(store: PackedFsStorage, ops: readonly { type: 'put' | 'delete'; key: string; value?: string }[]): Promise<void> {
  for (const o of ops) {
    const batch: BatchOperation[] = [
      o.type === 'put' ? { type: 'put', key: o.key, bytes: encoder.encode(o.value ?? '') } : { type: 'delete', key: o.key },
    ];
    await store.batch(batch);
  }
}

describe('packed fs store: the hint', () => {
  it('an open with the hint finds what a full scan finds (values, versions, the next version)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), fc.boolean(), async (ops, compact) => {
        const dir = join(base, `same-${n++}`);
        const store = createPackedFsStorage({ dir, ...SMALL });
        await fill(store, ops);
        if (compact) await store.compact();
        await store.close();
        const copy = join(base, `same-copy-${n++}`);
        rmSync(copy, { recursive: true, force: true });
        // The same store without its hint: every segment scanned.
        const { cpSync } = await import('node:fs');
        cpSync(dir, copy, { recursive: true });
        if (existsSync(join(copy, HINT_NAME))) unlinkSync(join(copy, HINT_NAME));
        const hinted = await snapshot(dir);
        const scanned = await snapshot(copy);
        expect(hinted.contents).toBe(scanned.contents);
        expect(hinted.fresh).toBe(scanned.fresh);
        rmSync(dir, { recursive: true, force: true });
        rmSync(copy, { recursive: true, force: true });
      }),
      { numRuns: 40 },
    );
  });

  it('opening reads only the segments after the hint', async () => {
    const dir = join(base, `reads-${n++}`);
    const store = createPackedFsStorage({ dir, ...SMALL });
    for (let i = 0; i < 60; i++) await store.put(`k${i % 7}`, encoder.encode(`value ${i}`.padEnd(50, '.')));
    expect(store.stats().rotations).toBeGreaterThan(10);
    await store.close();
    const hinted = await snapshot(dir);
    const hint = readFileSync(join(dir, HINT_NAME));
    unlinkSync(join(dir, HINT_NAME));
    const scanned = await snapshot(dir);
    expect(hinted.contents).toBe(scanned.contents);
    // The scan read every segment (and the values); with the hint: the hint, the last segments and the values.
    expect(hinted.bytesRead).toBeLessThan(scanned.bytesRead / 3);
    expect(hint.length).toBeGreaterThan(0);
  });

  it('a damaged hint, or one written before a compaction replaced its segments, is ignored', async () => {
    const dir = join(base, `stale-${n++}`);
    const store = createPackedFsStorage({ dir, ...SMALL });
    for (let i = 0; i < 30; i++) await store.put(`k${i % 4}`, encoder.encode(`before ${i}`.padEnd(50, '.')));
    const before = readFileSync(join(dir, HINT_NAME));
    await store.delete('k1');
    await store.compact();
    // As many segments after it as before, so that the old hint's segment count fits the manifest.
    for (let i = 0; i < 40; i++) await store.put(`k${i % 3}`, encoder.encode(`after ${i}`.padEnd(50, '.')));
    await store.close();
    const expected = await snapshot(dir);
    // The hint of the segments before the compaction: they are gone, and their entries no longer hold.
    writeFileSync(join(dir, HINT_NAME), before);
    expect((await snapshot(dir)).contents).toBe(expected.contents);
    // A hint whose CRC fails.
    const damaged = Buffer.from(before);
    damaged[damaged.length - 3]! ^= 0xff;
    writeFileSync(join(dir, HINT_NAME), damaged);
    expect((await snapshot(dir)).contents).toBe(expected.contents);
    copyFileSync(join(dir, HINT_NAME), join(dir, `${HINT_NAME}-1-1`));
    await snapshot(dir);
    // Its temp file is a leftover the open removes.
    expect(existsSync(join(dir, `${HINT_NAME}-1-1`))).toBe(false);
  });
});
