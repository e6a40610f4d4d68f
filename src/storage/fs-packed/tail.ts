/**
 * Tailing: what other processes wrote since this one last looked, applied to the index. A holder
 * of the lock tails once after taking it (nothing else writes while it holds it) and cuts a torn
 * tail a crashed holder left; a process that does not hold it tails before a read or a listing, up
 * to the first incomplete record (one being written now), and cuts nothing.
 *
 * A manifest with another inode (every rewrite is a rename: a rotation, a compaction or a seal
 * after a broken lock, by another process) is read again, and when its generation moved the index
 * is rebuilt from its segments: segments this process holds open are scanned again through their
 * descriptors, the others opened, those it no longer names retired (their descriptors closed once
 * no read holds them: POSIX keeps an unlinked segment's bytes until then).
 */
import { CheckpointError } from '../../contract/errors.js';
import { readRange } from './io.js';
import { readManifest, type Manifest } from './manifest.js';
import { applyScannedOps, loadSegment, manifestInode } from './open.js';
import { scanSegment } from './record.js';
import { activeSegment, releaseSegment, setEntry, type PackedState } from './state.js';

function shrunk(state: PackedState, size: number, end: number): CheckpointError {
  return new CheckpointError(
    'checkpoint_integrity_mismatch',
    `packed store ${state.dir}: the active segment is ${size} bytes, shorter than the ${end} bytes already read from it`,
    { details: { key: 'packed', reason: 'packed_segment_shrunk' } },
  );
}

/** Reads and applies the active segment's records past its known end; `cut`: bytes past the last intact record are a crashed holder's torn tail. */
async function tailActive(state: PackedState, cut: boolean): Promise<void> {
  const segment = activeSegment(state);
  const size = Number((await state.io.fstat(segment.fd)).size);
  if (size < segment.end) throw shrunk(state, size, segment.end);
  if (size > segment.end) {
    const scanned = scanSegment(await readRange(state.io, segment.fd, segment.end, size - segment.end), segment.end);
    applyScannedOps(state, segment, scanned.ops, scanned.maxSequence);
    segment.end = scanned.end;
    if (scanned.maxSequence > segment.maxSequence) segment.maxSequence = scanned.maxSequence;
  }
  if (cut && segment.end < size) {
    await state.io.ftruncate(segment.fd, segment.end);
    await state.io.fsync(segment.fd);
  }
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
    await loadSegment(state, entry, i === last, old.get(entry.id));
    old.delete(entry.id);
  }
  for (const gone of old.values()) {
    gone.retired = true;
    releaseSegment(state, gone);
  }
}

/** Whether the manifest changed since it was last read: then it is read again (and the index rebuilt if its generation moved). */
async function followManifest(state: PackedState): Promise<void> {
  const ino = await manifestInode(state);
  if (ino === state.manifestIno) return;
  const manifest = await readManifest(state.io, state.dir);
  state.manifestIno = ino;
  if (manifest && manifest.generation !== state.generation) await reload(state, manifest);
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
}

export const createTails = (): Tails => ({ last: Promise.resolve(), waiting: undefined, waitingCut: false });

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
  t.last = next.catch(() => undefined);
  return next;
}
