/**
 * fsStorage reads small files and lists small directories of files with synchronous calls
 * (src/storage/fs/read-now.ts), and larger ones asynchronously; reads made together share the
 * directories they walk while the microtask queue runs. Either way a read answers the same:
 * these tests hold both paths to one model of the store, across the thresholds, with the
 * journal's records unapplied and applied, with directories removed and made again between
 * reads, and with a symbolic link planted in a key's path.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import fs from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isCheckpointError, type StoredObject } from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import type { ReadLinks } from 'savepoint/toolkit';
import { readLinked } from '../../../src/contract/linked-read.js';
import { LIST_NOW_MAX_ENTRIES, READ_NOW_MAX_BYTES } from '../../../src/storage/fs/read-now.js';
import { scratchDirs } from '../../support/scratch.js';

const newDir = scratchDirs('fs-read-now');

afterEach(() => vi.restoreAllMocks());

const SIZES = [0, 1, 100, READ_NOW_MAX_BYTES - 1, READ_NOW_MAX_BYTES, READ_NOW_MAX_BYTES + 1];

/** One operation on the store: a put of `size` bytes filled with `fill`, or a delete, of key `dirs[d]/f<n>`. */
type Op = { kind: 'put'; d: number; n: number; size: number; fill: number } | { kind: 'delete'; d: number; n: number };

const DIRS = ['a', 'a/b', 'c/d/e'];
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('put' as const),
      d: fc.nat(DIRS.length - 1),
      n: fc.nat(LIST_NOW_MAX_ENTRIES + 4),
      size: fc.constantFrom(...SIZES),
      fill: fc.nat(255),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), d: fc.nat(DIRS.length - 1), n: fc.nat(LIST_NOW_MAX_ENTRIES + 4) }),
  },
);

/** A pointer whose members name a file of `a/b/` and the folders `a/b/`, `c/d/e/` and `zz/` (never made). */
const POINTER = 'p/ptr.json';
const POINTER_BYTES = new TextEncoder().encode('{"b":"b","e":"e","f":"f000","z":"zz"}');
const POINTER_LINKS: readonly ReadLinks[] = [
  { get: { member: 'f', before: 'a/b/', after: '' }, list: { member: 'b', before: 'a/', after: '/' } },
  { list: { member: 'e', before: 'c/d/', after: '/' } },
  { get: { member: 'z', before: '', after: '/x' }, list: { member: 'z', before: '', after: '/' } },
];

/** The store's own linked read answers each part it follows as the model holds it, and with the parts it leaves read step by step, all of them. */
async function expectLinkedAsModel(storage: FsStorage, model: ReadonlyMap<string, Uint8Array>): Promise<void> {
  const same = (got: StoredObject | undefined, key: string) => {
    expect(got && Buffer.from(got.bytes).toString('hex'), key).toBe(
      model.has(key) ? Buffer.from(model.get(key)!).toString('hex') : undefined,
    );
  };
  const underModel = (prefix: string) => [...model.keys()].filter((k) => k.startsWith(prefix)).sort();
  for (const links of POINTER_LINKS) {
    const own = await storage.getLinked(POINTER, links);
    const full = await readLinked(storage, POINTER, links);
    for (const answer of [own, full]) {
      same(answer?.value, POINTER);
      if (answer?.got) same(answer.got.object, answer.got.key);
      if (answer?.listed) {
        expect(answer.listed.objects.map((o) => o.key)).toEqual(underModel(answer.listed.prefix));
        for (const o of answer.listed.objects) same(o, o.key);
      }
    }
    expect(full?.got !== undefined).toBe(links.get !== undefined);
    expect(full?.listed !== undefined).toBe(links.list !== undefined);
  }
}

describe('fsStorage: synchronous reads of small files answer what asynchronous ones do', () => {
  for (const journal of [true, false]) {
    it(`${journal ? 'journal' : 'direct'}: every get, listing and linked read matches the model, across the size and entry-count thresholds (property)`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 90 }), fc.boolean(), async (ops, flushFirst) => {
          const storage = fsStorage({ dir: newDir(), journal });
          const model = new Map<string, Uint8Array>();
          try {
            for (const op of ops) {
              const key = `${DIRS[op.d]}/f${String(op.n).padStart(3, '0')}`;
              if (op.kind === 'put') {
                const bytes = new Uint8Array(op.size).fill(op.fill);
                await storage.put(key, bytes);
                model.set(key, bytes);
              } else {
                await storage.delete(key);
                model.delete(key);
              }
            }
            await storage.put(POINTER, POINTER_BYTES);
            model.set(POINTER, POINTER_BYTES);
            if (flushFirst && storage.flush) await storage.flush();
            await expectLinkedAsModel(storage, model);
            // All at once: the reads share their directories (see read-now.ts).
            const keys = [...new Set([...model.keys(), 'a/missing', 'nowhere/x', 'a/b/f000'])];
            const got = await Promise.all(keys.map((k) => storage.get(k)));
            keys.forEach((k, i) => {
              const want = model.get(k);
              expect(got[i]?.bytes.length, k).toBe(want?.length);
              if (want) expect(Buffer.from(got[i]!.bytes).equals(Buffer.from(want)), k).toBe(true);
            });
            for (const prefix of ['', 'a/', 'a/b/', 'a/f00', 'c/d/e/', 'c/', 'zz/']) {
              const listed: { key: string; size: number }[] = [];
              for await (const e of storage.list(prefix)) listed.push({ key: e.key, size: e.size });
              const want = [...model]
                .filter(([k]) => k.startsWith(prefix))
                .map(([key, b]) => ({ key, size: b.length }))
                .sort((x, y) => (x.key < y.key ? -1 : x.key > y.key ? 1 : 0));
              expect(listed, prefix).toEqual(want);
            }
          } finally {
            await storage.close();
          }
        }),
        { numRuns: 15 },
      );
    }, 120_000);
  }

  it('journal: a linked read answers the acknowledged writes not applied yet (a put in place, a delete left out)', async () => {
    const storage = fsStorage({ dir: newDir() });
    try {
      for (const n of ['f000', 'f001', 'f002']) await storage.put(`a/b/${n}`, new TextEncoder().encode(n));
      await storage.flush!();
      await storage.put(POINTER, POINTER_BYTES);
      await storage.delete('a/b/f001');
      await storage.put('a/b/f002', new TextEncoder().encode('new'));
      await storage.put('a/b/f003', new TextEncoder().encode('f003'));
      const answer = await storage.getLinked(POINTER, POINTER_LINKS[0]!);
      const text = (o: StoredObject | undefined) => o && new TextDecoder().decode(o.bytes);
      expect(answer && text(answer.value)).toBe(new TextDecoder().decode(POINTER_BYTES));
      expect(answer?.listed?.objects.map((o) => `${o.key}=${text(o)}`)).toEqual(['a/b/f000=f000', 'a/b/f002=new', 'a/b/f003=f003']);
      expect(answer?.got && text(answer.got.object)).toBe('f000');
    } finally {
      await storage.close();
    }
  });

  it('a small file is read with no trip through the thread pool, a large one asynchronously', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir, journal: false });
    try {
      await storage.put('run/small', new Uint8Array(10).fill(1));
      await storage.put('run/large', new Uint8Array(READ_NOW_MAX_BYTES + 1).fill(2));
      const asyncOpen = vi.spyOn(fs.promises, 'open');
      expect((await storage.get('run/small'))?.bytes.length).toBe(10);
      expect(asyncOpen).not.toHaveBeenCalled();
      expect((await storage.get('run/large'))?.bytes.length).toBe(READ_NOW_MAX_BYTES + 1);
      expect(asyncOpen).toHaveBeenCalled();
    } finally {
      await storage.close();
    }
  });

  it('a directory removed and made again between reads is walked again (no directory kept past the microtask queue)', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir, journal: false });
    try {
      await storage.put('run/parts/1/w', new Uint8Array([1]));
      expect((await storage.get('run/parts/1/w'))?.bytes[0]).toBe(1);
      rmSync(join(dir, 'run', 'parts'), { recursive: true });
      await new Promise((r) => setImmediate(r));
      mkdirSync(join(dir, 'run', 'parts', '1'), { recursive: true });
      writeFileSync(join(dir, 'run', 'parts', '1', 'w'), new Uint8Array([2]));
      expect((await storage.get('run/parts/1/w'))?.bytes[0]).toBe(2);
      const listed: string[] = [];
      for await (const e of storage.list('run/parts/1/')) listed.push(e.key);
      expect(listed).toEqual(['run/parts/1/w']);
    } finally {
      await storage.close();
    }
  });

  /** A store opened on a journal directory that holds a document and one writes file (written by another store, closed). */
  async function journalReader(): Promise<ReturnType<typeof fsStorage>> {
    const dir = newDir();
    const writer = fsStorage({ dir });
    await writer.put('run/doc', new Uint8Array([1]));
    await writer.put('run/parts/1/w', new Uint8Array([2]));
    await writer.close();
    const reader = fsStorage({ dir });
    await reader.ready();
    return reader;
  }

  /**
   * Reads the journal reader's document, lets `turns` turns of the microtask queue pass, then lists
   * and reads its writes, as a checkpoint's read does; returns how often the journal lock has been
   * looked at since the first read (counted from then on).
   */
  async function readTogether(reader: ReturnType<typeof fsStorage>, turns: number): Promise<() => number> {
    const lstat = vi.spyOn(fs, 'lstatSync');
    const lockLooks = (): number => lstat.mock.calls.filter(([path]) => String(path).endsWith('lock-\\journal')).length;
    expect((await reader.get('run/doc'))?.bytes[0]).toBe(1);
    for (let i = 0; i < turns; i++) await Promise.resolve();
    const listed: string[] = [];
    for await (const e of reader.list('run/parts/1/')) listed.push(e.key);
    expect(listed).toEqual(['run/parts/1/w']);
    expect((await reader.get('run/parts/1/w'))?.bytes[0]).toBe(2);
    return lockLooks;
  }

  it('journal: reads made together (a document, then its writes listed and read) look at the journal lock once; a later turn looks again', async () => {
    const reader = await journalReader();
    try {
      // A checkpoint's read decodes it (a few dozen turns of the microtask queue) before its writes are listed.
      const lockLooks = await readTogether(reader, 20);
      expect(lockLooks()).toBe(1);
      // Past the event loop's turn, another process may hold the lock: the next read looks again.
      await new Promise((r) => setImmediate(r));
      expect((await reader.get('run/doc'))?.bytes[0]).toBe(1);
      expect(lockLooks()).toBe(2);
    } finally {
      await reader.close();
    }
  });

  it('journal: reads made together share one look at the journal lock however many turns of the microtask queue lie between them, and the directories they opened are closed once it drains', async () => {
    const reader = await journalReader();
    const openFds = (): number => fs.readdirSync('/proc/self/fd').length;
    try {
      await new Promise((r) => setImmediate(r));
      const before = openFds();
      // LangGraph's getState runs a few hundred turns of the queue between a checkpoint's read and its writes'.
      expect((await readTogether(reader, 500))()).toBe(1);
      expect(openFds()).toBeGreaterThan(before);
      await new Promise((r) => setImmediate(r));
      expect(openFds()).toBe(before);
    } finally {
      await reader.close();
    }
  });

  it('a directory of many long names (larger than the size read whole) is listed in full, as a small one is', async () => {
    const storage = fsStorage({ dir: newDir(), journal: false });
    try {
      const names = Array.from({ length: 140 }, (_, i) => `${String(i).padStart(3, '0')}${'n'.repeat(240)}`);
      for (const name of names) await storage.put(`big/${name}`, new Uint8Array([1]));
      await storage.put('small/a', new Uint8Array([2]));
      const listed: string[] = [];
      for await (const e of storage.list('big/')) listed.push(e.key);
      expect(listed).toEqual(names.map((n) => `big/${n}`));
      const small: string[] = [];
      for await (const e of storage.list('small/')) small.push(e.key);
      expect(small).toEqual(['small/a']);
    } finally {
      await storage.close();
    }
  });

  it('a symbolic link in a key path is refused by the synchronous read and listing as by the asynchronous ones', async () => {
    const dir = newDir();
    const outside = newDir();
    writeFileSync(join(outside, 'secret'), 'outside');
    const storage = fsStorage({ dir, journal: false });
    try {
      await storage.put('run/x', new Uint8Array([1]));
      symlinkSync(outside, join(dir, 'run', 'link'));
      const err = await storage.get('run/link/secret').catch((e: unknown) => e);
      expect(isCheckpointError(err, 'checkpoint_key_invalid')).toBe(true);
      const listErr = await (async () => {
        for await (const _ of storage.list('run/link/')) void _;
      })().catch((e: unknown) => e);
      expect(isCheckpointError(listErr, 'checkpoint_key_invalid')).toBe(true);
      expect(String((err as Error).message)).not.toContain(outside);
    } finally {
      await storage.close();
    }
  });
});
