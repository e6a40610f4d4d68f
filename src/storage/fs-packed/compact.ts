/**
 * Compaction: the live values of the sealed segments copied, oldest first, into one new sealed
 * segment of copy records (each keeping its sequence, so versions survive), made durable; then a
 * manifest naming it in their place; then the old segments unlinked. A crash at any step leaves
 * the manifest naming the old set (the new file a leftover) or the new one (the old files
 * leftovers). The sealed segments are a prefix of the manifest's order and sequences grow with
 * position, so the copies still lose to anything later, and deletes in them can be dropped: no
 * older value is left for them to hide.
 */
import { CheckpointError } from '../../contract/errors.js';
import { join } from 'node:path';
import { readRange } from './io.js';
import { segmentName } from './manifest.js';
import { commitManifest } from './maintain.js';
import { createSegmentFile, newSegment, nextSegmentId } from './open.js';
import { encodeRecord, placeRecord, type RecordOp } from './record.js';
import { footprintOf, setEntry, type IndexEntry, type PackedState, type Segment } from './state.js';

/** Values copied into one record, at most (a record is one buffer). */
const COPY_RECORD_BYTES = 1024 * 1024;

/** Whether the sealed segments hold mostly dead bytes, and enough of them to be worth a copy. */
export function shouldCompact(state: PackedState): boolean {
  const sealed = state.segments.filter((s) => s.sealed);
  if (sealed.length === 0) return false;
  const total = sealed.reduce((n, s) => n + s.end, 0);
  const live = sealed.reduce((n, s) => n + s.live, 0);
  return total > state.options.compactMinBytes && live < state.options.compactLiveRatio * total;
}

/** The live entries of `segments`, in sequence order (the order they were written). */
function liveEntries(state: PackedState, segments: ReadonlySet<Segment>): [string, IndexEntry][] {
  const found: [string, IndexEntry][] = [];
  for (const [key, entry] of state.index) if (segments.has(entry.segment)) found.push([key, entry]);
  return found.sort((a, b) => a[1].sequence - b[1].sequence);
}

/** A compaction's copy under way: the new segment's file, what is written to it, and the record being filled. */
interface Copy {
  readonly fd: number;
  /** The highest sequence of the segments replaced: every copy record's header holds it. */
  readonly floor: number;
  written: number;
  pending: RecordOp[];
  pendingKeys: [string, IndexEntry][];
  pendingBytes: number;
  /** Where each copied value landed in the new segment. */
  readonly placed: { readonly key: string; readonly entry: IndexEntry; readonly at: number }[];
}

/** Writes the record being filled at the copy's end (values are not all held in memory at once). */
async function flushCopy(state: PackedState, copy: Copy): Promise<void> {
  const record = encodeRecord(copy.pending);
  placeRecord(record, copy.floor);
  await state.io.writeAt(copy.fd, record.bytes, copy.written);
  copy.pendingKeys.forEach(([key, entry], i) => copy.placed.push({ key, entry, at: copy.written + record.valueAt[i]! }));
  copy.written += record.bytes.length;
  copy.pending = [];
  copy.pendingKeys = [];
  copy.pendingBytes = 0;
}

/** Copies `entries`' values, read one at a time, into copy records in the new segment. */
async function copyValues(state: PackedState, copy: Copy, entries: readonly [string, IndexEntry][]): Promise<void> {
  for (const [key, entry] of entries) {
    const value = await readRange(state.io, entry.segment.fd, entry.offset, entry.length);
    if (value.length !== entry.length)
      throw new CheckpointError(
        'checkpoint_integrity_mismatch',
        `packed store ${state.dir}: segment ${entry.segment.id} is shorter than its records`,
      );
    copy.pending.push({ kind: 'copy', key, sequence: entry.sequence, bytes: value });
    copy.pendingKeys.push([key, entry]);
    copy.pendingBytes += value.length;
    if (copy.pendingBytes >= COPY_RECORD_BYTES) await flushCopy(state, copy);
  }
  // Always one record at least: its header keeps the floor of sequences even when nothing is live.
  if (copy.pending.length > 0 || copy.written === 0) await flushCopy(state, copy);
  await state.io.fsync(copy.fd);
}

/** Compacts every sealed segment into one (the test seam and the automatic trigger both call this, and write the hint after it). */
export async function compactSealed(state: PackedState): Promise<void> {
  const sealed = state.segments.filter((s) => s.sealed);
  if (sealed.length === 0) return;
  const members = new Set(sealed);
  const floor = Math.max(0, ...sealed.map((s) => s.maxSequence));
  const id = nextSegmentId(state, await state.io.readdir(state.dir));
  const fd = await createSegmentFile(state, id);
  const copy: Copy = { fd, floor, written: 0, pending: [], pendingKeys: [], pendingBytes: 0, placed: [] };
  try {
    await copyValues(state, copy, liveEntries(state, members));
  } catch (err) {
    // Never named by a manifest: removed now, or by the next open as a leftover.
    await state.io.close(fd).catch(() => undefined);
    await state.io.unlink(join(state.dir, segmentName(id))).catch(() => undefined);
    throw err;
  }
  const segment = newSegment(id, fd, copy.written, true);
  segment.maxSequence = floor;
  for (const { key, entry, at } of copy.placed)
    setEntry(state, key, {
      segment,
      offset: at,
      length: entry.length,
      sequence: entry.sequence,
      footprint: footprintOf(key, entry.length),
    });
  for (const old of sealed) old.retired = true;
  state.segments = [segment, ...state.segments.filter((s) => !members.has(s))];
  state.stats.compactions++;
  await commitManifest(state, sealed);
}
