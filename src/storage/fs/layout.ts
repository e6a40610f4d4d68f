import { lstatSync, opendirSync } from 'node:fs';
import { join } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { errnoOf } from './io.js';
import { JOURNAL_NAMES } from './journal/index.js';
import { MANIFEST_NAME } from '../fs-packed/manifest.js';
import { INTERNAL_MARK } from './names.js';

/**
 * How a store's directory holds its values: `files`, a file per key at the key's path (what the
 * specs name, what other tools read); `packed`, values kept in segment files under internal names
 * (`.sp\packed\…`), found through an index in memory (src/storage/fs-packed).
 */
export type FsLayout = 'files' | 'packed';

export const FS_LAYOUTS: readonly FsLayout[] = ['files', 'packed'];

/** The packed layout's manifest (an internal name: never a key, never listed): its presence is what makes a directory packed. */
export const PACKED_MANIFEST_NAME = MANIFEST_NAME;

/** The refusal of a directory holding `held` opened with layout `asked`. */
export function layoutMismatch(dir: string, held: FsLayout, asked: FsLayout, evidence: string): CheckpointError {
  return new CheckpointError(
    'checkpoint_config_invalid',
    `fsStorage: directory ${JSON.stringify(dir)} holds the ${held === 'files' ? 'file' : 'packed'} layout (${evidence}), ` +
      `and was opened with layout '${asked}': open it with layout '${held}', or use another directory`,
    { details: { reason: 'layout_mismatch', layout: held, asked } },
  );
}

/** Whether a name in the store's directory belongs to the file layout: a key's file or folder, or the journal. */
function filesLayoutName(name: string): boolean {
  return !name.startsWith(INTERNAL_MARK) || (JOURNAL_NAMES as readonly string[]).includes(name);
}

/**
 * The first name of `dir` (absolute) that shows the file layout, or undefined when it holds none
 * (a new or empty directory, or a packed one). Stops at the first such name: a directory of many
 * keys costs one `readdir` batch, not a listing.
 */
function firstFilesLayoutName(dir: string): string | undefined {
  const opened = opendirSync(dir);
  try {
    for (let entry = opened.readSync(); entry; entry = opened.readSync()) if (filesLayoutName(entry.name)) return entry.name;
    return undefined;
  } finally {
    opened.closeSync();
  }
}

/** Whether `dir` (absolute) holds a packed manifest: false when it does not, or `dir` does not exist. */
function holdsManifest(dir: string): boolean {
  try {
    return lstatSync(join(dir, PACKED_MANIFEST_NAME)).isFile();
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT' && errnoOf(err) !== 'ENOTDIR') throw err;
    return false;
  }
}

/** Whether `dir` (absolute) holds one of the file layout's journal files. */
function holdsJournal(dir: string): boolean {
  for (const name of JOURNAL_NAMES) {
    try {
      lstatSync(join(dir, name));
      return true;
    } catch (err) {
      if (errnoOf(err) !== 'ENOENT' && errnoOf(err) !== 'ENOTDIR') throw err;
    }
  }
  return false;
}

/**
 * The refusal of a directory holding both a packed manifest and the file layout's journal: two
 * processes opened it, new, with different layouts at the same moment, and each may hold values
 * the other does not see. Neither layout opens it until one of the two is removed by hand.
 */
export function layoutConflict(dir: string): CheckpointError {
  return new CheckpointError(
    'checkpoint_config_invalid',
    `fsStorage: directory ${JSON.stringify(dir)} holds both a packed manifest (.sp\\packed\\manifest) and the file layout's journal ` +
      '(two processes made it at once with different layouts): neither layout opens it; keep the one whose values you want ' +
      '(copy the other out first) and remove the other',
    { details: { reason: 'layout_conflict' } },
  );
}

/**
 * The layout `dir` (absolute) holds: `packed` when it has a packed manifest, `files` when it has a
 * key's file or folder or the journal, undefined when it holds neither (a new or empty directory, or
 * none at all). A manifest beside a journal is {@link layoutConflict}. A few synchronous calls: a
 * `lstat`, and a `readdir` batch stopping at the first name.
 */
export function layoutHeldBy(dirOption: string, dir: string): FsLayout | undefined {
  if (holdsManifest(dir)) {
    if (holdsJournal(dir)) throw layoutConflict(dirOption);
    return 'packed';
  }
  try {
    return firstFilesLayoutName(dir) === undefined ? undefined : 'files';
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * Whether `dir` holds a packed store already (`'packed'`) or no layout yet (`'new'`, a missing
 * directory too: left to the store's open). Throws when it holds the file layout: a packed store
 * there would not see the keys its files hold, and would answer as if they were absent. A
 * directory without a packed manifest and without a key's file (or a journal) is free for either
 * layout. Called before the packed store makes or reads anything in it.
 */
export function packedLayoutDirState(dirOption: string, dir: string): 'packed' | 'new' {
  const held = layoutHeldBy(dirOption, dir);
  if (held === 'files') throw filesLayoutHeld(dirOption, firstFilesLayoutName(dir) ?? '', '');
  return held ?? 'new';
}

/**
 * After a packed store made its manifest in a directory that held no layout: refuses it when the
 * file layout appeared there meanwhile (another process opened it with the file layout at the same
 * moment). With the file layout's own check after it made its journal (lifecycle.ts), one of two
 * processes racing on a new directory with different layouts always sees the other.
 */
export function assertNoFilesLayoutBeside(dirOption: string, dir: string): void {
  const name = firstFilesLayoutName(dir);
  if (name !== undefined) throw filesLayoutHeld(dirOption, name, ', made at the same moment');
}

/** The packed layout's refusal of a directory whose name `name` shows the file layout: its journal (`journalWhen` says since when) or a key's file. */
function filesLayoutHeld(dirOption: string, name: string, journalWhen: string): CheckpointError {
  return layoutMismatch(dirOption, 'files', 'packed', name.startsWith(INTERNAL_MARK) ? `its journal${journalWhen}` : 'a file per key');
}
