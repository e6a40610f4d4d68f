import fsp from 'node:fs/promises';
import { CheckpointError } from '../../../contract/errors.js';
import type { RootDir } from '../dir.js';
import { errnoOf } from '../io.js';
import { JOURNAL_NAMES } from './files.js';
import { decodeJournal } from './record.js';

/*
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
 * What opening does when the replay failed with `err`: rethrows it unless the file system is
 * read-only and the journal empty (then the store opens for reads: resolves).
 */
export async function openReadOnly(root: RootDir, err: unknown): Promise<void> {
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
