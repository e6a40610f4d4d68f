import type { CheckpointError } from '../../../contract/errors.js';
import { MAX_CACHED_DIRS } from '../descriptor-budget.js';
import { openDir, type Dir, type OpenedDir, type WalkMode } from '../dir.js';
import type { FsIo } from '../fd.js';
import { errnoOf } from '../io.js';
import { keyRefused } from '../paths.js';
import { learned, namesIn } from './key-state.js';
import type { JournalState } from './state.js';

/** The directories a group opened, shared by its operations (a checkpoint's keys share their run's directory). */
export interface DirCache {
  readonly byKey: Map<string, Promise<OpenedDir | undefined>>;
  /** Every walk made, to close at the end of the group. */
  readonly all: Promise<OpenedDir | undefined>[];
  /**
   * Names in each directory, listed once under the hold (absent: not used). A key not
   * known in `states` and not listed has no file: a new history file's `ifAbsent` costs no
   * stat. Files written since are all in `states` (or `pending`), which are asked first.
   */
  readonly names?: Map<string, Promise<Set<string>>>;
  /** The walks that found their directory, by directory key: what a batch planned at once uses (see planNow). */
  readonly ready: Map<string, OpenedDir>;
  /** The listings that completed, by directory (see `names`). */
  readonly listed: Map<string, Set<string>>;
  /**
   * Directories found missing under this hold (a walk, or a parent missing or made by
   * this hold): a put into one is planned without making it (no mkdir on the commit path);
   * its apply makes it (makeDir). Nobody else makes them meanwhile.
   */
  readonly missing: Set<string>;
  /** Directories a planned put's apply will make: a put of a file at such a path is refused now, as it would be once made. */
  readonly toMake: Set<string>;
  /** Directories this hold's applies made (a mkdir that succeeded): every entry in them is this hold's, so a subdirectory not walked yet is missing. */
  readonly made: Set<string>;
}

export const newDirCache = (listed: boolean): DirCache => ({
  byKey: new Map(),
  all: [],
  ready: new Map(),
  listed: new Map(),
  missing: new Set(),
  toMake: new Set(),
  made: new Set(),
  ...(listed ? { names: new Map() } : {}),
});
/** Whether the cache may open one more directory (else an operation's directory is walked for each use and closed: descriptor-budget.ts). */
export const hasRoom = (cache: DirCache): boolean => cache.all.length < MAX_CACHED_DIRS;
export const parentOf = (dirKey: string): string | undefined => {
  const cut = dirKey.lastIndexOf('/');
  return cut > 0 ? dirKey.slice(0, cut) : undefined;
};
/**
 * The chain (root first) of the nearest ancestor of `dirKey` that the cache holds open, for
 * a walk past the cache's bound to start from (one open a component below it, not a walk
 * from the root): `chunks/` for each chunk directory, a thread's `parts/` for each superstep's.
 */
export function nearestOpen(cache: DirCache, dirKey: string): readonly Dir[] | undefined {
  for (let d = parentOf(dirKey); d !== undefined; d = parentOf(d)) {
    const od = cache.ready.get(d);
    if (od) return od.chain;
  }
  return undefined;
}
/** Whether this hold wrote (or acknowledged) a file at `path`. */
const fileAt = (s: JournalState, path: string): boolean => learned(s, s.held?.states, path)?.exists === true;
const parentIsFile = (key: string): CheckpointError => keyRefused(key, 'a parent path is a file (another key)', 'path_occupied');
/**
 * Whether directory `dirKey` is known to be absent without a call — found missing under
 * this hold, or its parent is (or was made by this hold, and it was never walked) — and
 * remembered as missing unless a file this hold wrote is there: a put planned into it
 * (`'probe'`) is refused then, as a walk that made it would be.
 */
export function knownMissing(s: JournalState, cache: DirCache, dirKey: string, key: string, mode: WalkMode): boolean {
  const parent = parentOf(dirKey);
  const missing =
    cache.missing.has(dirKey) ||
    (parent !== undefined &&
      (cache.missing.has(parent) || (cache.made.has(parent) && !cache.byKey.has(dirKey)) || listedAbsent(cache, parent, dirKey)));
  if (!missing) return false;
  if (fileAt(s, dirKey)) {
    if (mode === 'probe') throw parentIsFile(key);
    return true;
  }
  cache.missing.add(dirKey);
  return true;
}
/**
 * Whether `dirKey` was absent from its parent's listing made under this hold and has not
 * been walked since (a LangGraph thread's next `parts/<sequence>/`): missing then, or made
 * since by an apply of this hold past the cache's bound, every entry of which this hold
 * wrote (and knows in `states`), as in a directory the hold made.
 */
function listedAbsent(cache: DirCache, parent: string, dirKey: string): boolean {
  const names = cache.listed.get(parent);
  return names !== undefined && !cache.byKey.has(dirKey) && !names.has(dirKey.slice(parent.length + 1));
}
/**
 * Starts listing the parent of `dirKey` (open in the cache, not listed yet) in the background,
 * when `dirKey` is neither open nor known missing: the next new directories beside it are
 * then known missing from the listing (listedAbsent), without a walk on their commit's path.
 */
export function listParentSoon(cache: DirCache, dirKey: string): void {
  const parent = parentOf(dirKey);
  const od = parent === undefined ? undefined : cache.ready.get(parent);
  if (od && cache.names && !cache.names.has(parent!)) namesIn(cache, cache.names, od).catch(() => undefined);
}
/**
 * A key's directory, opened once per hold through `cache`. `mode` as openDir's: `'probe'`
 * (a put being planned) resolves undefined for a missing directory — the put's apply makes
 * it (makeDir) — and refuses a symlink or a file in the way now, as a walk that made it
 * would; `'make'` (at apply) makes the missing components known missing with a mkdir first.
 */
export async function dirOf(s: JournalState, cache: DirCache, dirKey: string, key: string, mode: WalkMode): Promise<OpenedDir | undefined> {
  const ready = cache.ready.get(dirKey);
  if (ready) return ready;
  // A walk under way (or one that failed) is awaited; a directory known missing is decided
  // at once, so that the puts an apply makes it for share one walk.
  const cached = cache.byKey.get(dirKey);
  if (cached && !cache.missing.has(dirKey)) {
    const od = await cached.catch(() => undefined);
    if (od) return od;
  }
  if (mode !== 'make' && mode !== true && knownMissing(s, cache, dirKey, key, mode)) return undefined;
  // Made with a mkdir first when known missing; no longer missing once its making starts (later walks await it).
  const making: WalkMode = mode === 'make' && !cache.missing.delete(dirKey) ? true : mode;
  // Not opened yet, or found missing (or refused) before: walk again, it may exist now —
  // from its parent, opened (once) through the same cache: the many new directories of one
  // parent (a LangGraph thread's `parts/<sequence>/`, one per superstep, often planned
  // together) then cost one open each, not a walk each from the root.
  const parentKey = parentOf(dirKey);
  const opening = (parentKey !== undefined ? dirOf(s, cache, parentKey, key, mode) : Promise.resolve(undefined)).then(async (parent) => {
    // Its parent missing (a probe's), or not a directory (a plain walk's): no directory here either.
    if (parentKey !== undefined && !parent) return mode === 'probe' ? missingNow(s, cache, dirKey, key) : undefined;
    const od = await walkRetrying(s, dirKey, key, making, parent?.chain, mode === 'make' ? s.laneIo : s.io);
    if (!od && mode === 'probe') return missingNow(s, cache, dirKey, key);
    if (od && mode === 'make' && od.chain.length >= 2 && od.changed.includes(od.chain[od.chain.length - 2]!)) madeDir(cache, dirKey);
    return od;
  });
  cache.byKey.set(dirKey, opening);
  cache.all.push(opening);
  opening.then(
    (od) => od && cache.ready.set(dirKey, od),
    () => undefined,
  );
  return opening;
}
/** A put's directory `dirKey` is missing: refused if this hold wrote a file at its path. */
export function assertNoFileAt(s: JournalState, dirKey: string, key: string): void {
  if (fileAt(s, dirKey)) throw parentIsFile(key);
}
/** A probe found `dirKey` missing: remembered (refused if this hold wrote a file there). */
function missingNow(s: JournalState, cache: DirCache, dirKey: string, key: string): undefined {
  assertNoFileAt(s, dirKey, key);
  cache.missing.add(dirKey);
  return undefined;
}
/** A directory this hold made: empty then, so its listing is known (every file written since is in `states`). */
function madeDir(cache: DirCache, dirKey: string): void {
  cache.made.add(dirKey);
  if (cache.names && !cache.names.has(dirKey)) {
    const names = new Set<string>();
    cache.names.set(dirKey, Promise.resolve(names));
    cache.listed.set(dirKey, names);
  }
}
/**
 * A walk that makes missing directories starts over — from the root — when one it is in is
 * pruned under it (ENOENT from mkdir: an emptied directory removed by a delete being applied).
 */
export async function walkRetrying(
  s: JournalState,
  dirKey: string,
  key: string,
  create: WalkMode,
  from?: readonly Dir[],
  through: FsIo = s.io,
): Promise<OpenedDir | undefined> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await openDir(s.root, dirKey, key, create, through, attempt === 0 ? from : undefined);
    } catch (err) {
      if (!(create === true || create === 'make') || attempt >= 8 || errnoOf(err) !== 'ENOENT') throw err;
    }
  }
}
export async function closeDirs(cache: DirCache): Promise<void> {
  const all = await Promise.allSettled(cache.all);
  await Promise.all(all.map((r) => (r.status === 'fulfilled' ? r.value?.close() : undefined)));
}

/** Remembers that an apply will make `dirKey` and its missing parents. */
export function toMake(cache: DirCache, dirKey: string | undefined): void {
  for (let d = dirKey; d !== undefined && cache.missing.has(d) && !cache.toMake.has(d); d = parentOf(d)) cache.toMake.add(d);
}
