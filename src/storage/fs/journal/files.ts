import { constants } from 'node:fs';
import { errnoOf } from '../io.js';
import { lstatIfAny } from '../lock.js';
import { INTERNAL_MARK } from '../names.js';
import { decodeJournal, HEADER, nextEpoch, type DecodedJournal } from './record.js';
import type { JournalState } from './state.js';

/*
 * Why a commit costs one fdatasync: the journal file is preallocated with written zeros, and
 * records are written in place (pwrite at the end of the last one), so the commit's
 * fdatasync has no file size or block allocation to make durable — measured on ext4, half
 * the cost of an fsync of an O_APPEND file that grows. A checkpoint empties a journal file
 * by zeroing the first record's header; the next record starts at offset 0 under a new
 * epoch, so the old records behind it can never be read as part of it.
 *
 * Two files, `.sp\journal` and `.sp\journal-2`: when the one commits go to is full, commits
 * switch to the other and the full one is checkpointed in the background — its groups
 * applied, the files it names fsynced, then emptied — so the checkpoint's fsyncs (one per
 * file written: the largest cost of eight concurrent runs) no longer hold commits up. The
 * file switched to gets the epoch after the full one's: when both hold records (a crash
 * before the checkpoint ended), the one whose epoch follows the other's is the newer, and
 * recovery and other instances' reads take both in that order.
 */

const { O_RDWR, O_CREAT, O_NOFOLLOW } = constants;
/**
 * The journal is written with O_DSYNC where the platform has it: a record's write returns
 * once it is durable, as write + fdatasync would, in one trip through the thread pool
 * instead of two. Elsewhere the write is followed by an fdatasync.
 */
export const O_DSYNC: number | undefined = constants.O_DSYNC;
export const JOURNAL_NAME = `${INTERNAL_MARK}journal`;
/**
 * The journal's two files: commits go to one while the other — full — is checkpointed in
 * the background, so a checkpoint's fsyncs no longer hold commits up.
 */
export const JOURNAL_NAMES = [JOURNAL_NAME, `${INTERNAL_MARK}journal-2`] as const;
/** Which of the two journal files. */
export type FileNo = 0 | 1;
// The backslash makes it a name no key's lock can have (keys hold none).
export const JOURNAL_LOCK = `${INTERNAL_MARK}lock-\\journal`;

/**
 * The order to replay the two files in, from their records' epochs (undefined: no record):
 * the file whose epoch follows the other's is the newer one. Only one file with records, or
 * none: that one first. Two unrelated epochs cannot both hold records (a file is emptied
 * before commits switch to it); the first file is taken as the older then.
 */
export function replayOrder(epochs: readonly [number | undefined, number | undefined]): [FileNo, FileNo] {
  const [a, b] = epochs;
  if (a !== undefined && b !== undefined) return nextEpoch(b) === a ? [1, 0] : [0, 1];
  return a === undefined && b !== undefined ? [1, 0] : [0, 1];
}
export const otherFile = (file: FileNo): FileNo => (file === 0 ? 1 : 0);
/** Both files' epochs, undefined for a file without records. */
export const epochsOf = (found: readonly [DecodedJournal, DecodedJournal]): [number | undefined, number | undefined] => [
  found[0].records.length > 0 ? found[0].epoch : undefined,
  found[1].records.length > 0 ? found[1].epoch : undefined,
];

/** A journal file's descriptor, the file preallocated. */
export function journalFd(s: JournalState, file: FileNo = 0): Promise<number> {
  const opening = (s.fds[file] ??= openJournalFile(s, file));
  opening.then(
    (jfd) => {
      if (s.fds[file] === opening) s.opened[file] = jfd;
    },
    () => {
      if (s.fds[file] === opening) s.fds[file] = undefined;
    },
  );
  return opening;
}
async function openJournalFile(s: JournalState, file: FileNo): Promise<number> {
  const { io, root } = s;
  const jfd = await io.open(root.at(JOURNAL_NAMES[file]), O_RDWR | O_CREAT | O_NOFOLLOW | (O_DSYNC ?? 0), s.fileMode);
  try {
    const st = await io.fstat(jfd);
    s.inos[file] = st.ino;
    const size = Number(st.size);
    if (size < s.preallocBytes) {
      // Written zeros, not a hole or fallocate(): blocks that are allocated and written
      // leave a commit's fdatasync nothing but the record's own data to flush.
      await io.writeAt(jfd, new Uint8Array(s.preallocBytes - size), size);
      await io.fsync(jfd);
    }
    // The journal's own directory entry must survive a power loss before any record counts.
    await io.fsync(root.fd);
  } catch (err) {
    await io.close(jfd).catch(() => undefined);
    throw err;
  }
  return jfd;
}

/** Closes a journal file's descriptor and forgets what was read of it (it is opened again by name when next used). */
async function dropFile(s: JournalState, file: FileNo): Promise<void> {
  const opening = s.fds[file];
  s.fds[file] = undefined;
  s.opened[file] = undefined;
  s.inos[file] = undefined;
  s.views[file] = undefined;
  await opening?.then((jfd) => s.io.close(jfd)).catch(() => undefined);
}

/**
 * Whether the journal files open here are still the ones their names hold: a process that
 * broke a lapsed lease replaces them (swapJournalFiles). Descriptors of replaced files are
 * dropped; true when any was.
 */
export async function dropReplacedFiles(s: JournalState): Promise<boolean> {
  const replaced = await Promise.all(
    ([0, 1] as const).map(async (file) => {
      if (s.fds[file] === undefined) return false;
      await s.fds[file]!.catch(() => undefined);
      const ino = s.inos[file];
      const st = await lstatIfAny(s.root.at(JOURNAL_NAMES[file])).catch(() => undefined);
      if (ino !== undefined && st?.ino === ino) return false;
      await dropFile(s, file);
      return true;
    }),
  );
  return replaced.some(Boolean);
}

/**
 * Replaces both (emptied) journal files with new ones, after taking the lock from a holder
 * whose lease ran out while it may still run: a record or void it had begun to write goes
 * to the old file, which nobody reads any more, never over records committed since.
 */
export async function swapJournalFiles(s: JournalState): Promise<void> {
  for (const file of [0, 1] as const) {
    await s.io.unlink(s.root.at(JOURNAL_NAMES[file])).catch((err: unknown) => {
      if (errnoOf(err) !== 'ENOENT') throw err;
    });
    await dropFile(s, file);
  }
  await Promise.all([journalFd(s, 0), journalFd(s, 1)]);
}

/** Reads one whole journal file. */
async function readJournal(s: JournalState, file: FileNo): Promise<Uint8Array> {
  const jfd = await journalFd(s, file);
  const size = Number((await s.io.fstat(jfd)).size);
  return size === 0 ? new Uint8Array(0) : s.io.read(jfd, size);
}
/** One whole journal file, decoded. */
export const readDecoded = async (s: JournalState, file: FileNo): Promise<DecodedJournal> => decodeJournal(await readJournal(s, file));

/** Empties a journal file: its first record's header voided (the next record there starts a new epoch). */
export async function voidFile(s: JournalState, file: FileNo): Promise<void> {
  const jfd = await journalFd(s, file);
  await s.io.writeAt(jfd, new Uint8Array(HEADER), 0);
  await s.io.datasync(jfd);
  s.views[file] = undefined;
}
