import { constants } from 'node:fs';
import { CheckpointError } from '../../../contract/errors.js';
import { releaseOpenTemp, withDescriptor } from '../descriptor-budget.js';
import { openDir, type Dir, type OpenedDir } from '../dir.js';
import { errnoOf, versionOf } from '../io.js';
import { keyPath } from '../paths.js';
import { createLane } from '../lane.js';
import { dirOf, hasRoom, nearestOpen, walkRetrying } from './dirs.js';
import { keep, unkeep } from './kept.js';
import { assertLease } from './lease.js';
import { touchMoved } from './move.js';
import type { Planned } from './planned.js';
import type { JournalState } from './state.js';
import { giveBack } from './temps.js';

/*
 * Applying committed operations to the spec's files, by rename of whole files (a reader
 * that is not savepoint sees an old or a new file, never a torn one). The applied files are
 * not fsynced one by one: the journal is the truth until a checkpoint has fsynced them.
 */

const { O_WRONLY, O_NOFOLLOW } = constants;

/** What an apply does with committed operations (decided before any call: see planApply). */
interface ApplyPlan {
  /** Each key's last operation, in the order of each key's last operation. */
  readonly last: ReadonlyMap<string, Planned>;
  /** Puts that never reach the disk (a later operation of their key won): their temp files go back to the pool. */
  readonly mergedAway: readonly Planned[];
  /** The puts whose files are renamed into place. */
  readonly puts: readonly Planned[];
  /** Whether the key existed before the first of these operations (a put that creates is applied first). */
  readonly existed: (p: Planned) => boolean;
}

/** Each key's last operation only, and which puts are merged away (pure: no call, no change). */
function planApply(planned: readonly Planned[]): ApplyPlan {
  const first = new Map<string, Planned>();
  const last = new Map<string, Planned>();
  for (const p of planned) {
    if (p.op.type === 'check') continue;
    if (!first.has(p.op.key)) first.set(p.op.key, p);
    last.delete(p.op.key); // re-inserted: the map keeps the order of each key's last operation
    last.set(p.op.key, p);
  }
  // Merged away: a put followed by a delete of its key (then a put again) included, its temp file taken over or not.
  const mergedAway = planned.filter((p) => p.temp && last.get(p.op.key) !== p);
  // A put whose temp file a later put took over is replaced by that one's apply (takeOver).
  const puts = [...last.values()].filter((p) => p.op.type === 'put' && !p.taken);
  const existed = (p: Planned): boolean => first.get(p.op.key)!.before.exists;
  return { last, mergedAway, puts, existed };
}

/**
 * Applies committed operations: each key's last one only (an earlier put of the same key
 * never touches the disk: its temp file goes back to the pool). Whole-file renames, in
 * three steps so that a reader that is not savepoint never sees a file refer to one that
 * is not there yet: files that are new (history) first, then replaced ones (latest,
 * index), all of a step at once; deletes last, those of a directory at once, then that
 * directory pruned once if they left it empty.
 */
export async function applyMerged(s: JournalState, planned: readonly Planned[]): Promise<void> {
  const { last, mergedAway, puts, existed } = planApply(planned);
  giveBack(s, mergedAway, true);
  // Directories a put was planned into without them (no mkdir on the commit path) are made beside the fills.
  await settleAll([...puts.filter((p) => !p.od && p.dirs).map((p) => makeDir(s, p)), ...puts.map((p) => fill(s, p))]);
  await landAll(
    s,
    puts.filter((p) => !existed(p)),
  );
  await landAll(s, puts.filter(existed));
  // A directory a put of this apply landed in is not empty: no rmdir to try after a delete there
  // (a run's history file in, its oldest out, every checkpoint once retention keeps it bounded).
  const holding = new Set(puts.map((p) => keyPath(p.op.key).dirKey));
  // A move's source is gone once its put landed (renamed away): no unlink to try.
  const renamedAway = (p: Planned): boolean => p.movedBy !== undefined && last.get(p.movedBy.op.key) === p.movedBy && !p.movedBy.taken;
  await deleteAll(
    s,
    [...last.values()].filter((p) => p.op.type === 'delete' && existed(p) && !renamedAway(p)),
    holding,
  );
  // A put taken over stays what reads answer until the put that took it over is committed (or the journal replayed).
  for (const [key, p] of last) if (s.pending.get(key) === p && !p.taken) s.pending.delete(key);
}

/** Runs every call; rejects (once all settled) with the first failure. */
async function settleAll(calls: readonly Promise<void>[]): Promise<void> {
  const failed = (await Promise.allSettled(calls)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

/**
 * Makes the directory of a put planned while it was missing, through the hold's cache it
 * was planned with (one walk per directory, from its parent; the cache closes it once its
 * groups are applied). Never follows a link: a symlink planted since is refused, the apply
 * fails and the journal is replayed (which refuses the key too).
 */
async function makeDir(s: JournalState, p: Planned): Promise<void> {
  if (!p.dirs) throw new Error('a put into a missing directory is planned with the cache that makes it');
  const dirKey = keyPath(p.op.key).dirKey;
  // Past the directories the cache keeps open, landAll walks (and makes) it (descriptor-budget.ts).
  if (p.dirs.byKey.has(dirKey) || hasRoom(p.dirs)) p.od = await dirOf(s, p.dirs, dirKey, p.op.key, 'make');
}

/** Directories walked at once to land the puts planned without theirs open. */
const WALKS_AT_ONCE = 4;

/**
 * Lands `puts`: those with their directory open at once, the others through one walk per
 * directory (made when missing), a few at a time, each from the nearest directory its
 * hold's cache holds open (see nearestOpen), not from the root.
 */
async function landAll(s: JournalState, puts: readonly Planned[]): Promise<void> {
  const byDir = new Map<string, Planned[]>();
  for (const p of puts) {
    if (p.od) continue;
    const dirKey = keyPath(p.op.key).dirKey;
    const list = byDir.get(dirKey);
    if (list) list.push(p);
    else byDir.set(dirKey, [p]);
  }
  const walks = createLane(WALKS_AT_ONCE);
  await settleAll([
    ...puts.filter((p) => p.od).map((p) => land(s, p, p.od!)),
    ...[...byDir].map(([dirKey, inDir]) =>
      walks(async () => {
        const od = await walkRetrying(s, dirKey, inDir[0]!.op.key, true, walkFrom(inDir[0]!, dirKey), s.laneIo);
        try {
          await settleAll(inDir.map((p) => land(s, p, od!)));
        } finally {
          await od?.close();
        }
      }),
    ),
  ]);
}
/** Where the apply's walk to `dirKey`, the directory of `p`'s key, starts: an ancestor the hold's cache holds open, if any. */
const walkFrom = (p: Planned, dirKey: string): readonly Dir[] | undefined => p.near ?? (p.dirs ? nearestOpen(p.dirs, dirKey) : undefined);

/**
 * A delete planned while its directory was missing (its key acknowledged, not yet
 * applied): the directory as it is now, walked on disk unless the cache opened it since
 * (what the cache knows missing may have been made by an apply planned with another).
 */
async function openedLate(s: JournalState, p: Planned): Promise<Planned> {
  if (p.od || !p.dirs) return p;
  const dirKey = keyPath(p.op.key).dirKey;
  const walk = p.dirs.ready.get(dirKey) ?? walkRetrying(s, dirKey, p.op.key, false, nearestOpen(p.dirs, dirKey), s.laneIo);
  if (walk instanceof Promise) p.dirs.all.push(walk); // closed with the cache
  p.od = await walk;
  return p;
}

/** Writes a put's bytes into its temp file and sets the mtime its version names. */
async function fill(s: JournalState, p: Planned): Promise<void> {
  // A move's file has its bytes: only the mtime of its new version, set as it lands.
  if (p.moves !== undefined) return;
  const fd = p.temp!.fd;
  // Left open: once renamed over its key it is kept for the checkpoint's fsync (land).
  if (fd !== undefined) return fillThrough(s, p, fd);
  // A closed temp file (a batch past the process's open ones): opened again by path for its fill, a few at a time.
  const { io, lane } = s;
  const temp = p.temp!;
  await withDescriptor(async () => {
    const opened = await lane(() => io.open(temp.path, O_WRONLY | O_NOFOLLOW));
    try {
      // Its inode is in the put's version: another file under its name (none should be) is not written.
      if ((await lane(() => io.fstat(opened))).ino !== temp.ino) throw new Error('a temp file was replaced before its apply');
      await fillThrough(s, p, opened);
    } finally {
      await lane(() => io.close(opened)).catch(() => undefined);
    }
  });
}

/** {@link fill} through descriptor `fd` of the put's temp file. */
async function fillThrough(s: JournalState, p: Planned, fd: number): Promise<void> {
  const { io, lane } = s;
  await lane(() => io.write(fd, (p.op as { bytes: Uint8Array }).bytes));
  await lane(() => io.futimes(fd, p.mtimeSeconds!));
  if (!p.exact) {
    // Timestamps that do not read back as set: the version is the file's own (the commit waits for it).
    const version = versionOf(await lane(() => io.fstat(fd)));
    p.outcome = { type: 'put', key: p.op.key, version };
    p.after = { exists: true, version, mtimeNs: BigInt(version.slice(0, version.indexOf('.'))) };
  }
}

/**
 * The file a put renames over its key: its temp file, or a move's source file — by its own
 * directory when planned with it, else in the target's directory `od` (the same one: see
 * sourceFile).
 */
const landsFrom = (p: Planned, od: OpenedDir): string =>
  p.moves !== undefined && p.temp!.path === '' ? od.dir.at(keyPath(p.moves).base) : p.temp!.path;

/** Renames a filled temp file over its key in `od` (through a fresh walk if the key's directory was pruned and made again meanwhile). */
async function land(s: JournalState, p: Planned, od: OpenedDir): Promise<void> {
  const kp = keyPath(p.op.key);
  if (s.movedAway.delete(p.op.key)) await s.lane(() => s.io.fsync(od.dir.fd));
  const from = landsFrom(p, od);
  if (p.moves !== undefined) await touchMoved(s, from, p.mtimeSeconds!);
  try {
    await s.lane(() => {
      // Checked right before the call (in the lane's turn): a holder whose lease may have run out renames nothing.
      assertLease(s, 'applying the journal');
      return s.io.rename(from, od.dir.at(kp.base));
    });
  } catch (err) {
    if (errnoOf(err) !== 'ENOENT') throw err;
    const od = await walkRetrying(s, kp.dirKey, p.op.key, true);
    try {
      assertLease(s, 'applying the journal');
      await s.io.rename(landsFrom(p, od!), od!.dir.at(kp.base));
    } finally {
      await od?.close();
    }
  }
  p.landed = true;
  p.closed = true;
  if (p.moves !== undefined) s.movedAway.add(p.moves);
  const fd = p.temp!.fd;
  releaseOpenTemp(p.temp);
  // A closed temp file leaves nothing to keep: the checkpoint fsyncs its file by path.
  if (fd !== undefined) await keep(s, p.op.key, fd);
}

/** Directories whose deletes are applied at once (their unlinks still take the background lane's turns). */
const DELETE_DIRS_AT_ONCE = 8;

/**
 * Applies deletes: the keys of each directory at once, a few directories at a time (each
 * unlink still waits its turn in the background lane), then one try at pruning each
 * directory they left empty — not one after each delete. Deletes are idempotent and
 * independent of each other, so any subset applied before a crash is replayed to the
 * same end; a directory left unpruned by a crash is empty and pruned by its next delete.
 */
async function deleteAll(s: JournalState, deletes: readonly Planned[], holding: ReadonlySet<string>): Promise<void> {
  if (deletes.length === 0) return;
  const byDir = new Map<string, Planned[]>();
  for (const p of deletes) {
    const dirKey = keyPath(p.op.key).dirKey;
    const list = byDir.get(dirKey);
    if (list) list.push(p);
    else byDir.set(dirKey, [p]);
  }
  const dirs = createLane(DELETE_DIRS_AT_ONCE);
  await settleAll([...byDir].map(([dirKey, inDir]) => dirs(() => deleteInDir(s, inDir, holding.has(dirKey)))));
}

/** Deletes `inDir` (keys of one directory), then prunes that directory once if it may be empty (`inUse`: this apply put a file there). */
async function deleteInDir(s: JournalState, inDir: readonly Planned[], inUse: boolean): Promise<void> {
  const done = await Promise.allSettled(inDir.map(async (p) => unlinkKey(s, await openedLate(s, p))));
  const fresh = done.flatMap((r) => (r.status === 'fulfilled' && r.value.fresh ? [r.value.fresh] : []));
  try {
    const failed = done.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const removed = done.find((r) => r.status === 'fulfilled' && r.value.removedIn);
    if (removed && !inUse) await prune(s, (removed as PromiseFulfilledResult<Unlinked>).value.removedIn!);
  } finally {
    await Promise.all(fresh.map((od) => od.close()));
  }
}

/** What {@link unlinkKey} did: the directory it removed the file from, and a walk of its own for the caller to close. */
interface Unlinked {
  readonly removedIn?: OpenedDir;
  readonly fresh?: OpenedDir;
}

/** Removes a deleted key's file (found by a fresh walk if its directory was pruned and made again meanwhile). */
async function unlinkKey(s: JournalState, p: Planned): Promise<Unlinked> {
  await unkeep(s, p.op.key);
  const kp = keyPath(p.op.key);
  let od = p.od;
  let fresh: OpenedDir | undefined;
  try {
    // Planned past the cache's bound (neither its directory nor the cache): walked now.
    if (!od && !p.dirs) od = fresh = await openDir(s.root, kp.dirKey, p.op.key, false, s.io, p.near);
    for (let attempt = 0; od; attempt++) {
      try {
        await s.lane(() => {
          assertLease(s, 'applying the journal');
          return s.io.unlink(od!.dir.at(kp.base));
        });
        return { removedIn: od, ...(fresh ? { fresh } : {}) };
      } catch (err) {
        if (err instanceof CheckpointError) throw err;
        if (errnoOf(err) !== 'ENOENT' || attempt > 0) break;
        await fresh?.close();
        fresh = undefined;
        od = fresh = await openDir(s.root, kp.dirKey, p.op.key, false, s.io);
      }
    }
    return fresh ? { fresh } : {};
  } catch (err) {
    await fresh?.close();
    throw err;
  }
}

/** Closes and removes the temp files of operations that did not land. */
export async function discard(s: JournalState, planned: readonly Planned[]): Promise<void> {
  await Promise.all(
    planned.map(async (p) => {
      if (!p.temp || p.landed) return;
      p.landed = true;
      // A move's source is a key's file: it stays (the journal's replay moves it).
      if (p.moves !== undefined) return;
      const fd = p.closed ? undefined : p.temp.fd;
      releaseOpenTemp(p.temp);
      await Promise.all([
        fd === undefined ? undefined : s.io.close(fd).catch(() => undefined),
        s.io.unlink(p.temp.path).catch(() => undefined),
      ]);
    }),
  );
}

/** Removes the directories of `od`'s chain that are left empty, deepest first (stops at the first that is not). */
async function prune(s: JournalState, od: OpenedDir): Promise<void> {
  for (let i = od.chain.length - 1; i > 0; i--) {
    const rel = od.chain[i]!.rel;
    try {
      await s.io.rmdir(od.chain[i - 1]!.at(rel.slice(rel.lastIndexOf('/') + 1)));
    } catch {
      return;
    }
  }
}
