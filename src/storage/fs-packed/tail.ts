/**
 * Tailing: what other processes wrote since this one last looked, applied to the index. A holder
 * of the lock tails once after taking it (nothing else writes while it holds it) and cuts a torn
 * tail a crashed holder left; a process that does not hold it tails before a read or a listing, up
 * to the first incomplete record (one being written now), and cuts nothing.
 *
 * A manifest with another inode (every rewrite is a rename: a rotation, a compaction or a seal
 * after a broken lock, by another process) is read again, and when it names other segments than
 * this process holds the index is rebuilt from its segments: segments this process holds open are scanned again through their
 * descriptors, the others opened, those it no longer names retired (their descriptors closed once
 * no read holds them: POSIX keeps an unlinked segment's bytes until then).
 */
import { join } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { readRange } from './io.js';
import { MANIFEST_NAME, encodeManifest, segmentName, type Manifest } from './manifest.js';
import { applyScannedOps, keepManifestOpen, loadSegment, manifestInode, manifestOf } from './open.js';
import { HEADER_BYTES, recordBytesAt, scanSegment, zerosAt, type ScannedOp, type ScannedSegment } from './record.js';
import { activeSegment, releaseSegment, setEntry, type PackedState } from './state.js';

function shrunk(state: PackedState, size: number, end: number): CheckpointError {
  return new CheckpointError(
    'checkpoint_integrity_mismatch',
    `packed store ${state.dir}: the active segment is ${size} bytes, shorter than the ${end} bytes already read from it`,
    { details: { key: 'packed', reason: 'packed_segment_shrunk' } },
  );
}

/** What scanning the active segment past its known end found, and whether written zeros (or the file's end) follow its last intact record. */
interface TailScan extends ScannedSegment {
  readonly clean: boolean;
}

/** Bytes of the first read past a header (a group or two); a longer run of records is read in larger steps. */
const TAIL_READ_BYTES = 16 * 1024;

/**
 * Scans the records from `from` to `size`, reading no further than they reach: past the last one
 * lie written zeros (up to a megabyte of them, see maintain.ts), which a header's read shows.
 */
async function scanPast(state: PackedState, fd: number, from: number, size: number): Promise<TailScan> {
  const ops: ScannedOp[] = [];
  let maxSequence = 0;
  let at = from;
  let want = HEADER_BYTES;
  for (;;) {
    const bytes = await readRange(state.io, fd, at, Math.min(want, size - at));
    const scanned = scanSegment(bytes, at);
    for (const op of scanned.ops) ops.push(op);
    if (scanned.maxSequence > maxSequence) maxSequence = scanned.maxSequence;
    const stop = scanned.end - at;
    const next = recordBytesAt(bytes, stop);
    at = scanned.end;
    // Stopped by the read's length, not by the bytes: a record (or a header) runs past what was read.
    const cutShort =
      bytes.length === want && at < size && (next === undefined ? stop + HEADER_BYTES > bytes.length : stop + next > bytes.length);
    if (!cutShort) return { ops, end: at, maxSequence, clean: zerosAt(bytes, stop) };
    want = Math.max(want * 4, TAIL_READ_BYTES, next ?? 0);
  }
}

/**
 * Reads and applies the active segment's records past its known end. `cut` (the lock's holder):
 * what lies past the last intact record is removed when it is not written zeros (a crashed
 * holder's torn write) or when this process has not checked it yet (see `pastEndChecked`).
 */
async function tailActive(state: PackedState, cut: boolean): Promise<void> {
  const segment = activeSegment(state);
  const size = Number((await state.io.fstat(segment.fd)).size);
  if (size < segment.end) throw shrunk(state, size, segment.end);
  let clean = true;
  if (size > segment.end) {
    const scanned = await scanPast(state, segment.fd, segment.end, size);
    applyScannedOps(state, segment, scanned.ops, scanned.maxSequence);
    segment.end = scanned.end;
    if (scanned.maxSequence > segment.maxSequence) segment.maxSequence = scanned.maxSequence;
    clean = scanned.clean;
  }
  segment.allocated = size;
  if (!cut) return;
  if (segment.end < size && !(clean && state.pastEndChecked)) {
    // Truncated rather than zeroed: the extent of a torn or lost write is not known; upkeep writes zeros again.
    await state.io.ftruncate(segment.fd, segment.end);
    await state.io.fsync(segment.fd);
    segment.allocated = segment.end;
  }
  state.pastEndChecked = true;
}

async function sameFile(state: PackedState, fd: number, path: string): Promise<boolean> {
  const [open, named] = await Promise.all([state.io.fstat(fd), state.io.stat(path).catch(() => undefined)]);
  return named !== undefined && open.ino === named.ino && open.dev === named.dev;
}

/** Rebuilds the index from `manifest`'s segments, reusing the descriptors of those still named. */
async function reload(state: PackedState, manifest: Manifest): Promise<void> {
  const old = new Map(state.segments.map((s) => [s.id, s]));
  for (const key of [...state.index.keys()]) setEntry(state, key, null);
  state.segments = [];
  state.generation = manifest.generation;
  const last = manifest.segments.length - 1;
  for (let i = 0; i <= last; i++) {
    const entry = manifest.segments[i]!;
    const had = old.get(entry.id);
    // Reused only if it is still the file of that name: an id can name a new file once its old one was removed as a leftover.
    const same = had && !had.retired && (await sameFile(state, had.fd, join(state.dir, segmentName(entry.id))));
    await loadSegment(state, entry, i === last, same ? had : undefined);
    if (same) old.delete(entry.id);
  }
  for (const gone of old.values()) {
    gone.retired = true;
    releaseSegment(state, gone);
  }
  // What this process meant to write or unlink (a compaction whose manifest it could not write
  // before its lease ran out) gives way to the manifest found: the segments it would have
  // unlinked may be named again, and its own new segment is a leftover for the next holder.
  for (const segment of state.retiring.splice(0)) releaseSegment(state, segment);
  state.manifestOwed = undefined;
  state.leftoversChecked = false;
}

/** Whether the manifest changed since it was last read: then it is read again (and the index rebuilt unless it names what this process holds). */
async function followManifest(state: PackedState): Promise<void> {
  // The manifest last read is held open: the same inode at its name is that file (see PackedState.manifestIno).
  if ((await manifestInode(state)) === state.manifestIno) return;
  const manifest = await keepManifestOpen(state);
  // Not by generation alone: a rewrite of ours that failed (its lease ran out) counted one too.
  if (!manifest || encodeManifest(manifest) === encodeManifest(manifestOf(state))) return;
  try {
    await reload(state, manifest);
  } catch (err) {
    // The index is half rebuilt: the next tail reads this manifest again.
    state.manifestIno = undefined;
    throw err;
  }
}

async function tailNow(state: PackedState, cut: boolean): Promise<void> {
  await followManifest(state);
  await tailActive(state, cut);
}

/** Tails in order, one at a time, so that no two read past the same end. */
export interface Tails {
  /** Settles once the last tail asked for is done. */
  last: Promise<void>;
  /** A tail asked for that has not looked at the files yet: a caller now may share it. */
  waiting: Promise<void> | undefined;
  waitingCut: boolean;
  /** Tails asked for and not settled yet. */
  unsettled: number;
}

export const createTails = (): Tails => ({ last: Promise.resolve(), waiting: undefined, waitingCut: false, unsettled: 0 });

/** A header's worth of bytes, read on the event loop by {@link nothingMoved}. */
const peek = Buffer.alloc(HEADER_BYTES);

/**
 * True when a reader may skip the tail: no tail is under way (a reload rebuilds the index in
 * steps), no intact record header lies at the active segment's end as this process last read it
 * (written zeros, or the file's end) and the manifest is the file it last read. Checked on the
 * event loop: a `pread` of a header and a `stat`, a few microseconds each, where the tail's
 * asynchronous calls cost round trips through libuv's pool on every read. The file's size is no
 * signal: zeros written ahead of the records change it, and records written over them do not.
 * An error leaves the answer to the tail.
 */
export function nothingMoved(state: PackedState): boolean {
  if (state.tails.unsettled > 0) return false;
  try {
    const segment = activeSegment(state);
    const n = state.io.readSync(segment.fd, peek, 0, HEADER_BYTES, segment.end);
    if (n === HEADER_BYTES && recordBytesAt(peek, 0) !== undefined) return false;
    return state.io.inodeSync(join(state.dir, MANIFEST_NAME)) === state.manifestIno;
  } catch {
    return false;
  }
}

/**
 * Brings the index up to date with the files (`cut`: as the lock's holder). A tail asked for
 * while another runs starts after it (that one may have looked before the bytes this caller must
 * see were there); callers meanwhile share it.
 */
export function tail(state: PackedState, cut: boolean): Promise<void> {
  const t = state.tails;
  if (t.waiting && (t.waitingCut || !cut)) return t.waiting;
  const next: Promise<void> = t.last.then(() => {
    if (t.waiting === next) t.waiting = undefined;
    return tailNow(state, cut);
  });
  t.waiting = next;
  t.waitingCut = cut;
  t.unsettled++;
  t.last = next.catch(() => undefined).finally(() => t.unsettled--);
  return next;
}
