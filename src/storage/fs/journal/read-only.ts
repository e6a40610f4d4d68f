import fsp from 'node:fs/promises';
import { CheckpointError } from '../../../contract/errors.js';
import type { RootDir } from '../dir.js';
import { errnoOf } from '../io.js';
import { JOURNAL_NAMES } from './files.js';
import { decodeJournal } from './record.js';

/*
 * A journaled store whose replay on open fails for want of space (ENOSPC, EDQUOT) opens all
 * the same: its reads answer the journal's records over the files (view.ts) and each write
 * tries the replay first, failing with a CheckpointError until there is room.
 *
 * A journaled store opened on a read-only file system (EROFS) cannot take the journal lock
 * or replay. When the journal holds no record, the files are the whole truth: the store
 * opens, reads answer from them and every write fails with a CheckpointError. When it holds
 * records (a writer stopped before applying them), the files alone would answer older
 * states than were acknowledged: opening is refused, saying what to do.
 */

/** Whether the journal's files hold a record (read by name, without opening them for writing). */
async function holdsRecords(root: RootDir): Promise<boolean> {
  for (const name of JOURNAL_NAMES) {
    let bytes: Uint8Array;
    try {
      bytes = await fsp.readFile(root.at(name));
    } catch (err) {
      if (errnoOf(err) === 'ENOENT') continue;
      throw err;
    }
    if (decodeJournal(bytes).records.length > 0) return true;
  }
  return false;
}

/**
 * What opening does when the replay failed with `err`: rethrows it unless the disk is full,
 * or read-only with an empty journal (then the store opens: resolves).
 */
export async function openReadOnly(root: RootDir, err: unknown): Promise<void> {
  // A full disk: the journal files can be read (and were opened): reads answer its records, writes replay first.
  if (errnoOf(err) === 'ENOSPC' || errnoOf(err) === 'EDQUOT') return;
  if (errnoOf(err) !== 'EROFS') throw err;
  if (await holdsRecords(root)) {
    throw new CheckpointError(
      'checkpoint_storage_unavailable',
      'the fs journal holds acknowledged writes not yet applied to the files, and the file system is read-only: ' +
        'mount it read-write and open the store again to replay them',
      { cause: err, details: { code: 'EROFS', reason: 'journal_read_only' } },
    );
  }
}
