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

/**
 * Refuses to open `dir` with the packed layout when it holds the file layout: a packed store
 * there would not see the keys its files hold, and would answer as if they were absent. A
 * directory without a packed manifest and without a key's file (or a journal) is free for either
 * layout. Called before the packed store makes or reads anything in it; a missing directory is
 * left to the store's open.
 */
export function assertPackedLayoutDir(dirOption: string, dir: string): void {
  let isPacked: boolean;
  try {
    isPacked = lstatSync(join(dir, PACKED_MANIFEST_NAME)).isFile();
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT' && errnoOf(err) !== 'ENOTDIR') throw err;
    isPacked = false;
  }
  if (isPacked) return;
  let name: string | undefined;
  try {
    name = firstFilesLayoutName(dir);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return;
    throw err;
  }
  if (name !== undefined)
    throw layoutMismatch(dirOption, 'files', 'packed', name.startsWith(INTERNAL_MARK) ? 'its journal' : 'a file per key');
}
