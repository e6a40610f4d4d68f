import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import { sortedKeys, type SortedKeys } from '../sorted-keys.js';
import type { PackedIo } from './io.js';
import { untimedLoneWrites, type LoneWriteTimes } from './lone.js';
import { createPackedLock, type PackedLock, type PackedLockOptions } from './lock.js';
import type { Manifest } from './manifest.js';
import type { EncodedRecord } from './record.js';
import { createTails, type Tails } from './tail.js';

/** Options of the packed fs store (internal, not exported). */
export interface PackedFsOptions extends PackedLockOptions {
  /** The directory holding the manifest and segments (made when missing). */
  readonly dir: string;
  /**
   * How a group's write is made durable: the file opened `O_DSYNC` (one call), or `write` then
   * `fdatasync` (two). `none` is not durable: it measures what the durability costs, nothing else.
   */
  readonly sync?: 'dsync' | 'fdatasync' | 'none';
  /**
   * Writes made on the event loop (a group is the calls of one turn), on libuv's pool (a group is
   * the calls made while the previous write ran), or `adaptive` (the default): a group of several
   * calls on the pool (the loop runs on meanwhile); a lone call's (one call in its turn, the group
   * before it one call too, at most 64 KiB) where lone writes returned sooner lately — on a quiet
   * machine the loop (no pool round trip), under CPU contention mostly the pool (see plan.ts).
   */
  readonly writes?: 'sync' | 'async' | 'adaptive';
  /** Reads by `pread` on the event loop, or on libuv's pool. */
  readonly reads?: 'sync' | 'async';
  /** Largest value accepted, in bytes. */
  readonly maxValueBytes?: number;
  /** The size past which the active segment is sealed and a new one started (default 64 MiB). */
  readonly segmentBytes?: number;
  /**
   * Written zeros kept ahead of the active segment's last record, in steps of a quarter of what
   * it holds, from 64 KiB up to this many bytes (default 1 MiB; 0: none). A write over them
   * changes no file size, so its sync flushes data and no file-system metadata.
   */
  readonly preallocBytes?: number;
  /**
   * Compaction runs after a rotation when the sealed segments hold more than `compactMinBytes`
   * (default 4 MiB) of which less than `compactLiveRatio` (default 0.5) is live.
   * `compactMinBytes: Infinity` turns it off (the `compact()` test seam still runs it).
   */
  readonly compactMinBytes?: number;
  readonly compactLiveRatio?: number;
  /** Largest value a read takes, in bytes (a reader's own `maxBytes` may be smaller); none when absent. */
  readonly maxReadBytes?: number;
}

/** Test seams of the packed store; not part of any public API. */
export interface PackedInternals {
  /** The file-system calls the store makes (fault injection, power-loss recording). */
  readonly io?: PackedIo;
  /** The clock lone writes are timed by, in milliseconds (tests make it advance as they choose). */
  readonly now?: () => number;
}

/**
 * One segment file, open. Its descriptor stays open while a read holds it (`pins`), even once
 * compaction removed it from the manifest and unlinked it: POSIX keeps the bytes until the close.
 */
export interface Segment {
  readonly id: number;
  fd: number;
  /** Where its intact records end: the acknowledged end of the active one, the sealed length of a sealed one. */
  end: number;
  /**
   * The file's size as this process last knew it (the active one): past `end` it holds written
   * zeros up to here, which the next groups overwrite. Only the lock's holder writes, so after its
   * tail nothing lies past this but what it writes itself.
   */
  allocated: number;
  /** Writing zeros ahead of `end` failed (disk full…): groups append past the file's end instead, as without preallocation. */
  preallocFailed: boolean;
  sealed: boolean;
  /** The highest sequence its records hold (deletes included; 0: none). */
  maxSequence: number;
  /** Bytes of its records still holding a key's current value (approximate: value and key bytes plus op overhead). */
  live: number;
  /** Reads in flight on `fd`. */
  pins: number;
  /** Removed from the store: `fd` (and `staleFds`) close once `pins` is 0. */
  retired: boolean;
  /** Descriptors replaced by a reopen (after a failed write), closed once `pins` is 0. */
  staleFds: number[];
}

/** Where a key's current value is, and its sequence (its version is the sequence in base 36). */
export interface IndexEntry {
  readonly segment: Segment;
  readonly offset: number;
  readonly length: number;
  readonly sequence: number;
  /** What the entry counts in its segment's `live`. */
  readonly footprint: number;
}

/** One call waiting for the next group: its operations (conditions decided when the group is formed) and its encoded record. */
export interface PendingCall {
  readonly ops: readonly BatchOperation[];
  /** The record of its puts and deletes; undefined for a call of checks only. */
  readonly record: EncodedRecord | undefined;
  readonly done: (outcomes: BatchOutcome[]) => void;
  readonly fail: (err: unknown) => void;
}

/** Counts of what the store did, for the bench and tests. */
export interface PackedStats {
  /** Durable writes (groups). */
  writes: number;
  /** The writes made on the event loop that returned (`writes: 'sync'`, or a lone call's under `adaptive`; a group fenced after its write included). */
  loopWrites: number;
  /** Records written (calls). */
  records: number;
  /** Bytes appended. */
  bytes: number;
  /** Values read. */
  reads: number;
  /** Segments sealed, and compactions run. */
  rotations: number;
  compactions: number;
}

/** The counts of a store that did nothing yet. */
export const NO_STATS: Readonly<PackedStats> = Object.freeze({
  writes: 0,
  loopWrites: 0,
  records: 0,
  bytes: 0,
  reads: 0,
  rotations: 0,
  compactions: 0,
});

export type PackedSettings = Required<Omit<PackedFsOptions, 'maxValueBytes' | 'maxReadBytes' | keyof PackedLockOptions>> &
  Pick<PackedFsOptions, 'maxValueBytes' | 'maxReadBytes' | keyof PackedLockOptions>;

/** Everything one open packed store holds. */
export interface PackedState {
  readonly options: PackedSettings;
  readonly io: PackedIo;
  readonly dir: string;
  /** The manifest's segments, in order: the last is the active one. */
  segments: Segment[];
  generation: number;
  /** The sequence the next placed op takes: one more than the highest ever seen. */
  nextSequence: number;
  /** Every key's durable value: updated only once the write holding it returned. */
  readonly index: Map<string, IndexEntry>;
  readonly order: SortedKeys;
  queue: PendingCall[];
  /** A group (or maintenance: recovery, rotation, compaction) is under way, or a group is scheduled for the next turn. */
  writing: boolean;
  scheduled: boolean;
  /** How many groups in a row held one call each (the last one included): a call alone in its turn after one of them is lone. */
  loneGroups: number;
  /** Where lone groups' writes returned sooner lately (`writes: 'adaptive'` sends the next one there). */
  readonly loneTimes: LoneWriteTimes;
  readonly now: () => number;
  closed: boolean;
  /**
   * A durable write failed: what the active segment holds past its acknowledged end is unknown.
   * Nothing is appended until recovery (reopen, cut back, fsync) succeeded.
   */
  tailUnknown: boolean;
  /**
   * A manifest rewrite (rotation, compaction) that failed part way: the directory may hold the
   * old manifest or this one. Nothing is appended, and no old segment unlinked, until it is written.
   */
  manifestOwed: Manifest | undefined;
  /** Segments replaced by a compaction whose manifest is not yet durable: unlinked once it is. */
  retiring: Segment[];
  /** Called once the queue is empty and no write is in flight (close waits for them). */
  idle: (() => void)[];
  readonly stats: PackedStats;
  /** The lock shared with other processes on the directory, and this process's hold of it (lock.ts, hold.ts). */
  readonly lock: PackedLock;
  /** Tails of what other processes wrote, one at a time (tail.ts). */
  readonly tails: Tails;
  /**
   * The manifest's inode as last read: every rewrite is a rename, so another inode means another
   * manifest. The file read is kept open (`manifestFd`): a file system gives a freed inode's number
   * to a new file (ext4 soon after), so a manifest two rewrites later could otherwise have the
   * number read, and look unchanged; while this one is open, no new file can.
   */
  manifestIno: bigint | undefined;
  manifestFd: number | undefined;
  /** Whether a hold of the lock has removed the leftovers of a crashed rotation or compaction (once a process). */
  leftoversChecked: boolean;
  /**
   * Whether this process, holding the lock, has cut the active segment back to its last intact
   * record once. A power cut may keep a group's later pages and lose its first: zeros at the end,
   * then an intact record that was never acknowledged, which a write of the same length over the
   * zeros would bring back. So each process's first hold removes whatever lies past the end; from
   * then on what follows the end is written zeros or a torn write that begins at it (cut then).
   */
  pastEndChecked: boolean;
}

export function createPackedState(options: PackedSettings, io: PackedIo, now: () => number = () => performance.now()): PackedState {
  return {
    options,
    io,
    dir: options.dir,
    segments: [],
    generation: 0,
    nextSequence: 1,
    index: new Map(),
    order: sortedKeys(),
    queue: [],
    writing: false,
    scheduled: false,
    loneGroups: 0,
    loneTimes: untimedLoneWrites(),
    now,
    closed: false,
    tailUnknown: false,
    manifestOwed: undefined,
    retiring: [],
    idle: [],
    stats: { ...NO_STATS },
    lock: createPackedLock(options.dir, io, options),
    tails: createTails(),
    manifestIno: undefined,
    manifestFd: undefined,
    leftoversChecked: false,
    pastEndChecked: false,
  };
}

/** The active segment (the manifest's last). */
export const activeSegment = (state: PackedState): Segment => state.segments[state.segments.length - 1]!;

/** What an op holding `keyBytes`/`valueBytes` counts in its segment's live bytes. */
export const footprintOf = (key: string, valueBytes: number): number => 13 + key.length + valueBytes;

/** Sets `key`'s entry (or removes it: null), keeping the segments' live counts. */
export function setEntry(state: PackedState, key: string, entry: IndexEntry | null): void {
  const old = state.index.get(key);
  if (old) old.segment.live -= old.footprint;
  if (entry) {
    entry.segment.live += entry.footprint;
    if (!old) state.order.add(key);
    state.index.set(key, entry);
  } else if (old) {
    state.index.delete(key);
    state.order.remove(key);
  }
}

/** Closes a retired segment's descriptors once no read holds them. */
export function releaseSegment(state: PackedState, segment: Segment): void {
  if (!segment.retired || segment.pins > 0) return;
  for (const fd of [segment.fd, ...segment.staleFds.splice(0)]) state.io.close(fd).catch(() => undefined);
  segment.fd = -1;
}
