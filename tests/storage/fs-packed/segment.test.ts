import { appendFileSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { segmentName } from '../../../src/storage/fs-packed/manifest.js';
import { encodeRecord, placeRecord, scanSegment } from '../../../src/storage/fs-packed/record.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed');
let n = 0;
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);
/** Where the records of the segment file at `path` end, found by scanning it (past them: written zeros). */
const logicalEnd = (path: string): number => scanSegment(readFileSync(path)).end;

describe('packed fs store: segment records', () => {
  it('a record scans back to its operations (keys in any script, sequences up to 2^53), and any cut of it scans as nothing', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            key: fc.oneof(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 8 })),
            value: fc.option(fc.uint8Array({ maxLength: 64 }), { nil: undefined }),
          }),
          {
            minLength: 1,
            maxLength: 5,
          },
        ),
        fc.nat(),
        fc.oneof(fc.constant(7), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER - 5 })),
        (ops, cutAt, first) => {
          const record = encodeRecord(
            ops.map((o) => (o.value ? { kind: 'put', key: o.key, bytes: o.value } : { kind: 'delete', key: o.key })),
          );
          placeRecord(record, first);
          const whole = scanSegment(record.bytes);
          expect(whole.end).toBe(record.bytes.length);
          expect(whole.ops.map((o) => [o.kind, o.key, o.sequence])).toEqual(
            ops.map((o, i) => [o.value ? 'put' : 'delete', o.key, first + i]),
          );
          expect(whole.maxSequence).toBe(first + ops.length - 1);
          const cut = cutAt % record.bytes.length;
          expect(scanSegment(record.bytes.subarray(0, cut))).toEqual({ ops: [], end: 0, maxSequence: 0 });
        },
      ),
    );
  });

  it('a torn last record is cut off before the next write; every answered write before it is kept', async () => {
    const dir = join(base, `torn-${n++}`);
    const store = createPackedFsStorage({ dir });
    await store.put('a', bytes('one'));
    const { version } = await store.put('b', bytes('two'));
    const path = join(dir, segmentName(1));
    const beforeBatch = logicalEnd(path);
    await store.batch([
      { type: 'put', key: 'c', bytes: bytes('three') },
      { type: 'delete', key: 'a' },
    ]);
    await store.close();
    // Zero the batch record's last bytes, as a crash that kept its first page and not its last
    // would leave it in the written zeros ahead of the records.
    const torn = readFileSync(path);
    torn.fill(0, logicalEnd(path) - 5, logicalEnd(path));
    writeFileSync(path, torn);
    const reopened = createPackedFsStorage({ dir });
    expect(text((await reopened.get('a'))?.bytes)).toBe('one');
    expect(await reopened.get('b')).toEqual({ bytes: expect.anything(), version });
    expect(await reopened.get('c')).toBeUndefined();
    // The next write goes where the torn record began, and survives a reopen. The torn record is
    // gone from the file, not only skipped (cut by the lock's next holder, not by opening: another
    // process may be writing past the last record): nothing of it can be read as a record later.
    await reopened.put('d', bytes('four'));
    await reopened.close();
    const dEnd = beforeBatch + encodeRecord([{ kind: 'put', key: 'd', bytes: bytes('four') }]).bytes.length;
    expect(logicalEnd(path)).toBe(dEnd);
    expect(
      readFileSync(path)
        .subarray(dEnd)
        .every((b) => b === 0),
    ).toBe(true);
    const again = createPackedFsStorage({ dir });
    expect(text((await again.get('d'))?.bytes)).toBe('four');
    expect(text((await again.get('a'))?.bytes)).toBe('one');
    await again.close();
  });

  it('a torn record written over no zeros (a directory from before preallocation) is cut the same', async () => {
    const dir = join(base, `torn-plain-${n++}`);
    const store = createPackedFsStorage({ dir, preallocBytes: 0 });
    await store.put('a', bytes('one'));
    const path = join(dir, segmentName(1));
    const beforeBatch = statSync(path).size;
    await store.put('c', bytes('three'));
    await store.close();
    truncateSync(path, statSync(path).size - 5);
    const reopened = createPackedFsStorage({ dir });
    expect(await reopened.get('c')).toBeUndefined();
    await reopened.put('d', bytes('four'));
    await reopened.close();
    expect(logicalEnd(path)).toBe(beforeBatch + encodeRecord([{ kind: 'put', key: 'd', bytes: bytes('four') }]).bytes.length);
    const again = createPackedFsStorage({ dir });
    expect(text((await again.get('d'))?.bytes)).toBe('four');
    expect(text((await again.get('a'))?.bytes)).toBe('one');
    await again.close();
  });

  it('garbage after the last record is not read as records', async () => {
    const dir = join(base, `garbage-${n++}`);
    const store = createPackedFsStorage({ dir });
    await store.put('a', bytes('one'));
    await store.close();
    appendFileSync(join(dir, segmentName(1)), Buffer.from('SPK1 not a record'));
    const reopened = createPackedFsStorage({ dir });
    expect(text((await reopened.get('a'))?.bytes)).toBe('one');
    await reopened.put('b', bytes('two'));
    await reopened.close();
    const again = createPackedFsStorage({ dir });
    expect(text((await again.get('b'))?.bytes)).toBe('two');
    await again.close();
  });

  it('calls of one turn go in one durable write; conflicting conditions in one group: the first wins', async () => {
    const store = createPackedFsStorage({ dir: join(base, `group-${n++}`) });
    const racing = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => store.put('k', bytes(`${i}`), { ifAbsent: true })));
    expect(racing.map((r) => r.status)).toEqual(['fulfilled', ...Array<string>(7).fill('rejected')]);
    expect(store.stats().writes).toBe(1);
    await Promise.all(Array.from({ length: 8 }, (_, i) => store.put(`k${i}`, bytes(`${i}`))));
    expect(store.stats()).toMatchObject({ writes: 2, records: 9 });
    await store.close();
  });
});
