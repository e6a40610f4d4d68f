import { checkpointRetiring, settleRetiring } from './checkpoint.js';
import { journalFd, otherFile, readDecoded, type FileNo } from './files.js';
import type { Held } from './hold.js';
import { dropKept } from './kept.js';
import type { KeyFate } from './planned.js';
import { HEADER, isMagic, keysOf, newEpoch, nextEpoch } from './record.js';
import { recoverLocked } from './recover.js';
import type { JournalState } from './state.js';

/*
 * Where the next record goes: which of the two journal files, at what offset, under which
 * epoch — read from the journal once per hold of the lock, and switched to the other file
 * when the one commits go to is full (rotate).
 */

/** Where this hold's next record goes (which file, where in it) and its epoch: read from the journal once per hold. */
export async function placeRecord(s: JournalState, h: Held): Promise<{ end: number; epoch: number }> {
  if (h.active === undefined || h.end === undefined || h.epoch === undefined) {
    const seen = s.lastSeen;
    s.lastSeen = undefined;
    if (seen && (await unchangedSince(s, seen))) {
      h.active = seen.active;
      h.end = seen.end;
      h.epoch = seen.epoch;
      h.keys = seen.keys;
    } else {
      // Someone else committed (or the journal is not as we left it): their files may have replaced ours.
      dropKept(s);
      await readPlace(s, h);
    }
    s.keptVerified = true;
  }
  return placeNow(h)!;
}

/** {@link placeRecord} once this hold knows where records go (undefined before: it reads the journal). */
export function placeNow(h: Held): { end: number; epoch: number } | undefined {
  if (h.active === undefined || h.end === undefined || h.epoch === undefined) return undefined;
  // An empty file starts a new epoch: old records behind offset 0 must never read as part of
  // it. Right after a switch the epoch is the one after the retiring file's (set by rotate).
  if (h.end === 0 && !h.retiring) h.epoch = newEpoch();
  return { end: h.end, epoch: h.epoch };
}

/**
 * Reads both journal files to find where commits go: the one with records, else the
 * first. Both with records (a holder that could neither finish its checkpoint nor replay
 * let the lock go), or a failure of ours to apply or checkpoint: nothing is placed, and
 * the next commit replays both files first. Not replayed here: this runs while the
 * group's batches are checked, and a replay closes the directories they use.
 */
async function readPlace(s: JournalState, h: Held): Promise<void> {
  // Our own background checkpoint first: it empties a file.
  await settleRetiring(h);
  const found = s.needRecovery ? undefined : await Promise.all([readDecoded(s, 0), readDecoded(s, 1)]);
  if (!found || (found[0].records.length > 0 && found[1].records.length > 0)) {
    s.needRecovery = true;
    throw Object.assign(new Error('the journal must be replayed before the next commit'), { code: 'EAGAIN', syscall: 'journal' });
  }
  const active: FileNo = found[1].records.length > 0 ? 1 : 0;
  const f = found[active];
  h.active = active;
  h.end = f.end;
  // Records another holder wrote: each key's file is fsynced, whatever its last record did.
  h.keys = new Map([...keysOf(f)].map((key) => [key, 'file']));
  h.epoch = f.epoch ?? newEpoch();
}

/**
 * Whether the journal is as we left it (nobody wrote or emptied it since): the file we
 * wrote still starts with a record of our epoch (or is still empty), no record of that
 * epoch follows where we stopped, and the other file is still empty. Three reads of a
 * header instead of reading the whole journal.
 */
async function unchangedSince(
  s: JournalState,
  seen: { readonly active: FileNo; readonly end: number; readonly epoch: number },
): Promise<boolean> {
  const [jfd, ofd] = await Promise.all([journalFd(s, seen.active), journalFd(s, otherFile(seen.active))]);
  const [head, next, otherHead] = await Promise.all([
    s.io.read(jfd, HEADER, 0),
    s.io.read(jfd, HEADER, seen.end),
    s.io.read(ofd, HEADER, 0),
  ]);
  const recordOf = (b: Uint8Array): number | undefined => {
    if (b.length < HEADER) return undefined;
    const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    return isMagic(buf.readUInt32BE(0)) ? buf.readUInt32BE(8) : undefined;
  };
  if (recordOf(otherHead) !== undefined) return false;
  if (seen.end === 0) return recordOf(head) === undefined;
  return recordOf(head) === seen.epoch && recordOf(next) !== seen.epoch;
}

/**
 * Switches commits to the other journal file and checkpoints the full one in the
 * background: once its groups are applied, the files it names are fsynced and it is
 * emptied, while commits go on in the other file (a checkpoint's fsyncs held every commit
 * up). Commits wait only when the other file's own checkpoint is not over yet. After a
 * failure both files are replayed instead. Under the lock.
 */
export async function rotate(s: JournalState, h: Held): Promise<void> {
  await settleRetiring(h);
  if (s.needRecovery) {
    await recoverLocked(s);
    return;
  }
  const { epoch } = await placeRecord(s, h);
  const file = h.active!;
  const keys: ReadonlyMap<string, KeyFate> = h.keys ?? new Map();
  h.active = otherFile(file);
  h.end = 0;
  h.epoch = nextEpoch(epoch);
  h.keys = new Map();
  h.retiring = { file, keys, done: checkpointRetiring(s, file, keys) };
}
