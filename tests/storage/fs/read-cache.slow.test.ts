/*
 * fsStorage keeps small files it read, and the entries of small directories it listed, with
 * the stat they were read under, and answers them again after one stat (read-cache.ts) — only
 * for files and directories settled for SETTLED_MS before they were read. These tests make
 * settled files (written, then left alone past that time, once per test), read them so they
 * are kept, change them behind the store's back as another process or tool would, and check
 * that every read and listing answers what the files hold now.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isCheckpointError, listAll, type StorageAdapter, type StoredObject } from 'savepoint';
import type { ReadLinks } from 'savepoint/toolkit';
import { readLinked } from '../../../src/contract/linked-read.js';
import { fsStorage } from 'savepoint/fs';
import { SETTLED_MS } from '../../../src/storage/fs/read-cache.js';
import { scratchDirs } from '../../support/scratch.js';

const newDir = scratchDirs('fs-read-cache');

afterEach(() => vi.restoreAllMocks());

const NAMES = ['k0.json', 'k1.json', 'k2.json', 'k3.json'];
/** Folders of settled files, one per property run (each run changes files still kept). */
const FOLDERS = 40;
const keysIn = (folder: string): string[] => NAMES.map((name) => `${folder}/${name}`);
const KEYS = keysIn('c');
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLED_MS + 300));

/** A store over a fresh directory holding `KEYS` (direct writes: the files are in place at once), settled and read once (so kept). */
async function settledStore(folders: readonly string[] = ['c']): Promise<{ dir: string; storage: StorageAdapter }> {
  const dir = newDir();
  const writer = fsStorage({ dir, journal: false });
  for (const folder of folders) {
    for (const [i, key] of keysIn(folder).entries())
      await writer.put(key, new TextEncoder().encode(`{"v":${i},"pad":"${'x'.repeat(i * 10)}"}`));
    await writer.put(pointerKey(folder), new TextEncoder().encode(`{"folder":"${folder}"}`));
  }
  await writer.close();
  await settle();
  const storage = fsStorage({ dir, journal: false });
  for (const folder of folders) await readAll(storage, folder);
  return { dir, storage };
}

/** A pointer outside the folder whose member names it: a linked read of it reads the folder's files. */
const pointerKey = (folder: string): string => `pointers/${folder}.json`;
const FOLDER_LINKS: ReadLinks = {
  get: { member: 'folder', before: '', after: `/${NAMES[1]}` },
  list: { member: 'folder', before: '', after: '/' },
};

/** The pointer's linked read (the store's own, each part it left read step by step), as texts and versions. */
async function linkedOf(storage: StorageAdapter, folder: string): Promise<unknown> {
  const answer = await readLinked(storage, pointerKey(folder), FOLDER_LINKS);
  const text = (o: StoredObject | undefined) => o && `${new TextDecoder().decode(o.bytes)}@${o.version}`;
  return {
    got: answer?.got && { key: answer.got.key, object: text(answer.got.object) },
    listed: answer?.listed?.objects.map((o) => `${o.key}=${text(o)}`),
  };
}

/** Every key's bytes and version, the listing and the folder's linked read, as `storage` answers them (an error by its reason code). */
async function readAll(storage: StorageAdapter, folder = 'c'): Promise<unknown> {
  const got: Record<string, unknown> = {};
  for (const key of [...keysIn(folder), `${folder}/new.json`]) {
    try {
      const object = await storage.get(key);
      got[key] = object && { text: new TextDecoder().decode(object.bytes), version: object.version };
    } catch (err) {
      got[key] = isCheckpointError(err) ? err.reasonCode : String(err);
    }
  }
  got.listed = (await listAll(storage, `${folder}/`)).map((e) => `${e.key}@${e.version}#${e.size}`);
  try {
    got.linked = await linkedOf(storage, folder);
  } catch (err) {
    got.linked = isCheckpointError(err) ? err.reasonCode : String(err);
  }
  return got;
}

/** What another process or tool does to a file or its directory. */
type Change = 'in place, same size' | 'in place, stamps set back' | 'replaced by rename' | 'deleted' | 'made a link' | 'made a directory';
const CHANGES: readonly Change[] = [
  'in place, same size',
  'in place, stamps set back',
  'replaced by rename',
  'deleted',
  'made a link',
  'made a directory',
];

/** Runs `edit` on the file at `path`, then sets its atime and mtime back to the nanosecond (`touch -r`; utimes from JS rounds them). */
function setStampsBack(path: string, edit: () => void): void {
  const reference = `${path}.stamps`;
  fs.writeFileSync(reference, '');
  execFileSync('touch', ['-r', path, reference]);
  edit();
  execFileSync('touch', ['-r', reference, path]);
  fs.rmSync(reference);
}

function change(dir: string, key: string, what: Change, n: number): void {
  const path = join(dir, key);
  const exists = fs.existsSync(path) && fs.lstatSync(path).isFile();
  const size = exists ? fs.statSync(path).size : 8;
  const text = `${n}`.padEnd(size, 'y').slice(0, size);
  switch (what) {
    case 'in place, same size': {
      if (exists) fs.writeFileSync(path, text);
      return;
    }
    case 'in place, stamps set back': {
      if (!exists) return;
      setStampsBack(path, () => fs.writeFileSync(path, text));
      return;
    }
    case 'replaced by rename':
      if (fs.existsSync(path) && fs.lstatSync(path).isDirectory()) fs.rmSync(path, { recursive: true });
      fs.writeFileSync(`${path}.tmp`, text);
      fs.renameSync(`${path}.tmp`, path);
      return;
    case 'deleted':
      fs.rmSync(path, { recursive: true, force: true });
      return;
    case 'made a link':
      fs.rmSync(path, { recursive: true, force: true });
      fs.symlinkSync(join(dir, KEYS[0]!), path);
      return;
    case 'made a directory':
      fs.rmSync(path, { recursive: true, force: true });
      fs.mkdirSync(path);
  }
}

describe('fsStorage: a file read again answers what it holds now', () => {
  it('property: after changes by another tool (in place, stamps set back, renamed, deleted, a link, a directory, a new file), reads, listings and linked reads answer as a fresh store', async () => {
    const folders = Array.from({ length: FOLDERS }, (_, i) => `f${i}`);
    const { dir, storage } = await settledStore(folders);
    let n = 0;
    let run = 0;
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ name: fc.constantFrom(...NAMES, 'new.json'), what: fc.constantFrom(...CHANGES) }), { maxLength: 3 }),
          async (changes) => {
            const folder = folders[run++ % FOLDERS]!;
            for (const c of changes) change(dir, `${folder}/${c.name}`, c.what, n++);
            const fresh = fsStorage({ dir, journal: false });
            try {
              expect(await readAll(storage, folder)).toEqual(await readAll(fresh, folder));
            } finally {
              await fresh.close();
            }
          },
        ),
        { numRuns: FOLDERS },
      );
    } finally {
      await storage.close();
    }
  }, 30_000);

  it('a settled file kept, then rewritten in place by another process with its size and mtime kept, is read afresh', async () => {
    const { dir, storage } = await settledStore();
    try {
      const path = join(dir, KEYS[1]!);
      const before = fs.readFileSync(path, 'utf8');
      const after = before.replace('"v":1', '"v":7');
      setStampsBack(path, () =>
        execFileSync(process.execPath, ['-e', `require('fs').writeFileSync(${JSON.stringify(path)}, ${JSON.stringify(after)})`]),
      );
      expect(fs.statSync(path).size).toBe(before.length);
      const got = await storage.get(KEYS[1]!);
      expect(new TextDecoder().decode(got!.bytes)).toBe(after);
    } finally {
      await storage.close();
    }
  }, 30_000);

  it('a settled file read twice is opened once; a file written just now is opened at every read', async () => {
    const { dir, storage } = await settledStore();
    try {
      const opens = vi.spyOn(fs, 'openSync');
      const kept = join(dir, KEYS[2]!);
      await storage.get(KEYS[2]!);
      await storage.get(KEYS[2]!);
      expect(opens.mock.calls.filter(([p]) => String(p).endsWith('/k2.json')).length).toBe(0);
      expect(fs.existsSync(kept)).toBe(true);
      await storage.put('c/young.json', new TextEncoder().encode('{}'));
      await storage.get('c/young.json');
      await storage.get('c/young.json');
      expect(opens.mock.calls.filter(([p]) => String(p).endsWith('/young.json')).length).toBe(2);
    } finally {
      await storage.close();
    }
  }, 30_000);

  it('a kept file is still refused past a reader’s limit', async () => {
    const { storage } = await settledStore();
    try {
      await expect(storage.get(KEYS[3]!, { maxBytes: 4 })).rejects.toSatisfy((err) => isCheckpointError(err, 'checkpoint_too_large'));
      expect((await storage.get(KEYS[3]!))?.bytes.length).toBeGreaterThan(4);
    } finally {
      await storage.close();
    }
  }, 30_000);
});
