import type {
  BatchOperation,
  BatchOutcome,
  DeleteOptions,
  GetOptions,
  PutOptions,
  PutResult,
  StorageCapabilities,
  StorageEntry,
  StoredObject,
} from '../../contract/storage.js';
import type { LinkedRead, LinkedValues, ReadLinks } from '../../contract/linked-read.js';
import { assertGetOptions } from '../../contract/read-limit.js';
import { ownedCopy } from '../handed-over.js';
import { assertKey } from '../keys.js';
import { directDelete } from './direct-delete.js';
import { directPut } from './direct-write.js';
import { flushJournal, journaledBatch, journaledDelete, journaledMove, journaledMoves, journaledPut } from './journaled.js';
import { assertMoveArguments, assertMoveManyArguments, type MovableStorage } from '../../contract/move.js';
import { closeStore, ready, type FsOpenReport } from './lifecycle.js';
import { getLinkedObjects } from './linked-read.js';
import { listEntries, listKeyNames } from './list.js';
import { INTERNAL_MARK } from './names.js';
import { adoptMembers, autoLayoutFsStorage } from './auto-layout.js';
import { fsSettings, type FsInternals, type FsSettings, type FsStorageOptions } from './options.js';
import { packedFsStorage } from './packed-layout.js';
import { readStored } from './read.js';
import { assertOpen, assertValueBytes, newStoreState, track } from './store-state.js';

// The store is split by concept: options.ts (checking the options), store-state.ts (what one
// instance keeps between calls), lifecycle.ts (open, ready, close), read.ts, list.ts,
// direct-write.ts and direct-delete.ts (writes without the journal), journaled.ts (writes
// through the journal, journal.ts). This file only assembles them.

export type { FsInternals, FsStorageOptions } from './options.js';
export type { FsOpenReport } from './lifecycle.js';
export type { FsLayout } from './layout.js';

/** The file-system adapter: a {@link StorageAdapter} plus its directory and open report. */
export interface FsStorage extends LinkedRead {
  /** The `dir` option as given. */
  readonly dir: string;
  /**
   * Opens the store (creates and resolves the root, sweeps stale files) if no operation
   * did yet, and resolves what opening found. Operations open the store themselves;
   * call this to surface a bad directory early. In a directory holding no layout yet (and none
   * declared), it makes the directory and fixes nothing (the report has no `layout`).
   */
  ready(): Promise<FsOpenReport>;
  /** With the journal: waits until every acknowledged write is in the spec's files (the `flush` of `BufferedStorage`). */
  flush?(): Promise<void>;
  /** With the journal: the same wait as `flush` (`BufferedStorage.applied`: the files are in place when it resolves). */
  applied?(): Promise<void>;
}

const DIRECT: StorageCapabilities = Object.freeze({
  // Several renames cannot be made one atomic step on a POSIX file system: without the journal there is no batch().
  atomicBatch: false,
  crossProcessConditional: true,
  keysAreFiles: true,
  linkedRead: true,
  versionsPerWrite: true,
});
const JOURNALED: StorageCapabilities = Object.freeze({
  atomicBatch: true,
  crossProcessConditional: true,
  move: true,
  keysAreFiles: true,
  linkedRead: true,
  versionsPerWrite: true,
});

/**
 * A durable store in a local directory: each key is a file at `dir/<key>`, so the files
 * are exactly the paths the profiles' specs name (`checkpoints/<run_id>/latest.json`).
 *
 * - **Crash-safe replace**: temp file in the key's directory → write all bytes → fsync →
 *   rename over the key → fsync the directory. A failed fsync aborts the write (the
 *   temp file is removed, nothing is renamed). A reader sees the old bytes or the new
 *   ones, never a torn file.
 * - **Create-only** (`ifAbsent`) is `link(2)` of the fully written and fsynced temp file:
 *   the kernel refuses it if the key exists, in this process or any other.
 * - **Conditional replace and delete** (`ifVersion`) hold between processes: the check
 *   and the rename (or unlink) of every replace and delete run under the key's lock
 *   file, a hard link of the writer's temp file in the key's directory; a lock whose
 *   process is gone, whose temp file is gone, or older than `staleAfterMs`, is broken.
 * - **Versions** are `<mtime ns>.<inode>.<size>` from `stat`, comparable across
 *   processes; each write moves the file's mtime past the previous version's (setting it
 *   explicitly when the file system's clock is too coarse), so a key's version never
 *   repeats even though inode numbers are reused.
 * - **Containment**: keys pass `assertKey`; every name below `dir` is used relative to a
 *   directory descriptor opened without following links (on Linux through
 *   `/proc/<pid>/fd/<fd>/<name>`), so a directory swapped for a symlink between check and
 *   use cannot redirect a write; a key whose path goes through a symbolic link is refused
 *   with `checkpoint_key_invalid`. Writes make no synchronous file-system call; a read
 *   answered in one pass (a kept file's `lstat`, the linked read) makes its few calls
 *   synchronously.
 * - **Journal** (the default; `journal: false` for direct mode): every write is one record of a write-ahead journal,
 *   acknowledged once durable and applied to the files by rename in the background (reads
 *   through savepoint, in this process or another, see it at once; `flush()` waits for the
 *   files); `batch()` is atomic (`atomicBatch: true`), concurrent batches share one
 *   durable record write, and opening the store replays the journal.
 * - Temp and lock files (names starting `.sp\`) are never listed; the ones crashed
 *   writers left are removed on open.
 *
 * - **Packed layout** (`layout: 'packed'`): no file per key; values are appended to segment
 *   files under internal names and found through an index in memory. For stores no other tool
 *   reads (`SavepointSaver`, `defaultProfile`, `jsonProfile`): it declares `opaqueValues`, so a
 *   profile whose files other tools read refuses it. It opens at once, in this call. See
 *   docs/storage.md ("The packed layout").
 * - **Without a `layout`**, the layout the directory holds; a new or empty directory takes the one
 *   its first consumer declares (`declareReaders`: savepoint alone → packed, other tools → files),
 *   else the file layout at the first put or batch. The object returned is the store either way:
 *   once the layout is fixed, its members are that layout's own. See docs/storage.md ("Layouts").
 *
 * Node-only, POSIX (Linux, macOS); on Windows the store refuses to open
 * (`checkpoint_unsupported`). Local file systems only: network file systems do not keep
 * rename and fsync promises. Without the journal, `atomicBatch` is false: several files
 * cannot be replaced in one atomic step, so there is no `batch()`.
 *
 * @example
 * ```ts
 * import { fsStorage } from 'savepoint/fs';
 * const storage = fsStorage({ dir: '.checkpoints' });
 * const { version } = await storage.put('checkpoints/run-1/latest.json', bytes);
 * await storage.put('checkpoints/run-1/latest.json', next, { ifVersion: version });
 *
 * // The journal (the default): one durable write per commit, atomic batches, group commit across runs:
 * await storage.batch!([
 *   { type: 'put', key: 'checkpoints/run-1/history/cp_2.json', bytes, ifAbsent: true },
 *   { type: 'put', key: 'checkpoints/run-1/latest.json', bytes },
 * ]);
 * ```
 */
export function fsStorage(options: FsStorageOptions): FsStorage {
  return createFsStorage(options);
}

/** {@link fsStorage} with test seams (fault injection into the journal's calls). */
export function createFsStorage(options: FsStorageOptions, internals: FsInternals = {}): FsStorage {
  const settings = fsSettings(options, internals);
  if (settings.layout === 'packed') return packedFsStorage(settings);
  if (settings.layout === 'auto') return autoLayoutFsStorage(settings, { files: filesFsStorage, packed: packedFsStorage });
  return filesFsStorage(settings);
}

/**
 * The file layout in `settings.dir`; its members are set on `into` when given (the object the user
 * holds, when the layout was chosen after it was made).
 */
function filesFsStorage(settings: FsSettings, into?: Partial<FsStorage>): FsStorage {
  const state = newStoreState(settings);
  const useJournal = state.settings.useJournal;
  const storage: FsStorage = {
    name: 'fs',
    capabilities: useJournal ? JOURNALED : DIRECT,
    dir: settings.dir,
    ready: () => ready(state),

    async get(key: string, opts?: GetOptions): Promise<StoredObject | undefined> {
      assertOpen(state);
      assertKey(key);
      assertGetOptions(opts, 'fsStorage.get');
      // `return await`: an async function returning a promise takes two more microtask turns to settle.
      return await track(state, readStored(state, key, opts));
    },

    getLinked: (key: string, links: ReadLinks): Promise<LinkedValues | undefined> => getLinkedObjects(state, key, links),

    async put(key: string, bytes: Uint8Array, opts: PutOptions = {}): Promise<PutResult> {
      assertOpen(state);
      assertKey(key);
      assertValueBytes(key, bytes);
      // Copy before the first await: the caller may reuse its buffer as soon as put() returns (unless the writer handed it over: a large part it never touches again).
      const owned = ownedCopy(bytes);
      return await track(state, useJournal ? journaledPut(state, key, owned, opts) : directPut(state, key, owned, opts));
    },

    async delete(key: string, opts: DeleteOptions = {}): Promise<boolean> {
      assertOpen(state);
      assertKey(key);
      return await track(state, useJournal ? journaledDelete(state, key, opts) : directDelete(state, key, opts));
    },

    ...(useJournal
      ? {
          /** Waits until every acknowledged write is in the spec's files (they are applied in the background). */
          flush: (): Promise<void> => flushJournal(state),
          /** The same wait as flush: the journal's only buffer is its files still to apply. */
          applied: (): Promise<void> => flushJournal(state),
          batch: (operations: readonly BatchOperation[]): Promise<BatchOutcome[]> => journaledBatch(state, operations),
        }
      : {}),

    list: (prefix: string): AsyncIterable<StorageEntry> => listEntries(state, prefix),
    close: (): Promise<void> => closeStore(state),
  };
  if (useJournal) {
    // Not enumerable, as memoryStorage's: a wrapper made by spreading the store (`{ ...storage, put }`) must not carry a move that bypasses its own writes.
    const move: MovableStorage['move'] = async (from, to) => {
      assertOpen(state);
      assertMoveArguments(from, to, 'fsStorage.move');
      assertKey(from);
      assertKey(to);
      return await track(
        state,
        journaledMove(state, (key) => readStored(state, key), from, to),
      );
    };
    const moveMany: NonNullable<MovableStorage['moveMany']> = async (moves) => {
      assertOpen(state);
      assertMoveManyArguments(moves, 'fsStorage.moveMany');
      for (const m of moves) {
        assertKey(m.from);
        assertKey(m.to);
      }
      return await track(
        state,
        journaledMoves(state, (key) => readStored(state, key), moves),
      );
    };
    Object.defineProperty(storage, 'move', { value: move });
    Object.defineProperty(storage, 'moveMany', { value: moveMany });
  }
  // Not enumerable, as move: a wrapper made by spreading the store (`{ ...storage, list }`) must not carry a listing that bypasses its own.
  Object.defineProperty(storage, 'listKeys', { value: (prefix: string): AsyncIterable<string> => listKeyNames(state, prefix) });
  return into ? adoptMembers(into, storage) : storage;
}

/** Prefix of the names of fsStorage's own temp and lock files (never keys, never listed). */
export const FS_INTERNAL_PREFIX = INTERNAL_MARK;
