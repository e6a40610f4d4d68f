import { systemClock, type Clock } from '../../contract/clock.js';
import { CheckpointError } from '../../contract/errors.js';
import { realIo, type FsIo } from './fd.js';
import { FS_LAYOUTS, type FsLayout } from './layout.js';
import type { LockTiming } from './lock.js';

/** Options of {@link fsStorage}. */
export interface FsStorageOptions {
  /** Root directory of the store. Every key is a file below it; nothing outside it is ever touched. */
  dir: string;
  /**
   * Create `dir` (and its parents) when it does not exist.
   * @default true
   */
  create?: boolean;
  /**
   * On open, remove temp and lock files left by crashed writers (only those whose process
   * is gone or that are older than `staleAfterMs`: another live process may be mid-write).
   * @default true
   */
  cleanupOnOpen?: boolean;
  /**
   * Age after which a lock or temp file is stale even though its process still runs
   * (a hung or suspended writer, or a pid reused by another program). Every process sharing
   * the directory must use the same value: each judges locks, and claims of them, by it.
   * @default 60000
   */
  staleAfterMs?: number;
  /**
   * How long a write waits for a key's lock held by a live process before failing with
   * `checkpoint_atomic_write_failed` (details.reason `lock_timeout`).
   * @default 10000
   */
  lockTimeoutMs?: number;
  /**
   * Permission bits of new files (the process umask still applies).
   * @default 0o666
   */
  fileMode?: number;
  /**
   * Clock for lock ages and lock waits (file timestamps always come from the real clock).
   * @default systemClock
   */
  clock?: Clock;
  /**
   * Write through the store's write-ahead journal: every put, delete and `batch()` is one
   * record written durably (O_DSYNC) to the preallocated `<dir>/.sp\journal` (or, while
   * that one is checkpointed, `<dir>/.sp\journal-2`) and
   * acknowledged then; the files are applied by rename right after, in the background
   * (reads through savepoint see the acknowledged state at once, `flush()` waits for the
   * files); batches of concurrent callers share one record (group commit). Gives
   * `atomicBatch: true`. Without it, each put is the spec's own durable sequence
   * (temp → fsync → rename → fsync dir) and there is no `batch()`. Every process using one
   * directory must use the same setting. See docs/storage.md ("The journal"). `false`: direct
   * mode, each put durable in its own file when answered (14–28× slower for a checkpoint).
   * @default true
   */
  journal?: boolean;
  /**
   * With `journal`: once the journal file commits go to grows past this many bytes,
   * commits switch to the journal's other file and the full one is checkpointed in the
   * background (its applied files fsynced in place, then emptied). Each of the two journal
   * files is preallocated to this size plus 64 KiB (at most 64 MiB).
   * @default 1048576
   */
  journalCheckpointBytes?: number;
  /**
   * The largest file a `get` reads: a larger one is refused from its size, before it is read,
   * with `checkpoint_too_large` naming the key and the limit (a reader's own, smaller
   * `get(key, { maxBytes })` limit applies too). A planted or runaway file of gigabytes then
   * costs one `stat`, not the time and memory of reading it.
   * @default 1073741824 (1 GiB)
   */
  maxReadBytes?: number;
  /**
   * How the directory holds its values. `'files'`: a file per key at the key's path, the files the
   * specs name and other tools read. `'packed'`: values appended to a few segment files
   * (`.sp\packed\…`) and found through an index kept in memory; no file per key, so only for
   * stores no other tool reads (it declares `opaqueValues`: a profile with `sharedFiles` refuses
   * it); a savepoint version without it sees such a directory as empty (and deletes nothing). It takes `dir`, `create` and
   * `maxReadBytes` only (the journal's and the key locks' options are the file layout's). A
   * directory holding one layout opened with the other is refused (`checkpoint_config_invalid`,
   * details.reason `layout_mismatch`).
   *
   * Not given: the layout the directory holds; in a new or empty directory, the one its first
   * consumer asks for (`declareReaders`: `SavepointSaver`, and the writer and resume with a profile
   * no other tool reads, ask for `'packed'`; a spec profile asks for `'files'`), else `'files'` at
   * the first put or batch. Reads of a directory holding no layout yet answer "absent" and fix
   * nothing. Any option of the file layout (`journal`, `journalCheckpointBytes`, `staleAfterMs`,
   * `lockTimeoutMs`, `fileMode`, `clock`) chooses `'files'`; `cleanupOnOpen` applies when the file
   * layout is chosen and is ignored by a packed directory. See docs/storage.md ("Layouts").
   * @default the directory's, else its first consumer's
   */
  layout?: FsLayout;
}

/** Test seams of {@link createFsStorage}; not part of the public API. They are the file layout's: given without a `layout`, they choose it. */
export interface FsInternals {
  /** The file-system calls the journal makes (fault injection). */
  readonly io?: FsIo;
  /** How long the journal lock is kept after a commit (default 20 ms). */
  readonly journalLingerMs?: number;
  /** How long the journal's applies wait for a pause in the commits (default 3 ms), and at most (default 40 ms). */
  readonly journalApplyQuietMs?: number;
  readonly journalApplyLagMs?: number;
}

/** The journal's test seams that were given (an absent one keeps the journal's default). */
export interface JournalTuning {
  readonly lingerMs?: number;
  readonly applyQuietMs?: number;
  readonly applyLagMs?: number;
}

/** A store's options once checked, with every default filled in; fixed for the store's life. */
export interface FsSettings {
  /** The `dir` option as given (resolved against the working directory when the store opens). */
  readonly dir: string;
  /** Create `dir` when missing (`create` is not `false`). */
  readonly create: boolean;
  /** Sweep crashed writers' temp and lock files on open (`cleanupOnOpen` is not `false`). */
  readonly cleanupOnOpen: boolean;
  /** Clock, stale age and lock wait of the key locks (and the journal's). */
  readonly timing: LockTiming;
  /** Permission bits of new files. */
  readonly fileMode: number;
  /** Every write goes through the journal (`journal: true`). */
  readonly useJournal: boolean;
  /** Size past which the journal switches files and checkpoints the full one. */
  readonly checkpointBytes: number;
  /** The file-system calls the journal makes. */
  readonly io: FsIo;
  readonly journalTuning: JournalTuning;
  /** The largest file a `get` reads (`maxReadBytes`). */
  readonly maxReadBytes: number;
  /** How the directory holds its values (`layout`); `auto`: what the directory holds, else what its first consumer asks for. */
  readonly layout: FsLayout | 'auto';
}

/** The default of `maxReadBytes`: 1 GiB. */
export const DEFAULT_MAX_READ_BYTES = 1024 * 1024 * 1024;

export function configInvalid(message: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `fsStorage: ${message}`);
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) throw configInvalid(`\`${name}\` must be a positive number`);
  return value;
}

/** Options of the file layout alone (its journal, its key locks, its files' mode): the packed layout refuses them rather than ignore them. */
const FILES_LAYOUT_ONLY = [
  'journal',
  'journalCheckpointBytes',
  'cleanupOnOpen',
  'staleAfterMs',
  'lockTimeoutMs',
  'fileMode',
  'clock',
] as const;

/**
 * The file layout's options that choose it when `layout` is not given, and that the packed layout
 * refuses. Not `cleanupOnOpen`: a packed directory ignores it (its lock's holder removes its own
 * leftovers), so a caller that opens any directory with it (the CLI) opens either layout.
 */
const IMPLYING_FILES = FILES_LAYOUT_ONLY.filter((name) => name !== 'cleanupOnOpen');

function assertPackedOptions(options: FsStorageOptions): void {
  for (const name of IMPLYING_FILES)
    if (options[name] !== undefined)
      throw configInvalid(
        `\`${name}\` is an option of the file layout; the packed layout takes \`dir\`, \`create\` and \`maxReadBytes\` (and ignores \`cleanupOnOpen\`)`,
      );
}

/** Checks the options (throwing `checkpoint_config_invalid`) and fills in the defaults. */
export function fsSettings(options: FsStorageOptions, internals: FsInternals): FsSettings {
  if (!options || typeof options.dir !== 'string' || options.dir === '') throw configInvalid('`dir` must be a non-empty string');
  const timing: LockTiming = {
    clock: options.clock ?? systemClock,
    staleAfterMs: positive('staleAfterMs', options.staleAfterMs, 60_000),
    lockTimeoutMs: positive('lockTimeoutMs', options.lockTimeoutMs, 10_000),
  };
  const fileMode = options.fileMode ?? 0o666;
  if (!Number.isInteger(fileMode) || fileMode < 0 || fileMode > 0o7777)
    throw configInvalid('`fileMode` must be a permission mode such as 0o600');
  if (options.layout !== undefined && !FS_LAYOUTS.includes(options.layout)) throw configInvalid("`layout` must be 'files' or 'packed'");
  if (options.layout === 'packed') assertPackedOptions(options);
  // The test seams are the file layout's (its journal's calls and timings): given, they choose it too.
  const filesImplied =
    IMPLYING_FILES.some((name) => options[name] !== undefined) || Object.values(internals).some((value) => value !== undefined);
  const layout = options.layout ?? (filesImplied ? 'files' : 'auto');
  const maxReadBytes = options.maxReadBytes ?? DEFAULT_MAX_READ_BYTES;
  if (!Number.isSafeInteger(maxReadBytes) || maxReadBytes <= 0)
    throw configInvalid('`maxReadBytes` must be a positive whole number of bytes');
  return {
    dir: options.dir,
    create: options.create !== false,
    cleanupOnOpen: options.cleanupOnOpen !== false,
    timing,
    fileMode,
    useJournal: options.journal !== false,
    checkpointBytes: positive('journalCheckpointBytes', options.journalCheckpointBytes, 1 << 20),
    io: internals.io ?? realIo,
    maxReadBytes,
    layout,
    journalTuning: {
      ...(internals.journalLingerMs === undefined ? {} : { lingerMs: internals.journalLingerMs }),
      ...(internals.journalApplyQuietMs === undefined ? {} : { applyQuietMs: internals.journalApplyQuietMs }),
      ...(internals.journalApplyLagMs === undefined ? {} : { applyLagMs: internals.journalApplyLagMs }),
    },
  };
}
