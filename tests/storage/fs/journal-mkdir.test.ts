/**
 * Directories off the journaled commit's path (the LangGraph fs row: a thread's
 * `history/`, `parts/` and one `parts/<sequence>/` per superstep are new directories). A put
 * into a directory that does not exist yet is planned without making it — the walk probes,
 * refusing a symbolic link or a file in the way exactly as before — and its apply makes it,
 * before the rename. Until then reads answer the acknowledged bytes. And the lock's linger
 * ends without waiting when a commit comes while the files are applied.
 */
import { existsSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { StorageAdapter } from 'savepoint';
import { memoryStorage } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { gate } from '../../support/rename-gate.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-mkdir');

/** The real calls, logged as issued (`mkdir <last component>`, `rename`, …); renames wait while the gate is closed (the apply held back). */
function gatedIo(): { io: FsIo; log: string[]; close(): void; open(): void } {
  const log: string[] = [];
  const renames = gate();
  const io: FsIo = {
    ...realIo,
    mkdir: (path) => {
      log.push(`mkdir ${path.slice(path.lastIndexOf('/') + 1)}`);
      return realIo.mkdir(path);
    },
    rename: async (from, to) => {
      log.push('rename');
      await renames.wait();
      return realIo.rename(from, to);
    },
  };
  return { io, log, close: renames.close, open: renames.open };
}

const text = (s: string): Uint8Array => utf8Encode(s);
async function keys(store: StorageAdapter, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of store.list(prefix)) out.push(e.key);
  return out;
}

describe('fsStorage journal: directories made when applied, not on the commit path', () => {
  it('a put into new directories is answered before any mkdir; its apply makes them, then the file lands (regression: a mkdir per new directory before the record)', async () => {
    const dir = fresh();
    const { io, log } = gatedIo();
    const store = createFsStorage({ dir, journal: true }, { io });
    await store.put('t/history/1.json', text('{"n":1}'));
    const atAnswer = log.filter((l) => l.startsWith('mkdir'));
    await store.put('t/parts/1/w.json', text('{"w":1}'));
    const atSecond = log.filter((l) => l.startsWith('mkdir'));
    // Answered before the apply's first call (it starts on a later turn): no directory made for the put yet
    // (the first put's apply may have made t and history meanwhile).
    expect(atAnswer).toEqual([]);
    expect(atSecond.filter((l) => l === 'mkdir parts' || l === 'mkdir 1')).toEqual([]);
    await store.flush!();
    expect(log.filter((l) => l.startsWith('mkdir'))).toEqual(['mkdir t', 'mkdir history', 'mkdir parts', 'mkdir 1']);
    expect(readFileSync(join(dir, 't/parts/1/w.json'), 'utf8')).toBe('{"w":1}');
    await store.close();
  });

  it('acknowledged puts into directories not made yet read back (get, list, a second instance) before they are applied', async () => {
    const dir = fresh();
    const gated = gatedIo();
    // Another instance, opened first (its opening replays the journal under the lock).
    const other = createFsStorage({ dir, journal: true });
    await other.ready();
    const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 60_000 });
    gated.close();
    await store.put('r/parts/3/w.json', text('three'));
    await store.put('r/history/a.json', text('a'));
    expect(existsSync(join(dir, 'r/parts/3/w.json'))).toBe(false);
    expect(utf8Decode((await store.get('r/parts/3/w.json'))!.bytes)).toBe('three');
    expect(await keys(store, 'r/')).toEqual(['r/history/a.json', 'r/parts/3/w.json']);
    // The other instance, while this one holds the journal lock, reads the journal's records.
    expect(utf8Decode((await other.get('r/parts/3/w.json'))!.bytes)).toBe('three');
    expect(await keys(other, 'r/parts/')).toEqual(['r/parts/3/w.json']);
    gated.open();
    await store.flush!();
    expect(readFileSync(join(dir, 'r/parts/3/w.json'), 'utf8')).toBe('three');
    await store.close();
    await other.close();
  });

  it('refusals stay at plan time: a symlink or a file in the way, on disk or acknowledged and not yet applied, and a file where a directory is to be made', async () => {
    const dir = fresh();
    const outside = fresh();
    symlinkSync(outside, join(dir, 'linked'));
    writeFileSync(join(dir, 'plain'), 'x');
    const gated = gatedIo();
    const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 60_000 });
    await expect(store.put('linked/a/b.json', text('x'))).rejects.toMatchObject({
      reasonCode: 'checkpoint_key_invalid',
      details: { reason: 'symlink' },
    });
    await expect(store.put('plain/a/b.json', text('x'))).rejects.toMatchObject({
      reasonCode: 'checkpoint_key_invalid',
      details: { reason: 'path_occupied' },
    });
    gated.close();
    await store.put('n/f', text('file'));
    await expect(store.put('n/f/g/h.json', text('x'))).rejects.toMatchObject({ details: { reason: 'path_occupied' } });
    await store.put('n/d/e/k.json', text('k'));
    await expect(store.put('n/d/e', text('x'))).rejects.toMatchObject({ details: { reason: 'path_occupied' } });
    await expect(store.put('n/d', text('x'))).rejects.toMatchObject({ details: { reason: 'path_occupied' } });
    gated.open();
    await store.flush!();
    expect(readFileSync(join(dir, 'n/f'), 'utf8')).toBe('file');
    expect(readFileSync(join(dir, 'n/d/e/k.json'), 'utf8')).toBe('k');
    expect(existsSync(join(outside, 'a'))).toBe(false);
    await store.close();
  });

  it('property: puts and deletes in new nested directories, applied late or at once, read as memoryStorage does and land as it holds them', async () => {
    const key = fc
      .tuple(fc.constantFrom('a', 'b'), fc.constantFrom('p', 'q'), fc.constantFrom('1', '2'), fc.constantFrom('x.json', 'y.json'))
      .map((s) => s.join('/'));
    const op = fc.oneof(
      fc.record({ type: fc.constant('put' as const), key, value: fc.string({ maxLength: 3 }) }),
      fc.record({ type: fc.constant('delete' as const), key }),
      fc.record({ type: fc.constant('flush' as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), fc.boolean(), async (ops, gate) => {
        const dir = fresh();
        const gated = gatedIo();
        const store = createFsStorage({ dir, journal: true }, { io: gated.io });
        const model = memoryStorage();
        if (gate) gated.close();
        for (const o of ops) {
          if (o.type === 'flush') {
            gated.open();
            await store.flush!();
            if (gate) gated.close();
          } else if (o.type === 'put') {
            await store.put(o.key, text(o.value));
            await model.put(o.key, text(o.value));
          } else expect(await store.delete(o.key)).toBe(await model.delete(o.key));
        }
        const want = await keys(model, '');
        expect(await keys(store, '')).toEqual(want);
        for (const k of want) expect(utf8Decode((await store.get(k))!.bytes)).toBe(utf8Decode((await model.get(k))!.bytes));
        gated.open();
        await store.flush!();
        for (const k of want) expect(readFileSync(join(dir, k), 'utf8')).toBe(utf8Decode((await model.get(k))!.bytes));
        await store.close();
        const reopened = createFsStorage({ dir, journal: true });
        expect(await keys(reopened, '')).toEqual(want);
        await reopened.close();
      }),
      { numRuns: 20 },
    );
  });

  it("a commit that comes while the linger's release waits for the files keeps the hold: answered without waiting for them (regression: it waited for every file, then took the lock again)", async () => {
    const dir = fresh();
    const gated = gatedIo();
    const store = createFsStorage({ dir, journal: true }, { io: gated.io, journalLingerMs: 1 });
    await store.put('k/a.json', text('a'));
    await store.flush!();
    gated.close();
    await store.put('k/b.json', text('b'));
    // The 1 ms linger was set before this 20 ms timer: it has fired (its release now waits for the held-back rename).
    await new Promise((r) => setTimeout(r, 20));
    const next = store.put('k/c.json', text('c')).then(() => 'answered');
    const held = new Promise((r) => setTimeout(() => r('still waiting'), 2000));
    expect(await Promise.race([next, held])).toBe('answered');
    gated.open();
    await store.flush!();
    expect(readFileSync(join(dir, 'k/c.json'), 'utf8')).toBe('c');
    await store.close();
  });
});
