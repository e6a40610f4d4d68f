import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { MANIFEST_NAME, parseManifest, segmentIdOf } from '../../../src/storage/fs-packed/manifest.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-rotation');
let n = 0;
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);
const manifestOf = (dir: string) => parseManifest(dir, readFileSync(join(dir, MANIFEST_NAME), 'utf8'));
const segmentFiles = (dir: string): number[] =>
  readdirSync(dir)
    .map(segmentIdOf)
    .filter((id): id is number => id !== undefined)
    .sort((a, b) => a - b);

describe('packed fs store: rotation', () => {
  it('the active segment is sealed at its end once past the size, and a new one started; a reopen reads them all', async () => {
    const dir = join(base, `rotate-${n++}`);
    const store = createPackedFsStorage({ dir, segmentBytes: 200, compactMinBytes: Infinity });
    const versions = new Map<string, string>();
    for (let i = 0; i < 20; i++) versions.set(`k${i}`, (await store.put(`k${i}`, bytes(`value ${i}`.padEnd(40, '.')))).version);
    expect(store.stats().rotations).toBeGreaterThan(3);
    await store.close();
    const manifest = manifestOf(dir);
    expect(manifest.segments.length).toBe(store.stats().rotations + 1);
    expect(manifest.generation).toBe(store.stats().rotations + 1);
    for (const s of manifest.segments.slice(0, -1)) expect(s.length).toBeGreaterThanOrEqual(200);
    expect(manifest.segments.at(-1)!.length).toBeUndefined();
    expect(segmentFiles(dir)).toEqual(manifest.segments.map((s) => s.id));
    const again = createPackedFsStorage({ dir, segmentBytes: 200, compactMinBytes: Infinity });
    for (const [key, version] of versions)
      expect(await again.get(key)).toEqual({ bytes: bytes(`value ${key.slice(1)}`.padEnd(40, '.')), version });
    await again.close();
  });
});

describe('packed fs store: compaction', () => {
  it('copies the live values of the sealed segments into one, keeping their versions; dead bytes and deleted keys are gone', async () => {
    const dir = join(base, `compact-${n++}`);
    const options = { dir, segmentBytes: 300, compactMinBytes: Infinity };
    const store = createPackedFsStorage(options);
    const current = new Map<string, { bytes: Uint8Array; version: string }>();
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 5; i++) {
        const value = bytes(`round ${round} key ${i}`.padEnd(30, '.'));
        current.set(`k${i}`, { bytes: value, version: (await store.put(`k${i}`, value)).version });
      }
    }
    await store.delete('k4');
    current.delete('k4');
    const before = manifestOf(dir);
    await store.compact();
    const after = manifestOf(dir);
    expect(store.stats().compactions).toBe(1);
    // One sealed segment in place of the old ones, the active one unchanged, the old files unlinked.
    expect(after.segments.length).toBe(2);
    expect(after.segments[1]!.id).toBe(before.segments.at(-1)!.id);
    expect(segmentFiles(dir)).toEqual(after.segments.map((s) => s.id).sort((a, b) => a - b));
    const sealedBefore = before.segments.slice(0, -1).reduce((sum, s) => sum + s.length!, 0);
    expect(after.segments[0]!.length!).toBeLessThan(sealedBefore / 3);
    for (const [key, value] of current) expect(await store.get(key)).toEqual(value);
    expect(await store.get('k4')).toBeUndefined();
    await store.close();
    const again = createPackedFsStorage(options);
    for (const [key, value] of current) expect(await again.get(key)).toEqual(value);
    expect(await again.get('k4')).toBeUndefined();
    const listed: string[] = [];
    for await (const entry of again.list('')) listed.push(entry.key);
    expect(listed.sort()).toEqual([...current.keys()].sort());
    await again.close();
  });

  it('versions never go back once compaction dropped the deletes that held the highest sequences', async () => {
    const dir = join(base, `floor-${n++}`);
    const options = { dir, segmentBytes: 100, compactMinBytes: Infinity };
    const store = createPackedFsStorage(options);
    const given = new Set<string>();
    for (let i = 0; i < 6; i++) given.add((await store.put(`k${i}`, bytes('x'.repeat(40)))).version);
    for (let i = 0; i < 6; i++) await store.delete(`k${i}`);
    // A call of checks only: the full active segment rotates before it, and it writes nothing, so every sequence taken is sealed.
    await store.batch([{ type: 'check', key: 'k0', ifAbsent: true }]);
    expect(manifestOf(dir).segments.at(-1)).toEqual({ id: expect.any(Number) });
    await store.compact();
    // Nothing is live: the compacted segment holds only the highest sequence its segments held.
    expect(manifestOf(dir).segments.length).toBe(2);
    await store.close();
    const again = createPackedFsStorage(options);
    const highest = Math.max(...[...given].map((v) => parseInt(v, 36)));
    const { version } = await again.put('k0', bytes('new'));
    expect(given.has(version)).toBe(false);
    // Above every sequence taken before, deletes included (six puts, six deletes).
    expect(parseInt(version, 36)).toBeGreaterThan(highest + 6);
    await again.close();
  });

  it('a read in flight on a segment compaction retires still returns its value', async () => {
    const dir = join(base, `pinned-${n++}`);
    // Reads made while `hold` is set wait for `release`: they are in flight across the compaction.
    let hold = false;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const io: PackedIo = {
      ...realPackedIo,
      async read(fd, size, position) {
        if (hold) await released;
        return realPackedIo.read(fd, size, position);
      },
    };
    const store = createPackedFsStorage({ dir, segmentBytes: 100, compactMinBytes: Infinity, reads: 'async' }, { io });
    await store.put('a', bytes('a'.repeat(120)));
    await store.put('b', bytes('b'.repeat(120)));
    await store.put('b', bytes('c'.repeat(120)));
    hold = true;
    const reads = Array.from({ length: 5 }, () => store.get('a'));
    await new Promise((resolve) => setImmediate(resolve));
    hold = false;
    await store.compact();
    expect(store.stats().compactions).toBe(1);
    release();
    reads.push(store.get('a'));
    for (const got of await Promise.all(reads)) expect(text(got?.bytes)).toBe('a'.repeat(120));
    await store.close();
  });
});
