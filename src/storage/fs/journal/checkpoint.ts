import { constants } from 'node:fs';
import { CheckpointError } from '../../../contract/errors.js';
import { openDir, type Dir, type OpenedDir } from '../dir.js';
import { errnoOf } from '../io.js';
import { withDescriptor } from '../descriptor-budget.js';
import { createLane, type Lane } from '../lane.js';
import { keyPath } from '../paths.js';
import { appliedSoFar } from './apply-queue.js';
import { readDecoded, voidFile, type FileNo } from './files.js';
import type { Held } from './hold.js';
import { takeKept } from './kept.js';
import type { KeyFate } from './planned.js';
import { keysOf, newEpoch } from './record.js';
import type { JournalState } from './state.js';

/*
 * A checkpoint makes the files the journal names durable in place (fsync of each file and of
 * every directory on its path), then empties the journal: under the lock for both files
 * (checkpointLocked), or in the background for a full file while commits go to the other
 * (checkpointRetiring, started by rotate). A key whose last record in the window is a delete
 * has no file to fsync (its groups are applied first): only its directories, for the unlink.
 */

const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** The background checkpoint of a full journal file; a failure leaves it to the next replay. */
export async function checkpointRetiring(s: JournalState, file: FileNo, keys: ReadonlyMap<string, KeyFate>): Promise<void> {
  try {
    await appliedSoFar(s);
    // A group failed to apply: the next commit (or letting the lock go) replays both files.
    if (s.needRecovery) return;
    await syncKeys(s, keys, s.lane);
    await voidFile(s, file);
  } catch {
    s.needRecovery = true;
  }
}

/** Waits for this hold's background checkpoint, if any. */
export async function settleRetiring(h: Held | undefined): Promise<void> {
  const r = h?.retiring;
  if (!r) return;
  await r.done;
  if (h.retiring === r) h.retiring = undefined;
}

/**
 * Makes every file the journal names durable in place (fsync of each file and of every
 * directory on its path), then empties both journal files. Under the lock, with no
 * background checkpoint running.
 */
export async function checkpointLocked(s: JournalState, keys?: readonly string[]): Promise<void> {
  const { held } = s;
  // The keys are known while the journal's end is (no hashing of the whole journal on the event loop).
  const names: Iterable<Named> =
    keys?.map((key) => [key, 'file'] as const) ??
    (held?.end !== undefined && held.keys
      ? [...held.keys]
      : [...new Set((await Promise.all([readDecoded(s, 0), readDecoded(s, 1)])).flatMap((f) => [...keysOf(f)]))].map(
          (key) => [key, 'file'] as const,
        ));
  await syncKeys(s, names);
  if (s.held) s.held.end = undefined;
  await Promise.all([voidFile(s, 0), voidFile(s, 1)]);
  if (s.held) {
    s.held.end = 0;
    s.held.epoch = newEpoch();
    s.held.keys = new Map();
  }
}

/** fsyncs a key's file in place (gone, or a link: nothing of ours to make durable). */
async function syncFile(s: JournalState, od: OpenedDir, key: string, through: Lane): Promise<void> {
  const { io } = s;
  // Taken out first: a later apply of the key must not close it under the fsync.
  const ffd = takeKept(s, key);
  if (ffd !== undefined) {
    try {
      await through(() => io.fsync(ffd));
    } finally {
      await through(() => io.close(ffd)).catch(() => undefined);
    }
    return;
  }
  // Opened, fsynced and closed a few at a time (a journal may name thousands of files: descriptor-budget.ts).
  await withDescriptor(async () => {
    let opened: number;
    try {
      opened = await through(() => io.open(od.dir.at(keyPath(key).base), O_RDONLY | O_NOFOLLOW | O_NONBLOCK));
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ELOOP') return;
      throw err;
    }
    try {
      await through(() => io.fsync(opened));
    } finally {
      await through(() => io.close(opened)).catch(() => undefined);
    }
  });
}

/** Parents a checkpoint holds open at once (each with its chain), and directories of each (one descriptor each) while it fsyncs their files. */
const PARENTS_AT_ONCE = 4;
const CHILDREN_AT_ONCE = 4;

/** Calls made at once, on the commit's path (recovery, close). */
const direct: Lane = (call) => call();

/** Groups `items` by `keyOf` (in first-seen order). */
function groupBy<T>(items: Iterable<T>, keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = keyOf(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}

/** The parent of directory `dirKey` (`''`: the root, or `dirKey` is the root). */
const parentDirOf = (dirKey: string): string => dirKey.slice(0, Math.max(0, dirKey.lastIndexOf('/')));

/** A key to checkpoint and what its last record left. */
type Named = readonly [string, KeyFate];

/** What one checkpoint's fsyncs share: each directory fsynced once, by its key. */
interface SyncRun {
  readonly s: JournalState;
  readonly through: Lane;
  readonly dirs: Map<string, Promise<void>>;
}

/** Walks a directory without following links; one refused (see recoverLocked) or missing is skipped. */
async function walkOrSkip(s: JournalState, dirKey: string, key: string, from?: readonly Dir[]): Promise<OpenedDir | undefined> {
  return openDir(s.root, dirKey, key, false, s.io, from).catch((err: unknown) => {
    if (err instanceof CheckpointError && err.reasonCode === 'checkpoint_key_invalid') return undefined;
    throw err;
  });
}

/** fsyncs the files of `names` (those with one: not `gone`) and every directory on their paths (`through`: the background lane, or at once). */
async function syncKeys(s: JournalState, names: Iterable<Named>, through: Lane = direct): Promise<void> {
  // One walk per directory, not per key (a journal's keys are mostly a few runs' files), and
  // each parent walked once, its directories opened from it: a chunk directory costs one
  // open below `chunks/`, not a walk from the root.
  const byDir = groupBy(names, ([key]) => keyPath(key).dirKey);
  const byParent = groupBy(byDir, ([dirKey]) => parentDirOf(dirKey));
  const run: SyncRun = { s, through, dirs: new Map() };
  const parents = createLane(PARENTS_AT_ONCE);
  await Promise.all([...byParent].map(([parentKey, inParent]) => parents(() => syncInParent(run, parentKey, inParent))));
  await Promise.all(run.dirs.values());
  // Their directories are durable: a move's rename away from one of them is too.
  for (const keysInDir of byDir.values()) for (const [key] of keysInDir) s.movedAway.delete(key);
}

/** fsyncs the directories `inParent` (children of `parentKey`, each with its keys) and their files, from one walk to the parent. */
async function syncInParent(run: SyncRun, parentKey: string, inParent: readonly (readonly [string, Named[]])[]): Promise<void> {
  const { s } = run;
  const first = inParent[0]!;
  // A single directory (or the root's own children) is walked on its own: no parent walk to share.
  const parent = inParent.length > 1 && parentKey !== '' ? await walkOrSkip(s, parentKey, first[1][0]![0]) : undefined;
  if (inParent.length > 1 && parentKey !== '' && !parent) return; // the parent is missing (or refused): so are its children
  try {
    const children = createLane(CHILDREN_AT_ONCE);
    await Promise.all(inParent.map(([dirKey, keys]) => children(() => syncDir(run, dirKey, keys, parent?.chain))));
  } finally {
    await parent?.close();
  }
}

/** fsyncs directory `dirKey` (walked from `from` when given), the directories above it not synced yet, and the files of `keys`. */
async function syncDir(run: SyncRun, dirKey: string, keys: readonly Named[], from?: readonly Dir[]): Promise<void> {
  const { s, through, dirs } = run;
  const od = await walkOrSkip(s, dirKey, keys[0]![0], from);
  if (!od) return;
  try {
    const syncs: Promise<void>[] = [];
    for (const d of od.chain) {
      if (!dirs.has(d.rel)) {
        const done = through(() => s.io.fsync(d.fd));
        // Awaited below; marked handled now in case another directory's failure ends the wait first.
        done.catch(() => undefined);
        dirs.set(d.rel, done);
        syncs.push(done);
      }
    }
    // A deleted key's file is gone: its unlink needs the directory's fsync only (no open to fail).
    for (const [key, fate] of keys) if (fate === 'file') syncs.push(syncFile(s, od, key, through));
    await Promise.all(syncs);
  } finally {
    await od.close();
  }
}
