import { constants } from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import type { StoredObject } from '../../contract/storage.js';
import { openDir, type Dir, type OpenedDir } from './dir.js';
import { errnoOf, fsError, readAll, versionOf } from './io.js';
import { rootDir } from './lifecycle.js';
import { keyPath, occupiedRefused, symlinkRefused, type KeyPath } from './paths.js';
import { scrubFor, type FsStoreState } from './store-state.js';

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;
// O_NONBLOCK keeps a planted FIFO from hanging a read; it changes nothing for regular files.
const READ_FLAGS = O_RDONLY | O_NOFOLLOW | O_NONBLOCK;

/** The key's file in `dir`, or undefined when there is none. */
async function readKeyFile(dir: Dir, kp: KeyPath): Promise<StoredObject | undefined> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(dir.at(kp.base), READ_FLAGS);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    if (code === 'ELOOP' || code === 'EMLINK') throw symlinkRefused(kp.key);
    throw err;
  }
  try {
    const st = await fh.stat({ bigint: true });
    // A directory or FIFO where a key's file should be: say so (a reader must not take it for "no snapshot").
    if (!st.isFile()) throw occupiedRefused(kp.key);
    return { bytes: await readAll(fh, Number(st.size)), version: versionOf(st) };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

/** A key's bytes and version: the journal's acknowledged state when it has one for the key, else the key's file. */
export async function readStored(state: FsStoreState, key: string): Promise<StoredObject | undefined> {
  const base = await rootDir(state);
  const kp = keyPath(key);
  let od: OpenedDir | undefined;
  try {
    // Journal: an acknowledged write whose file is not applied yet answers from the journal's records.
    const journal = state.journal;
    const acked = journal ? (await journal.unapplied(key)).get(key) : undefined;
    if (acked?.bytes === null) return undefined;
    if (acked?.version !== undefined) return { bytes: acked.bytes.slice(), version: acked.version };
    od = await openDir(base, kp.dirKey, key, false);
    return od ? await readKeyFile(od.dir, kp) : undefined;
  } catch (err) {
    if (errnoOf(err) === 'ENAMETOOLONG') return undefined;
    throw fsError(err, 'checkpoint_storage_unavailable', 'reading', key, scrubFor(state, od ? [od.dir] : []));
  } finally {
    await od?.close();
  }
}
