import type { BatchOperation, BatchOutcome } from '../../contract/storage.js';
import type { CheckpointError } from '../../contract/errors.js';
import { sortedKeys, type SortedKeys } from '../sorted-keys.js';
import type { EncodedRecord } from './record.js';

/** Options of the packed fs store (a prototype: internal, not exported). */
export interface PackedFsOptions {
  /** The directory holding the segment file (made when missing). */
  readonly dir: string;
  /**
   * How a group's write is made durable: the file opened `O_DSYNC` (one call), or `write` then
   * `fdatasync` (two). `none` is not durable: it measures what the durability costs, nothing else.
   */
  readonly sync?: 'dsync' | 'fdatasync' | 'none';
  /**
   * Writes made on the event loop (a group is the calls of one turn), on libuv's pool (a group is
   * the calls made while the previous write ran), or `adaptive`: a group of one call on the loop
   * (no pool hop for a lone thread), a larger one on the pool (the loop runs on meanwhile).
   */
  readonly writes?: 'sync' | 'async' | 'adaptive';
  /** Reads by `pread` on the event loop, or on libuv's pool. */
  readonly reads?: 'sync' | 'async';
  /** Largest value accepted, in bytes. */
  readonly maxValueBytes?: number;
  /** Largest value a read takes, in bytes (a reader's own `maxBytes` may be smaller); none when absent. */
  readonly maxReadBytes?: number;
}

/** Where a key's current value is in the segment, and its version. */
export interface IndexEntry {
  readonly offset: number;
  readonly length: number;
  readonly version: string;
}

/** One call waiting for the next group: its operations (conditions decided when the group is formed) and its encoded record. */
export interface PendingCall {
  readonly ops: readonly BatchOperation[];
  /** The record of its puts and deletes; undefined for a call of checks only. */
  readonly record: EncodedRecord | undefined;
  readonly done: (outcomes: BatchOutcome[]) => void;
  readonly fail: (err: unknown) => void;
}

/** Counts of what the store did, for the bench. */
export interface PackedStats {
  /** Durable writes (groups). */
  writes: number;
  /** Records written (calls). */
  records: number;
  /** Bytes appended. */
  bytes: number;
  /** Values read. */
  reads: number;
}

/** Everything one open packed store holds. */
export interface PackedState {
  readonly options: Required<Omit<PackedFsOptions, 'maxValueBytes' | 'maxReadBytes'>> &
    Pick<PackedFsOptions, 'maxValueBytes' | 'maxReadBytes'>;
  readonly path: string;
  readonly fd: number;
  /** Every key's durable value: updated only once the write holding it returned. */
  readonly index: Map<string, IndexEntry>;
  readonly order: SortedKeys;
  /** Where the next group is written: the end of the last intact record. */
  end: number;
  queue: PendingCall[];
  /** A group's write is in flight (async writes), or a group is scheduled for the next turn. */
  writing: boolean;
  scheduled: boolean;
  closed: boolean;
  /** Set when a failed write could not be undone (the file's tail is unknown): every later write fails. */
  broken: CheckpointError | undefined;
  /** Called once the queue is empty and no write is in flight (close waits for them). */
  idle: (() => void)[];
  readonly stats: PackedStats;
}

export function createPackedState(options: PackedState['options'], path: string, fd: number, end: number): PackedState {
  return {
    options,
    path,
    fd,
    index: new Map(),
    order: sortedKeys(),
    end,
    queue: [],
    writing: false,
    scheduled: false,
    closed: false,
    broken: undefined,
    idle: [],
    stats: { writes: 0, records: 0, bytes: 0, reads: 0 },
  };
}
