import fsp from 'node:fs/promises';
import type { StorageEntry } from '../../contract/storage.js';
import { assertPrefix, isKey } from '../keys.js';
import { openChild, openDir, type Dir, type OpenedDir, type RootDir } from './dir.js';
import { fdClose } from './fd.js';
import { errnoOf, fsError, versionOf } from './io.js';
import type { AckedState } from './journal/index.js';
import { rootDir } from './lifecycle.js';
import { lstatIfAny } from './lock.js';
import { keyNamesNow, listFilesNow, READ_LATER } from './read-now.js';
import { assertOpen, closeRoot, scrubFor, type FsStoreState } from './store-state.js';

/** The keys under `prefix` in code-unit order, with the journal's acknowledged writes not applied yet. */
export function listEntries(state: FsStoreState, prefix: string): AsyncGenerator<StorageEntry> {
  return listKeyFiles(state, prefix, true);
}

/**
 * The keys under `prefix` as {@link listEntries} lists them, without a `stat` of each file: a
 * `readdir` walk (its directory entries' types tell files from the rest), merged with the
 * journal's acknowledged writes alike.
 */
export async function* listKeyNames(state: FsStoreState, prefix: string): AsyncGenerator<string> {
  for await (const entry of listKeyFiles(state, prefix, false)) yield entry.key;
}

/** Directories a walk by name reads without a promise between two turns of the event loop. */
const YIELD_EVERY_DIRS = 32;

/** Entries without their file's `stat` (listKeyNames): the version and size are not known. */
const UNSTATED = { version: '', size: 0 } as const;

/** {@link listEntries}, with each file's version and size (`stated`) or only its key. */
async function* listKeyFiles(state: FsStoreState, prefix: string, stated: boolean): AsyncGenerator<StorageEntry> {
  assertOpen(state);
  assertPrefix(prefix);
  const base = await rootDir(state);
  const slash = prefix.lastIndexOf('/');
  const dirKey = slash < 0 ? '' : prefix.slice(0, slash);
  let od: OpenedDir | undefined;
  // A listing is not an awaited call close() can wait for: the root stays open until it ends.
  state.listings++;
  const opened: Dir[] = [];
  try {
    const ackedNow = state.journal ? state.journal.unappliedNow(prefix) : undefined;
    const acked = ackedNow ?? (state.journal ? await state.journal.unapplied(prefix) : undefined);
    // A small directory of files (a checkpoint's writes) is listed without a promise (see read-now.ts).
    const now =
      stated && (ackedNow || !state.journal) ? listFilesNow(base, dirKey, prefix.slice(slash + 1), prefix, isKey, opened) : READ_LATER;
    let files: AsyncIterable<StorageEntry> | Iterable<StorageEntry> | undefined;
    if (now !== READ_LATER) files = now;
    else {
      od = await openDir(base, dirKey, prefix, false);
      files = od ? walk(base, od.dir, prefix.slice(slash + 1), stated) : undefined;
    }
    yield* acked && acked.size > 0 ? withUnapplied(files, acked) : (files ?? []);
  } catch (err) {
    throw fsError(err, 'checkpoint_storage_unavailable', 'listing', prefix, scrubFor(state, od ? [od.dir] : opened));
  } finally {
    await od?.close();
    state.listings--;
    if (state.closed) await closeRoot(state);
  }
}

/** The key files below `dir` whose names start with `namePrefix`, depth-first in key order. */
async function* walk(base: RootDir, dir: Dir, namePrefix: string, stated: boolean, walked = { dirsNow: 0 }): AsyncGenerator<StorageEntry> {
  let entries;
  try {
    entries = await fsp.readdir(dir.prefix, { withFileTypes: true });
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return;
    throw err;
  }
  // Sorting names, with "/" appended to directories, yields keys in full-key code-unit
  // order while walking depth-first: every key under "a/" sorts exactly where "a/" does.
  const children: { name: string; dir: boolean; sortKey: string }[] = [];
  for (const entry of entries) {
    const name = entry.name;
    if (name.includes('\\') || !name.startsWith(namePrefix)) continue; // internal files, and names no key can have
    if (entry.isDirectory()) children.push({ name, dir: true, sortKey: `${name}/` });
    else if (entry.isFile()) children.push({ name, dir: false, sortKey: name });
    // Symlinks, FIFOs, sockets: not keys.
  }
  children.sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
  for (let i = 0; i < children.length;) {
    const child = children[i]!;
    if (child.dir) {
      i++;
      // By name, a directory of files is read without a promise: the chunks' 256 directories cost a few calls each, not an await each.
      const keys = stated ? READ_LATER : keyNamesNow(base, dir.rel ? `${dir.rel}/${child.name}` : child.name, isKey);
      if (keys !== READ_LATER) {
        for (const key of keys ?? []) yield { key, ...UNSTATED };
        // A turn of the event loop now and then: a walk of many directories does not hold up a writer sharing the process.
        if (++walked.dirsNow % YIELD_EVERY_DIRS === 0) await new Promise((resolve) => setImmediate(resolve));
        continue;
      }
      const sub = await openChild(base, dir, child.name);
      if (!sub) continue; // gone, or swapped for a link since the listing
      try {
        yield* walk(base, sub, '', stated, walked);
      } finally {
        await fdClose(sub.fd).catch(() => undefined);
      }
      continue;
    }
    if (!stated) {
      const key = dir.rel ? `${dir.rel}/${child.name}` : child.name;
      i++;
      if (isKey(key)) yield { key, ...UNSTATED };
      continue;
    }
    // stat a run of consecutive files together; yield them in order.
    const run: string[] = [];
    while (i < children.length && !children[i]!.dir && run.length < 32) run.push(children[i++]!.name);
    const stats = await Promise.all(run.map((name) => lstatIfAny(dir.at(name))));
    for (let j = 0; j < run.length; j++) {
      const st = stats[j];
      const key = dir.rel ? `${dir.rel}/${run[j]!}` : run[j]!;
      if (!st || !st.isFile() || !isKey(key)) continue;
      yield { key, version: versionOf(st), size: Number(st.size) };
    }
  }
}

/**
 * A listing of the files merged with the journal's acknowledged writes not applied yet: a
 * put not on disk appears in its place (in key order), a replaced key shows its new version,
 * a deleted one is left out.
 */
async function* withUnapplied(
  files: AsyncIterable<StorageEntry> | Iterable<StorageEntry> | undefined,
  acked: ReadonlyMap<string, AckedState>,
): AsyncGenerator<StorageEntry> {
  const puts: StorageEntry[] = [];
  for (const [key, state] of acked)
    if (state.bytes !== null && state.version !== undefined) puts.push({ key, version: state.version, size: state.bytes.length });
  puts.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  let i = 0;
  for await (const entry of files ?? []) {
    while (i < puts.length && puts[i]!.key < entry.key) yield puts[i++]!;
    if (i < puts.length && puts[i]!.key === entry.key) {
      yield puts[i++]!;
      continue;
    }
    if (acked.get(entry.key)?.bytes === null) continue;
    yield entry;
  }
  while (i < puts.length) yield puts[i++]!;
}
