/**
 * The active segment's written zeros: groups write over them (the file's size stays), the end of
 * the records is found by scanning (zeros are never a record), a sealed segment is cut to its
 * length, and what a crash leaves past the end — a torn write, or a record that a power cut kept
 * while losing the bytes before it — is never read as a record, then or after later writes.
 */
import { fstatSync, openSync, closeSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { MANIFEST_NAME, parseManifest, segmentName } from '../../../src/storage/fs-packed/manifest.js';
import { encodeRecord, placeRecord, scanSegment } from '../../../src/storage/fs-packed/record.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-prealloc');
let n = 0;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Where the records of the segment file at `path` end, found by scanning the whole file. */
const logicalEnd = (path: string): number => scanSegment(readFileSync(path)).end;

/** The length of the record a put of `value` at `key` writes. */
const putRecordBytes = (key: string, value: Uint8Array): number => encodeRecord([{ kind: 'put', key, bytes: value }]).bytes.length;

/** The real calls; each write of records (not of zeros alone) counted, and counted as growing when it ends past the file's size. */
function sizeWatchingIo(): { io: PackedIo; writes: { all: number; growing: number } } {
  const writes = { all: 0, growing: 0 };
  const watch = (fd: number, bytes: Uint8Array, position: number): void => {
    if (bytes.every((b) => b === 0)) return;
    writes.all++;
    if (position + bytes.length > fstatSync(fd).size) writes.growing++;
  };
  const io: PackedIo = {
    ...realPackedIo,
    writeAt: (fd, bytes, position) => (watch(fd, bytes, position), realPackedIo.writeAt(fd, bytes, position)),
    writeAtSync: (fd, bytes, position) => (watch(fd, bytes, position), realPackedIo.writeAtSync(fd, bytes, position)),
  };
  return { io, writes };
}

describe('packed fs store: the active segment written over zeros', () => {
  it.each(['async', 'sync'] as const)('%s writes: groups after the first do not change the segment file’s size', async (writes) => {
    const dir = join(base, `size-${n++}`);
    const watched = sizeWatchingIo();
    const store = createPackedFsStorage({ dir, writes }, { io: watched.io });
    const value = new Uint8Array(1500).fill(7);
    await store.put('k0', value);
    const path = join(dir, segmentName(1));
    const size = statSync(path).size;
    const before = { ...watched.writes };
    for (let i = 1; i <= 40; i++) await store.put(`k${i}`, value);
    // One write a group, every one over bytes the file already holds (zeros written ahead of them in steps).
    expect(watched.writes.all - before.all).toBe(40);
    expect(watched.writes.growing).toBe(before.growing);
    expect(statSync(path).size).toBeGreaterThanOrEqual(size);
    let end = 0;
    for (let i = 0; i <= 40; i++) end += putRecordBytes(`k${i}`, value);
    expect(logicalEnd(path)).toBe(end);
    await store.close();
  });

  it('a sealed segment is as long as its records; the active one holds zeros past them', async () => {
    const dir = join(base, `sealed-${n++}`);
    const store = createPackedFsStorage({ dir, segmentBytes: 4096, preallocBytes: 8192, compactMinBytes: Infinity });
    for (let i = 0; i < 12; i++) await store.put(`k${i}`, new Uint8Array(1000).fill(i));
    expect(store.stats().rotations).toBeGreaterThan(0);
    await store.close();
    const manifest = parseManifest(dir, readFileSync(join(dir, MANIFEST_NAME), 'utf8'));
    for (const segment of manifest.segments.slice(0, -1)) {
      const path = join(dir, segmentName(segment.id));
      expect(statSync(path).size).toBe(segment.length);
      expect(logicalEnd(path)).toBe(segment.length);
    }
    const active = join(dir, segmentName(manifest.segments.at(-1)!.id));
    expect(statSync(active).size).toBeGreaterThan(logicalEnd(active));
    expect(
      readFileSync(active)
        .subarray(logicalEnd(active))
        .every((b) => b === 0),
    ).toBe(true);
  });

  it('a reader in another store sees a record written over zeros (the file’s size did not move)', async () => {
    const dir = join(base, `reader-${n++}`);
    const writer = createPackedFsStorage({ dir, lingerMs: 1 });
    const reader = createPackedFsStorage({ dir, lingerMs: 1 });
    await writer.put('x', encoder.encode('1'));
    expect(decoder.decode((await reader.get('x'))!.bytes)).toBe('1');
    const size = statSync(join(dir, segmentName(1))).size;
    await writer.put('x', encoder.encode('2'));
    expect(statSync(join(dir, segmentName(1))).size).toBe(size);
    expect(decoder.decode((await reader.get('x'))!.bytes)).toBe('2');
    await Promise.all([writer.close(), reader.close()]);
  });
});

/** What a crash leaves past the records' end before the store is opened again. */
type Damage =
  | { readonly t: 'none' }
  /** The first bytes of a record (a write cut short), at the end. */
  | { readonly t: 'torn'; readonly keep: number }
  /** A whole record after a run of zeros as long as the next put's record: a group whose first page a power cut lost. */
  | { readonly t: 'ghost' };

type Action =
  | { readonly t: 'put'; readonly key: string; readonly size: number }
  /** The store closed and opened again (another process), after a crash that left `damage`. */
  | { readonly t: 'crash'; readonly damage: Damage }
  /** Another store (another process) puts, then crashes leaving the first `torn` bytes of its next write (0: none); this store lives on. */
  | { readonly t: 'other'; readonly key: string; readonly size: number; readonly torn: number };

const action: fc.Arbitrary<Action> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ t: fc.constant('put' as const), key: fc.constantFrom('a', 'b', 'c'), size: fc.nat(3000) }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('other' as const), key: fc.constantFrom('a', 'd'), size: fc.nat(3000), torn: fc.nat(2000) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      t: fc.constant('crash' as const),
      damage: fc.oneof(
        fc.constant<Damage>({ t: 'none' }),
        fc.record({ t: fc.constant('torn' as const), keep: fc.integer({ min: 1, max: 2000 }) }),
        fc.constant<Damage>({ t: 'ghost' }),
      ),
    }),
  },
);

/** Writes `bytes` at `position` of the file at `path`. */
function writeInto(path: string, bytes: Uint8Array, position: number): void {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, position);
  } finally {
    closeSync(fd);
  }
}

/** A record of a key no step puts, with sequences far past any the store gives. */
function strayRecord(): Buffer {
  const record = encodeRecord([{ kind: 'put', key: 'stray', bytes: encoder.encode('never acknowledged '.repeat(100)) }]);
  placeRecord(record, 1_000_000);
  return record.bytes;
}

function damage(path: string, end: number, what: Damage, nextPut: Action | undefined): void {
  if (what.t === 'torn') writeInto(path, strayRecord().subarray(0, Math.min(what.keep, strayRecord().length - 1)), end);
  if (what.t === 'ghost') {
    const gap = nextPut?.t === 'put' ? putRecordBytes(nextPut.key, new Uint8Array(nextPut.size)) : 100;
    writeInto(path, new Uint8Array(gap), end);
    writeInto(path, strayRecord(), end + gap);
  }
}

describe('packed fs store: the end of the records after crashes', () => {
  it('after any appends, crashes (with what they leave past the end) and reopenings, the records end where the last acknowledged one ends', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 1, maxLength: 14 }),
        fc.constantFrom(0, 600, 4096, 1 << 20),
        async (actions, preallocBytes) => {
          const dir = join(base, `crash-${n++}`);
          const path = join(dir, segmentName(1));
          const open = (): ReturnType<typeof createPackedFsStorage> => createPackedFsStorage({ dir, preallocBytes, lingerMs: 1 });
          const model = new Map<string, number>();
          let store = open();
          let end = 0;
          try {
            for (let i = 0; i < actions.length; i++) {
              const a = actions[i]!;
              if (a.t === 'put') {
                const value = new Uint8Array(a.size).fill(a.size & 0xff);
                await store.put(a.key, value);
                end += putRecordBytes(a.key, value);
                model.set(a.key, a.size);
                // Nothing but zeros past the records once this store wrote: what a crash left there was cut.
                expect(
                  readFileSync(path)
                    .subarray(end)
                    .every((b) => b === 0),
                ).toBe(true);
              } else if (a.t === 'other') {
                const other = open();
                const value = new Uint8Array(a.size).fill(a.size & 0xff);
                await other.put(a.key, value);
                await other.close();
                end += putRecordBytes(a.key, value);
                model.set(a.key, a.size);
                if (a.torn > 0) damage(path, end, { t: 'torn', keep: a.torn }, undefined);
              } else {
                await store.close();
                damage(path, end, a.damage, actions[i + 1]);
                store = open();
                await store.ready();
              }
              expect(logicalEnd(path)).toBe(end);
            }
            await store.close();
            damage(path, end, { t: 'ghost' }, undefined);
            store = open();
            for (const [key, size] of model) expect((await store.get(key))?.bytes.length).toBe(size);
            expect(await store.get('stray')).toBeUndefined();
            await store.put('last', new Uint8Array(100));
            expect(logicalEnd(path)).toBe(end + putRecordBytes('last', new Uint8Array(100)));
          } finally {
            await store.close();
            rmSync(dir, { recursive: true, force: true });
          }
        },
      ),
      { numRuns: 60 },
    );
  });
});
