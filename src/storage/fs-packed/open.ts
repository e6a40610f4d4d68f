/**
 * Opening a packed store: the manifest read (or, under the lock, the first one made), every segment
 * it names opened and scanned, the index built. What only the lock's holder may do — cut the active
 * segment's torn tail, remove leftovers of a crashed rotation or compaction — waits for the first
 * hold (hold.ts): another process may be writing.
 */
import { constants } from 'node:fs';
import { join } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { errnoOf } from '../fs/io.js';
import { readRange, syncDirectory, type PackedIo } from './io.js';
import { assertLeaseOf, letGoLock, takeLock } from './lock.js';
import {
  MANIFEST_NAME,
  isManifestTemp,
  parseManifest,
  segmentIdOf,
  segmentName,
  writeManifest,
  type Manifest,
  type ManifestSegment,
} from './manifest.js';
import { hintCoverage, isHintTemp, readHint, type Hint } from './hint.js';
import { scanSegment, type ScannedOp } from './record.js';
import { createPackedState, footprintOf, setEntry, type PackedSettings, type PackedState, type Segment } from './state.js';

/** Flags of the active segment's descriptor: appended to, durably with each write when `sync` is `dsync`. */
export const activeFlags = (state: PackedState): number =>
  constants.O_RDWR | (state.options.sync === 'dsync' ? (constants.O_DSYNC ?? 0) : 0);

/** The sync a store makes: `dsync` on a platform without `O_DSYNC` is a write then an `fdatasync`, never no sync. */
export const syncOf = (sync: PackedSettings['sync'], hasDsync = constants.O_DSYNC !== undefined): PackedSettings['sync'] =>
  sync === 'dsync' && !hasDsync ? 'fdatasync' : sync;

export function newSegment(id: number, fd: number, end: number, sealed: boolean): Segment {
  return { id, fd, end, allocated: end, preallocFailed: false, sealed, maxSequence: 0, live: 0, pins: 0, retired: false, staleFds: [] };
}

/** Applies scanned ops of `segment` to the index, in order (later sequences win), and raises the next sequence past them. */
export function applyScannedOps(state: PackedState, segment: Segment, ops: readonly ScannedOp[], maxSequence: number): void {
  for (const op of ops) {
    if (op.kind === 'put') {
      setEntry(state, op.key, {
        segment,
        offset: op.offset,
        length: op.length,
        sequence: op.sequence,
        footprint: footprintOf(op.key, op.length),
      });
    } else setEntry(state, op.key, null);
  }
  if (maxSequence >= state.nextSequence) state.nextSequence = maxSequence + 1;
}

function missingSegment(dir: string, id: number): CheckpointError {
  return new CheckpointError('checkpoint_integrity_mismatch', `packed store ${dir}: segment ${id} named by the manifest is missing`, {
    details: { reason: 'packed_segment_missing' },
  });
}

async function openSegmentFile(state: PackedState, id: number, flags: number): Promise<number> {
  try {
    return await state.io.open(join(state.dir, segmentName(id)), flags);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') throw missingSegment(state.dir, id);
    throw err;
  }
}

/**
 * Opens and scans one segment of the manifest (reusing `reuse`, the same segment already open in
 * this process). Nothing is cut here: bytes past the active segment's intact records may be another
 * process's write under way; the lock's next holder cuts a torn tail (tail.ts).
 */
export async function loadSegment(state: PackedState, entry: ManifestSegment, active: boolean, reuse?: Segment): Promise<Segment> {
  const fd = reuse && !reuse.retired ? reuse.fd : await openSegmentFile(state, entry.id, active ? activeFlags(state) : constants.O_RDONLY);
  const segment = reuse && !reuse.retired ? reuse : newSegment(entry.id, fd, 0, !active);
  segment.sealed = !active;
  segment.end = 0;
  segment.maxSequence = 0;
  segment.live = 0;
  state.segments.push(segment);
  const size = Number((await state.io.fstat(fd)).size);
  const limit = entry.length === undefined ? size : Math.min(entry.length, size);
  const scanned = scanSegment(await readRange(state.io, fd, 0, limit));
  segment.end = scanned.end;
  segment.allocated = size;
  segment.maxSequence = scanned.maxSequence;
  applyScannedOps(state, segment, scanned.ops, scanned.maxSequence);
  return segment;
}

/** Opens the first `covered` segments of the manifest without scanning them: the hint holds their index entries. */
async function loadHinted(state: PackedState, segments: readonly ManifestSegment[], hint: Hint, covered: number): Promise<void> {
  for (let i = 0; i < covered; i++) {
    const fd = await openSegmentFile(state, segments[i]!.id, constants.O_RDONLY);
    const segment = newSegment(segments[i]!.id, fd, segments[i]!.length!, true);
    segment.maxSequence = hint.maxSequence;
    state.segments.push(segment);
  }
  for (const e of hint.entries) {
    const segment = state.segments[e.segment]!;
    setEntry(state, e.key, { segment, offset: e.offset, length: e.length, sequence: e.sequence, footprint: footprintOf(e.key, e.length) });
  }
  if (hint.maxSequence >= state.nextSequence) state.nextSequence = hint.maxSequence + 1;
}

/** Opens the manifest's segments: those a fitting hint covers without a scan, the others scanned. */
async function loadSegments(state: PackedState, manifest: Manifest): Promise<void> {
  const segments = manifest.segments;
  // A hint that cannot be read is no worse than none: every segment is scanned.
  const hint = segments.length > 1 ? await readHint(state.io, state.dir).catch(() => undefined) : undefined;
  const covered = hint ? hintCoverage(hint, segments) : 0;
  if (hint && covered > 0) await loadHinted(state, segments, hint, covered);
  for (let i = covered; i < segments.length; i++) await loadSegment(state, segments[i]!, i === segments.length - 1);
}

/** Makes a new empty segment file (durably named) and returns its descriptor, opened as the active one. */
export async function createSegmentFile(state: PackedState, id: number): Promise<number> {
  const fd = await state.io.open(join(state.dir, segmentName(id)), activeFlags(state) | constants.O_CREAT | constants.O_EXCL, 0o644);
  try {
    await state.io.fsync(fd);
    await syncDirectory(state.io, state.dir);
    return fd;
  } catch (err) {
    await state.io.close(fd).catch(() => undefined);
    throw err;
  }
}

/** The first id above every segment the manifest names or the directory holds. */
export function nextSegmentId(state: PackedState, names: readonly string[]): number {
  let max = 0;
  for (const s of state.segments) max = Math.max(max, s.id);
  for (const name of names) max = Math.max(max, segmentIdOf(name) ?? 0);
  return max + 1;
}

/** Removes segment files the manifest does not name and manifest temp files (only a lock holder may: a reader never does). */
export async function removeLeftovers(state: PackedState, names: readonly string[]): Promise<void> {
  const named = new Set(state.segments.map((s) => s.id));
  for (const name of names) {
    const id = segmentIdOf(name);
    if ((id !== undefined && !named.has(id)) || isManifestTemp(name) || isHintTemp(name)) {
      await state.io.unlink(join(state.dir, name)).catch((err: unknown) => {
        if (errnoOf(err) !== 'ENOENT') throw err;
      });
    }
  }
}

/** A new store: the first segment made, then the manifest naming it. */
async function initialize(state: PackedState, names: readonly string[]): Promise<void> {
  const id = nextSegmentId(state, names);
  const fd = await createSegmentFile(state, id);
  state.segments.push(newSegment(id, fd, 0, false));
  state.generation = 1;
  await writeManifest(state.io, state.dir, manifestOf(state), () => assertLeaseOf(state.lock, state.dir));
}

/** The manifest describing `state`'s segments. */
export function manifestOf(state: PackedState): Manifest {
  const segments = state.segments.map((s, i, all): ManifestSegment => (i === all.length - 1 ? { id: s.id } : { id: s.id, length: s.end }));
  return { generation: state.generation, segments };
}

/** Closes every descriptor the state holds (an open that failed, or a close). */
export async function closeSegments(state: PackedState): Promise<void> {
  await letGoManifest(state);
  for (const segment of [...state.segments, ...state.retiring.splice(0)]) {
    for (const fd of [segment.fd, ...segment.staleFds.splice(0)]) await state.io.close(fd).catch(() => undefined);
  }
}

/**
 * Reads the manifest through a descriptor kept open (see `PackedState.manifestIno`): its inode and
 * its text are the same file's, and the one read before is let go. Undefined when there is none.
 */
export async function keepManifestOpen(state: PackedState): Promise<Manifest | undefined> {
  let fd: number | undefined;
  try {
    fd = await state.io.open(join(state.dir, MANIFEST_NAME), constants.O_RDONLY);
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
  }
  try {
    const held = fd === undefined ? undefined : await readHeld(state, fd);
    await letGoManifest(state);
    state.manifestIno = held?.ino;
    // A read under way when the store closed: nothing closes a descriptor kept now (and no later tail trusts the inode).
    if (state.closed && fd !== undefined) {
      await state.io.close(fd).catch(() => undefined);
      state.manifestIno = undefined;
      return held?.manifest;
    }
    state.manifestFd = fd;
    return held?.manifest;
  } catch (err) {
    if (fd !== undefined) await state.io.close(fd).catch(() => undefined);
    throw err;
  }
}

async function readHeld(state: PackedState, fd: number): Promise<{ manifest: Manifest; ino: bigint }> {
  const st = await state.io.fstat(fd);
  const bytes = await readRange(state.io, fd, 0, Number(st.size));
  return { manifest: parseManifest(state.dir, bytes.toString('utf8')), ino: st.ino };
}

/** Closes the manifest descriptor kept (on close, or when another manifest is read). */
export async function letGoManifest(state: PackedState): Promise<void> {
  const fd = state.manifestFd;
  state.manifestFd = undefined;
  if (fd !== undefined) await state.io.close(fd).catch(() => undefined);
}

/** The manifest's inode now, or undefined when there is none. */
export async function manifestInode(state: PackedState): Promise<bigint | undefined> {
  try {
    return (await state.io.stat(join(state.dir, MANIFEST_NAME))).ino;
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** Loads the segments `manifest` names (read by {@link keepManifestOpen}). */
async function loadManifest(state: PackedState, manifest: Manifest): Promise<void> {
  state.generation = manifest.generation;
  await loadSegments(state, manifest);
}

/** A directory without a manifest: under the lock (another process may be making it now), the manifest read again, else the first one made. */
async function openFirst(state: PackedState): Promise<void> {
  await takeLock(state.lock);
  try {
    const manifest = await keepManifestOpen(state);
    if (manifest) return await loadManifest(state, manifest);
    // Without a manifest, any segment file is a leftover of a first open that crashed before naming it.
    const names = await state.io.readdir(state.dir);
    await removeLeftovers(state, names);
    state.leftoversChecked = true;
    await initialize(state, names);
    await keepManifestOpen(state);
  } finally {
    await letGoLock(state.lock);
  }
}

/** The open store of `options.dir`. */
export async function openPackedState(options: PackedSettings, io: PackedIo, now?: () => number): Promise<PackedState> {
  const state = createPackedState(options, io, now);
  try {
    await io.mkdirp(options.dir);
    const manifest = await keepManifestOpen(state);
    if (manifest) await loadManifest(state, manifest);
    else await openFirst(state);
    return state;
  } catch (err) {
    await letGoLock(state.lock).catch(() => undefined);
    await closeSegments(state);
    throw err;
  }
}
