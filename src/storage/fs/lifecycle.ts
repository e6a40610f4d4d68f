import fsp from 'node:fs/promises';
import { resolve } from 'node:path';
import { CheckpointError } from '../../contract/errors.js';
import { openRoot, type Containment, type RootDir } from './dir.js';
import { fdClose } from './fd.js';
import { errnoOf } from './io.js';
import { createJournal, JOURNAL_NAME, type RecoveryReport } from './journal/index.js';
import { openReadOnly } from './journal/read-only.js';
import { layoutMismatch, PACKED_MANIFEST_NAME, type FsLayout } from './layout.js';
import { lstatIfAny } from './lock.js';
import { closeRoot, fsClosed, type FsStoreState } from './store-state.js';
import { sweepInternalFiles } from './sweep.js';

/** What opening the store found. */
export interface FsOpenReport {
  /** The store root, with symlinks resolved. */
  readonly root: string;
  /**
   * How files below the root are named: `'dir-fd'` (Linux: relative to directory descriptors
   * opened without following links, race-free against swapped directories) or `'path'`
   * (elsewhere: every component is checked, but a swap between check and use is not
   * excluded). See docs/storage.md.
   */
  readonly containment: Containment;
  /** Temp files of crashed writers removed on open. */
  readonly removedTempFiles: number;
  /** Stale lock files removed on open. */
  readonly removedLocks: number;
  /** What replaying the journal on open found (present when the store has a journal). */
  readonly journal?: RecoveryReport;
  /** How the directory holds its values (the `layout` option, or the one it was found or fixed with); absent while it holds none yet. */
  readonly layout?: FsLayout;
}

/** Refuses the file layout in a directory holding a packed manifest (`layout_mismatch`, with `evidence`). */
async function refusePacked(opened: RootDir, dirOption: string, evidence: string): Promise<void> {
  if ((await lstatIfAny(opened.at(PACKED_MANIFEST_NAME)))?.isFile()) throw layoutMismatch(dirOption, 'packed', 'files', evidence);
}

/** Creates and resolves the root, sweeps stale files and replays a journal left there. */
async function openStore(state: FsStoreState): Promise<FsOpenReport> {
  if (process.platform === 'win32') {
    throw new CheckpointError(
      'checkpoint_unsupported',
      'fsStorage needs POSIX rename and directory fsync semantics; Windows is not supported',
    );
  }
  const settings = state.settings;
  const abs = resolve(settings.dir);
  let opened: RootDir | undefined;
  try {
    if (settings.create) await fsp.mkdir(abs, { recursive: true });
    // The root itself may be reached through links (the user chose it); everything below it is not.
    const real = await fsp.realpath(abs);
    opened = await openRoot(real);
    // A packed directory opened with the file layout would look empty, and its keys would be written beside it.
    await refusePacked(opened, settings.dir, 'segment files named by a manifest');
    const swept = settings.cleanupOnOpen ? await sweepInternalFiles(opened, settings.timing) : { removedTempFiles: 0, removedLocks: 0 };
    // A journal left by a journaled process is replayed even when this instance writes directly.
    const hasJournal = settings.useJournal || ((await lstatIfAny(opened.at(JOURNAL_NAME)))?.size ?? 0n) > 0n;
    let recovered: RecoveryReport | undefined;
    if (hasJournal) {
      const j = createJournal({
        root: opened,
        timing: settings.timing,
        fileMode: settings.fileMode,
        io: settings.io,
        checkpointBytes: settings.checkpointBytes,
        ...settings.journalTuning,
      });
      // A read-only file system with an empty journal opens for reads (see read-only.ts).
      recovered = await j.recover().catch(async (err: unknown) => {
        try {
          await openReadOnly(opened!, err);
        } catch (refused) {
          // The journal's own files (its lock's token, pooled temp files) are released with the failed open.
          await j.close().catch(() => undefined);
          throw refused;
        }
        return undefined;
      });
      if (settings.useJournal) state.journal = j;
      else await j.close();
      // Made now if the directory was new: a packed store made there since the look above would not see our keys (layout.ts, assertNoFilesLayoutBeside).
      await refusePacked(opened, settings.dir, 'a manifest made at the same moment').catch(async (err: unknown) => {
        state.journal = undefined;
        await j.close().catch(() => undefined);
        throw err;
      });
    }
    state.root = opened;
    return { root: real, containment: opened.containment, layout: 'files', ...swept, ...(recovered ? { journal: recovered } : {}) };
  } catch (err) {
    if (opened) await fdClose(opened.fd).catch(() => undefined);
    if (err instanceof CheckpointError) throw err;
    throw new CheckpointError('checkpoint_storage_unavailable', `cannot open fsStorage directory: ${errnoOf(err) ?? 'error'}`, {
      cause: scrubbedOpen(err, abs),
      details: { code: errnoOf(err) ?? 'UNKNOWN' },
    });
  }
}

/** Opens the store if no call did yet; resolves what opening found. */
export function ready(state: FsStoreState): Promise<FsOpenReport> {
  return (state.opening ??= openStore(state));
}

/** The open root (opening the store first if needed); `checkpoint_closed` once the store is closed. */
export async function rootDir(state: FsStoreState): Promise<RootDir> {
  if (!state.root) await ready(state);
  if (!state.root) throw fsClosed();
  return state.root;
}

/** Refuses new calls, lets those in flight finish, checkpoints the journal and closes the root. */
export async function closeStore(state: FsStoreState): Promise<void> {
  state.closed = true;
  // Operations in flight finish (or fail) first; their housekeeping releases their locks.
  while (state.inflight.size > 0) await Promise.allSettled([...state.inflight]);
  const j = state.journal;
  state.journal = undefined;
  // Checkpoints on the way out: a cleanly closed store leaves an empty journal.
  if (j) await j.close().catch(() => undefined);
  await closeRoot(state);
}

/** The cause of a failed open, without the absolute directory path. */
function scrubbedOpen(err: unknown, abs: string): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as NodeJS.ErrnoException;
  const copy = Object.assign(new Error(e.message.split(abs).join('<dir>')), { code: e.code, errno: e.errno, syscall: e.syscall });
  return copy;
}
