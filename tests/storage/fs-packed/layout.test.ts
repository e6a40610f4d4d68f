import { existsSync, mkdirSync, readFileSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { MANIFEST_NAME, segmentName } from '../../../src/storage/fs-packed/manifest.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-layout');
let n = 0;
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

describe('packed fs store: manifest and segments', () => {
  it('a new store is a manifest naming one active segment', async () => {
    const dir = join(base, `new-${n++}`);
    const store = createPackedFsStorage({ dir });
    await store.put('a', bytes('one'));
    await store.close();
    expect(readdirSync(dir).sort()).toEqual([MANIFEST_NAME, segmentName(1)].sort());
    expect(readFileSync(join(dir, MANIFEST_NAME), 'utf8')).toBe('{"format":1,"generation":1,"segments":[{"id":1}]}');
    expect(segmentName(1)).toBe('.sp\\packed\\seg-0000000001');
  });

  it('versions are stored: the same after a reopen, and a later write never repeats one', async () => {
    const dir = join(base, `versions-${n++}`);
    const store = createPackedFsStorage({ dir });
    const seen = new Set<string>();
    const a = await store.put('a', bytes('1'));
    const b = await store.put('b', bytes('2'));
    const outcomes = await store.batch([
      { type: 'put', key: 'c', bytes: bytes('3') },
      { type: 'delete', key: 'a' },
    ]);
    for (const v of [a.version, b.version, (outcomes[0] as { version: string }).version]) seen.add(v);
    expect(seen.size).toBe(3);
    await store.close();
    const again = createPackedFsStorage({ dir });
    expect((await again.get('b'))?.version).toBe(b.version);
    expect((await again.get('c'))?.version).toBe((outcomes[0] as { version: string }).version);
    expect(await again.get('a')).toBeUndefined();
    // The delete took a sequence too: a put after the reopen gets a version above every one given.
    const d = await again.put('a', bytes('4'));
    expect(seen.has(d.version)).toBe(false);
    expect(parseInt(d.version, 36)).toBeGreaterThan(Math.max(...[...seen].map((v) => parseInt(v, 36))) + 1);
    await again.close();
  });

  it('segment files the manifest does not name, and manifest temp files, are removed by the first holder of the lock', async () => {
    const dir = join(base, `leftovers-${n++}`);
    const store = createPackedFsStorage({ dir });
    await store.put('a', bytes('one'));
    await store.close();
    writeFileSync(join(dir, segmentName(7)), 'a crashed rotation');
    writeFileSync(join(dir, '.sp\\packed\\manifest-123-0'), '{"format":1');
    writeFileSync(join(dir, 'user-file'), 'not ours');
    const again = createPackedFsStorage({ dir });
    expect(text((await again.get('a'))?.bytes)).toBe('one');
    // Not by opening (another process may be rotating now), by the next write, under the lock.
    expect(readdirSync(dir)).toContain(segmentName(7));
    await again.put('b', bytes('two'));
    await again.close();
    expect(readdirSync(dir).sort()).toEqual([MANIFEST_NAME, segmentName(1), 'user-file'].sort());
  });

  it('segment files without a manifest are leftovers of a first open that crashed', async () => {
    const dir = join(base, `first-${n++}`);
    mkdirSync(dir);
    writeFileSync(join(dir, segmentName(1)), 'half made');
    const store = createPackedFsStorage({ dir });
    await store.put('a', bytes('one'));
    await store.close();
    // The leftover's id is not reused: a name whose unlink was not yet durable can never be mistaken for the new segment.
    expect(existsSync(join(dir, segmentName(1)))).toBe(false);
    expect(readFileSync(join(dir, MANIFEST_NAME), 'utf8')).toBe('{"format":1,"generation":1,"segments":[{"id":2}]}');
  });

  it('a manifest naming a missing segment, or of another format, is refused', async () => {
    const dir = join(base, `missing-${n++}`);
    const store = createPackedFsStorage({ dir });
    await store.put('a', bytes('one'));
    await store.close();
    unlinkSync(join(dir, segmentName(1)));
    await expect(createPackedFsStorage({ dir }).get('a')).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
    writeFileSync(join(dir, MANIFEST_NAME), '{"format":2,"generation":1,"segments":[{"id":1}]}');
    await expect(createPackedFsStorage({ dir }).get('a')).rejects.toMatchObject({ reasonCode: 'checkpoint_integrity_mismatch' });
  });
});

describe('packed fs store: linked read of an absent value', () => {
  it('lists keysIfAbsent itself (a new thread costs no listing after), and answers a present value as before', async () => {
    const store = createPackedFsStorage({ dir: join(base, `absent-${n++}`) });
    for (const key of ['t/parts/1/a', 't/history/x.json', 'u/head.json']) await store.put(key, bytes('{}'));
    expect(await store.getLinked('t/head.json', { keysIfAbsent: 't/' })).toEqual({
      absent: { prefix: 't/', keys: ['t/history/x.json', 't/parts/1/a'] },
    });
    expect(await store.getLinked('v/head.json', { keysIfAbsent: 'v/' })).toEqual({ absent: { prefix: 'v/', keys: [] } });
    expect(await store.getLinked('v/head.json', {})).toBeUndefined();
    const present = await store.getLinked('u/head.json', { keysIfAbsent: 'u/' });
    expect(text(present?.value?.bytes)).toBe('{}');
    expect(present?.absent).toBeUndefined();
    await expect(store.getLinked('v/head.json', { keysIfAbsent: '../' })).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    await store.close();
  });
});
