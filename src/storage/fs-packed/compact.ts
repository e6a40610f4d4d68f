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

/** The copy records of `entries`, their values read now; each record's header holds `floor`. */
async function copyRecords(
  state: PackedState,
  entries: readonly [string, IndexEntry][],
  floor: number,
): Promise<{ buffers: Buffer[]; ops: { key: string; entry: IndexEntry; at: number }[] }> {
  const buffers: Buffer[] = [];
  const ops: { key: string; entry: IndexEntry; at: number }[] = [];
  let start = 0;
  let bytes = 0;
  let batch: RecordOp[] = [];
  let batchKeys: [string, IndexEntry][] = [];
  const flush = (): void => {
    const record = encodeRecord(batch);
    placeRecord(record, floor);
    batchKeys.forEach(([key, entry], i) => ops.push({ key, entry, at: start + record.valueAt[i]! }));
    buffers.push(record.bytes);
    start += record.bytes.length;
    batch = [];
    batchKeys = [];
    bytes = 0;
  };
  for (const [key, entry] of entries) {
    const value = await readRange(state.io, entry.segment.fd, entry.offset, entry.length);
    if (value.length !== entry.length)
      throw new CheckpointError(
        'checkpoint_integrity_mismatch',
        `packed store ${state.dir}: segment ${entry.segment.id} is shorter than its records`,
      );
    batch.push({ kind: 'copy', key, sequence: entry.sequence, bytes: value });
    batchKeys.push([key, entry]);
    bytes += value.length;
    if (bytes >= COPY_RECORD_BYTES) flush();
  }
  // Always one record at least: its header keeps the floor of sequences even when nothing is live.
  if (batch.length > 0 || buffers.length === 0) flush();
  return { buffers, ops };
}

/** Compacts every sealed segment into one (the test seam and the automatic trigger both call this). */
export async function compactSealed(state: PackedState): Promise<void> {
  const sealed = state.segments.filter((s) => s.sealed);
  if (sealed.length === 0) return;
  const members = new Set(sealed);
  const floor = Math.max(0, ...sealed.map((s) => s.maxSequence));
  const { buffers, ops } = await copyRecords(state, liveEntries(state, members), floor);
  const data = Buffer.concat(buffers);
  const id = nextSegmentId(state, await state.io.readdir(state.dir));
  const fd = await createSegmentFile(state, id);
  try {
    await state.io.writeAt(fd, data, 0);
    await state.io.fsync(fd);
  } catch (err) {
    await state.io.close(fd).catch(() => undefined);
    await state.io.unlink(join(state.dir, segmentName(id))).catch(() => undefined);
    throw err;
  }
  const segment = newSegment(id, fd, data.length, true);
  segment.maxSequence = floor;
  for (const { key, entry, at } of ops)
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
