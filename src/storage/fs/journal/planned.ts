import type { BatchOperation, BatchOutcome } from '../../../contract/storage.js';
import type { Dir, OpenedDir } from '../dir.js';
import type { PooledTemp } from '../temp-pool.js';
import type { DirCache } from './dirs.js';

/** What a key holds while a group is prepared: the file on disk, or what an earlier batch of the group will leave. */
export interface KeyState {
  readonly exists: boolean;
  readonly version?: string;
  readonly mtimeNs?: bigint;
}

/** One operation whose condition held: what the key held before it. */
export interface Checked {
  readonly op: BatchOperation;
  readonly od?: OpenedDir;
  readonly before: KeyState;
  /** Its directory was missing: the cache through which its apply opens it (a put's makes it). */
  readonly dirs?: DirCache;
  /** Neither: the open chain of an ancestor of its directory, held by the hold's cache until its apply, which walks from it. */
  readonly near?: readonly Dir[];
}

/**
 * An operation whose condition held, planned under the lock: a put has its (empty) temp
 * file and its mtime chosen, so its version is known before anything is written.
 */
export interface Planned {
  readonly op: BatchOperation;
  /** The key's directory; for a put into one that is missing, opened once its apply made it (makeDir). */
  od?: OpenedDir;
  /** An operation on a key whose directory was missing when planned: the hold's directories through which its apply opens it (a put's makes it). */
  readonly dirs?: DirCache;
  /** Planned past the cache's bound (neither `od` nor `dirs`): where its apply's walk starts (see Checked). */
  readonly near?: readonly Dir[];
  readonly temp?: PooledTemp;
  /** The mtime the put's file gets (seconds, as futimes takes them). */
  readonly mtimeSeconds?: number;
  /** What the key held before this operation (a put that creates is applied first). */
  readonly before: KeyState;
  /** What the key holds after it (puts and deletes); for a put on a file system whose timestamps do not read back exactly, set once applied. */
  after?: KeyState;
  outcome: BatchOutcome;
  /** Whether the planned mtime reads back exactly (else the version is the applied file's own). */
  readonly exact: boolean;
  /** Set once its temp file's descriptor is closing. */
  closed?: boolean;
  /** Set once its temp file was renamed into place or given back (nothing left to remove), or handed to a later put of its key (`taken`). */
  landed?: boolean;
  /** Set when an apply has taken it (its decisions are made): its temp file is no longer free to be handed on. */
  claimed?: boolean;
  /**
   * A put acknowledged and not applied yet whose temp file a later put of the same key took
   * over (see takeOver): never applied itself, the later put's apply replaces it.
   */
  taken?: boolean;
  /** The put whose temp file this one took over (given back to it if this one is not committed). */
  readonly from?: Planned;
  /** A move's put: the key whose file is its temp file (renamed, not written; never the pool's: see move.ts). */
  readonly moves?: string;
  /** A move's delete of its source: the put that renames the source's file away. */
  movedBy?: Planned;
}

/**
 * What the last operation of a journal window on a key left for that window's checkpoint:
 * `file`, a file to make durable (a put or a move's target, or not known); `gone`, no file
 * (a delete), only its directory's fsync for the unlink.
 */
export type KeyFate = 'file' | 'gone';
/** The keys a journal window names, each with its fate, in the order first named. */
export type NamedKeys = Map<string, KeyFate>;

/** An acknowledged key state not yet in its file: the bytes (null: deleted) and version. */
export interface AckedState {
  readonly bytes: Uint8Array | null;
  /** Absent for a put journaled by an older savepoint (no version in its record): read the file. */
  readonly version?: string;
}

/** A batch waiting to be committed, with its caller's promise. */
export interface Pending {
  readonly ops: readonly BatchOperation[];
  resolve(outcomes: BatchOutcome[]): void;
  reject(err: unknown): void;
}

/** A point in the apply queue, reached once every group committed before it is applied (or failed to be). */
export interface ApplyMark {
  readonly reached: () => void;
}
/** What the apply queue holds: a committed group, a directory cache to close, a mark. */
export type ApplyItem = Planned[] | DirCache | ApplyMark;
