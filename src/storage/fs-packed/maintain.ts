/**
 * The store's upkeep, run between groups in the writer's slot: recovery after a failed durable
 * write, a manifest rewrite owed after a failed one, rotation of a full active segment (and then,
 * when the sealed segments are mostly dead, compaction), zeros written ahead of the active
 * segment's records.
 */
import { join } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { compactSealed, shouldCompact } from './compact.js';
import { assertLeaseOf } from './lock.js';
import { writeHint } from './hint.js';
import { segmentName, writeManifest } from './manifest.js';
import { activeFlags, createSegmentFile, manifestOf, newSegment, nextSegmentId } from './open.js';
import { activeSegment, releaseSegment, type PackedState, type Segment } from './state.js';

function upkeepFailed(state: PackedState, what: string, cause: unknown): CheckpointError {
  return new CheckpointError('checkpoint_atomic_write_failed', `packed store ${state.dir}: ${what} failed`, { cause });
}

/**
 * After a failed durable write the active segment's bytes past its acknowledged end are unknown
 * (part of the group, all of it, or garbage), and after a failed fsync so is the descriptor's
 * error state: reopen the segment, cut it back to the acknowledged end, fsync. Until this
 * succeeds nothing is appended.
 */
export async function recoverTail(state: PackedState): Promise<void> {
  const segment = activeSegment(state);
  const fd = await state.io.open(join(state.dir, segmentName(segment.id)), activeFlags(state));
  try {
    await state.io.ftruncate(fd, segment.end);
    await state.io.fsync(fd);
  } catch (err) {
    await state.io.close(fd).catch(() => undefined);
    throw err;
  }
  segment.staleFds.push(segment.fd);
  segment.fd = fd;
  segment.allocated = segment.end;
  // No zeros again in this segment: a reader in another process may have indexed records of the
  // failed group; past the cut it must find the file shorter (`packed_segment_shrunk`), not zeros
  // that later records overwrite. The next segment gets zeros again.
  segment.preallocFailed = true;
  if (segment.pins === 0) for (const stale of segment.staleFds.splice(0)) await state.io.close(stale).catch(() => undefined);
  state.tailUnknown = false;
}

/**
 * Writes the manifest of the segments in memory (a new generation), then unlinks the segments it
 * replaced. While it is owed (a write failed part way), the directory names the old set or the
 * new one: nothing is appended and nothing unlinked until it is written.
 */
export async function commitManifest(state: PackedState, retiring: readonly Segment[]): Promise<void> {
  state.retiring.push(...retiring);
  state.generation++;
  state.manifestOwed = manifestOf(state);
  await writeManifest(state.io, state.dir, state.manifestOwed, () => assertLeaseOf(state.lock, state.dir));
  state.manifestOwed = undefined;
  for (const segment of state.retiring.splice(0)) {
    // A failed unlink leaves a leftover the next open removes: the manifest no longer names it.
    await state.io.unlink(join(state.dir, segmentName(segment.id))).catch(() => undefined);
    releaseSegment(state, segment);
  }
}

/** Seals the active segment at its end and starts a new one: the new file made durable first, then the manifest naming it (the caller writes the hint). */
export async function rotate(state: PackedState): Promise<void> {
  const id = nextSegmentId(state, await state.io.readdir(state.dir));
  const fd = await createSegmentFile(state, id);
  const sealing = activeSegment(state);
  // Its written zeros go: a sealed segment is as long as its records. Not needed for safety (bytes
  // past a sealed length are never read), so a failure leaves them.
  if (sealing.allocated > sealing.end) await state.io.ftruncate(sealing.fd, sealing.end).catch(() => undefined);
  sealing.allocated = sealing.end;
  sealing.sealed = true;
  state.segments.push(newSegment(id, fd, 0, false));
  state.stats.rotations++;
  await commitManifest(state, []);
}

/** The smallest step of zeros (a small store's segment holds a few of them, not a megabyte). */
const MIN_PREALLOC_BYTES = 64 * 1024;

/** How many zeros the next step writes: a quarter of what the segment holds, from 64 KiB up to `preallocBytes` (so disk use stays near the records'). */
function preallocStep(state: PackedState, segment: Segment): number {
  return Math.min(state.options.preallocBytes, Math.max(MIN_PREALLOC_BYTES, segment.end >> 2));
}

/** Where the zeros written ahead of the active segment's records should reach: a step past them, not much past the size that seals it. */
function preallocTarget(state: PackedState, segment: Segment, step: number): number {
  const { segmentBytes } = state.options;
  return Math.min(Math.max(segment.allocated, segment.end) + step, segmentBytes + Math.min(step >> 2, segmentBytes));
}

/** Whether the zeros ahead of the active segment's records run low (less than a quarter step left) and may grow. */
export function owesZeros(state: PackedState): boolean {
  const segment = activeSegment(state);
  const step = preallocStep(state, segment);
  return (
    step > 0 &&
    !segment.preallocFailed &&
    segment.allocated - segment.end < step >> 2 &&
    preallocTarget(state, segment, step) > segment.allocated
  );
}

/**
 * Writes zeros ahead of the active segment's records (written, not a hole from `ftruncate`: a
 * write into a hole allocates blocks, metadata again), durably, so that the groups after it write
 * over allocated bytes of a file whose size does not change. Only the lock's holder calls this,
 * past everything its tail found: nothing but zeros is overwritten. A failure costs only speed:
 * the groups append past the file's end until the next segment.
 */
async function preallocate(state: PackedState): Promise<void> {
  const segment = activeSegment(state);
  const from = Math.max(segment.allocated, segment.end);
  const to = preallocTarget(state, segment, preallocStep(state, segment));
  try {
    await state.io.writeAt(segment.fd, Buffer.alloc(to - from), from);
    if (state.options.sync === 'fdatasync') await state.io.datasync(segment.fd);
    segment.allocated = to;
  } catch {
    segment.preallocFailed = true;
  }
}

/** Does the upkeep owed; returns the typed error the waiting calls fail with when the store may not append yet. */
export async function maintain(state: PackedState): Promise<CheckpointError | undefined> {
  try {
    if (state.tailUnknown) await recoverTail(state);
  } catch (err) {
    return upkeepFailed(state, 'recovering from a failed write', err);
  }
  try {
    if (state.manifestOwed) await commitManifest(state, []);
    if (activeSegment(state).end >= state.options.segmentBytes) {
      await rotate(state);
      if (shouldCompact(state)) await compactSealed(state).catch(() => undefined);
      // One hint for the rotation and the compaction it may have started.
      await writeHint(state);
    }
  } catch (err) {
    return upkeepFailed(state, 'rewriting the manifest', err);
  }
  // A compaction that failed before its manifest changed nothing; one that failed writing it left it owed.
  if (state.manifestOwed) return upkeepFailed(state, 'rewriting the manifest', undefined);
  if (owesZeros(state)) await preallocate(state);
  return undefined;
}
