import fsp, { type FileHandle } from 'node:fs/promises';
import { readTooLarge } from '../../contract/read-limit.js';
import type { GetOptions, StoredObject } from '../../contract/storage.js';
import { openDir, type Dir, type OpenedDir } from './dir.js';
import { errnoOf, fsError, readAll, versionOf } from './io.js';
import { rootDir } from './lifecycle.js';
import { absentOnOpen, assertReadable, keyPath, READ_FLAGS, type KeyPath } from './paths.js';
import type { AckedState } from './journal/index.js';
import { READ_LATER, readKeyNow } from './read-now.js';
import { scrubFor, type FsStoreState } from './store-state.js';

/** The largest value a read takes, and whose limit that is (for the refusal's message). */
export interface ReadLimit {
  readonly bytes: number;
  readonly whose: string;
}

/** The smaller of the store's `maxReadBytes` and the caller's `maxBytes`. */
export function readLimitOf(state: FsStoreState, options: GetOptions | undefined): ReadLimit {
  const store = state.settings.maxReadBytes;
  const asked = options?.maxBytes;
  return asked !== undefined && asked < store
    ? { bytes: asked, whose: "the reader's limit (maxBytes)" }
    : { bytes: store, whose: "the store's limit (maxReadBytes)" };
}

/** The key's file in `dir`, or undefined when there is none; a file over `limit` is refused from its size, unread. */
async function readKeyFile(dir: Dir, kp: KeyPath, limit: ReadLimit): Promise<StoredObject | undefined> {
  let fh: FileHandle;
  try {
    fh = await fsp.open(dir.at(kp.base), READ_FLAGS);
  } catch (err) {
    return absentOnOpen(err, kp.key);
  }
  try {
    const st = await fh.stat({ bigint: true });
    assertReadable(st, kp.key, limit.bytes, limit.whose);
    return { bytes: await readAll(fh, Number(st.size)), version: versionOf(st) };
  } finally {
    await fh.close().catch(() => undefined);
  }
}

const NONE: ReadonlyMap<string, AckedState> = new Map();

/**
 * {@link readStored} answered without a promise when it can (see read-now.ts):
 * {@link READ_LATER} when the store is not open yet, another instance's journal records must
 * be read, or the file is too large to read synchronously.
 */
export function readStoredNow(state: FsStoreState, key: string, limit: ReadLimit): StoredObject | undefined | typeof READ_LATER {
  const root = state.root;
  if (!root) return READ_LATER;
  const acked = state.journal ? state.journal.unappliedKeyNow(key) : NONE;
  if (acked === undefined) return READ_LATER;
  const ours = acked.get(key);
  if (ours?.bytes === null) return undefined;
  if (ours?.version !== undefined) {
    if (ours.bytes.length > limit.bytes) throw readTooLarge(key, ours.bytes.length, limit.bytes, limit.whose);
    return { bytes: ours.bytes.slice(), version: ours.version };
  }
  const opened: Dir[] = [];
  try {
    return readKeyNow(root, keyPath(key), limit.bytes, limit.whose, opened);
  } catch (err) {
    if (errnoOf(err) === 'ENAMETOOLONG') return undefined;
    throw fsError(err, 'checkpoint_storage_unavailable', 'reading', key, scrubFor(state, opened));
  }
}

/** A key's bytes and version: the journal's acknowledged state when it has one for the key, else the key's file. */
export async function readStored(state: FsStoreState, key: string, options?: GetOptions): Promise<StoredObject | undefined> {
  const limit = readLimitOf(state, options);
  const now = readStoredNow(state, key, limit);
  if (now !== READ_LATER) return now;
  const base = await rootDir(state);
  const kp = keyPath(key);
  let od: OpenedDir | undefined;
  try {
    // Journal: an acknowledged write whose file is not applied yet answers from the journal's records.
    const journal = state.journal;
    const acked = journal ? (await journal.unapplied(key)).get(key) : undefined;
    if (acked?.bytes === null) return undefined;
    if (acked?.version !== undefined) {
      if (acked.bytes.length > limit.bytes) throw readTooLarge(key, acked.bytes.length, limit.bytes, limit.whose);
      return { bytes: acked.bytes.slice(), version: acked.version };
    }
    od = await openDir(base, kp.dirKey, key, false);
    return od ? await readKeyFile(od.dir, kp, limit) : undefined;
  } catch (err) {
    if (errnoOf(err) === 'ENAMETOOLONG') return undefined;
    throw fsError(err, 'checkpoint_storage_unavailable', 'reading', key, scrubFor(state, od ? [od.dir] : []));
  } finally {
    await od?.close();
  }
}
