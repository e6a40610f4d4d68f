import { constants } from 'node:fs';
import type { BatchOperation } from '../../../contract/storage.js';
import { openDir } from '../dir.js';
import { errnoOf } from '../io.js';
import { keyPath } from '../paths.js';
import { assertLease } from './lease.js';
import type { PooledTemp } from '../temp-pool.js';
import type { AckedState, Checked } from './planned.js';
import type { JournalState } from './state.js';

/*
 * The journal's move: `move(from, to)` is committed as a batch of a put of `to` (the bytes
 * of `from`, read first) and a delete of `from`. When `from`'s file is durable on disk, the
 * put takes that file as its "temp file": the record holds ["m", from, to, version] instead
 * of the bytes, and its apply renames the file (a new mtime first, so `to` has a version of
 * its own) — no new file, nothing to fsync but a directory. Otherwise it is an ordinary
 * put and delete (a copy), with the same outcome.
 */

const { O_WRONLY, O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = constants;

/** The put of a move: it names its source (absent on every other put). */
export type MovingPut = Extract<BatchOperation, { type: 'put' }> & { readonly movedFrom: string };

/** The source a put moves from, if it is the put of a move. */
export const movedFromOf = (op: BatchOperation): string | undefined =>
  op.type === 'put' ? (op as Partial<MovingPut>).movedFrom : undefined;

/** The inode a version (`<mtime ns>.<inode>.<size>`) names. */
export function inodeOf(version: string | undefined): bigint | undefined {
  const parts = version?.split('.');
  if (parts?.length !== 3 || !/^\d+$/.test(parts[1]!)) return undefined;
  return BigInt(parts[1]!);
}

/**
 * The file of the key `put` moves from, as that put's temp file, when the move can be a
 * rename; undefined when it must be a copy. A rename is used only when the source's file is on
 * disk as the key's acknowledged state (no record of this process waits to be applied to it,
 * no earlier batch of this group names it) and its directory is open or the target's; the target is absent
 * and named by nothing pending; versions are known at the commit point (`exact`). A replay
 * finds the bytes in the record of the source's last put while the journal still holds one
 * (the file may not be durable yet), else in the moved file, under either key (recover.ts).
 */
export function sourceFile(
  s: JournalState,
  put: Checked,
  batch: readonly Checked[],
  exact: boolean,
  named: ReadonlySet<string>,
): PooledTemp | undefined {
  const from = movedFromOf(put.op);
  if (from === undefined || !exact || put.before.exists) return undefined;
  const source = batch.find((c) => c.op.type === 'delete' && c.op.key === from);
  const ino = inodeOf(source?.before.version);
  // Past the hold's open directories the source is found in the target's directory as it lands (landsFrom in apply.ts).
  const sameDir = keyPath(from).dirKey === keyPath(put.op.key).dirKey;
  if (!source?.before.exists || ino === undefined || !(source.od || sameDir)) return undefined;
  if (named.has(from) || named.has(put.op.key) || s.pending.has(from) || s.pending.has(put.op.key)) return undefined;
  return { path: source.od ? source.od.dir.at(keyPath(from).base) : '', fd: undefined, ino, atMs: 0 };
}

/**
 * Gives a moved file the mtime of its new version, by path: one call, not an open, a futimes
 * and a close (the journal lock keeps every other writer of the store away from the file).
 */
export function touchMoved(s: JournalState, path: string, mtimeSeconds: number): Promise<void> {
  return s.lane(() => {
    // As before a rename: a holder whose lease may have run out changes no file.
    assertLease(s, 'applying the journal');
    return s.io.lutimes(path, mtimeSeconds);
  });
}

/** A move found in the journal: the file with inode `ino` goes from `from` to `key` with the mtime of `version`. */
export interface JournaledMove {
  /** The source; on a replay of moves along several keys, each of them, first to last. */
  readonly from: string | readonly string[];
  readonly key: string;
  readonly version: string;
}

/**
 * Opens `key`'s file when it is the one with inode `ino` (undefined when absent or another),
 * runs `use` on its descriptor and closes it.
 */
async function withFileOf<T>(s: JournalState, key: string, ino: bigint, flags: number, use: (fd: number, path: string) => Promise<T>) {
  const kp = keyPath(key);
  const od = await openDir(s.root, kp.dirKey, key, false, s.io);
  if (!od) return undefined;
  try {
    const path = od.dir.at(kp.base);
    let fd: number;
    try {
      fd = await s.io.open(path, flags | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      if (errnoOf(err) === 'ENOENT' || errnoOf(err) === 'ELOOP') return undefined;
      throw err;
    }
    try {
      if ((await s.io.fstat(fd)).ino !== ino) return undefined;
      return { value: await use(fd, path) };
    } finally {
      await s.io.close(fd).catch(() => undefined);
    }
  } finally {
    await od.close();
  }
}

/**
 * Replays a move (under the lock, before the keys' other states): done when the target's file
 * is the moved one (its mtime set again: idempotent), else the source's file, if it is the
 * moved one, is given the mtime and renamed to the target. True when it changed something.
 * Neither: nothing to do — a later record replaced or removed the file, and the keys' last
 * states (replayed after) say what they hold.
 */
export async function redoMove(s: JournalState, m: JournaledMove): Promise<boolean> {
  const ino = inodeOf(m.version);
  const mtimeNs = BigInt(m.version.slice(0, m.version.indexOf('.')));
  if (ino === undefined) return false;
  const seconds = Number(mtimeNs) / 1e9;
  const settled = await withFileOf(s, m.key, ino, O_WRONLY, async (fd) => {
    if ((await s.io.fstat(fd)).mtimeNs === mtimeNs) return false;
    await s.io.futimes(fd, seconds);
    return true;
  });
  if (settled) return settled.value;
  const to = keyPath(m.key);
  for (const from of [m.from].flat().reverse()) {
    const moved = await withFileOf(s, from, ino, O_WRONLY, async (fd, path) => {
      await s.io.futimes(fd, seconds);
      const od = await openDir(s.root, to.dirKey, m.key, true, s.io);
      try {
        await s.io.rename(path, od!.dir.at(to.base));
      } finally {
        await od?.close();
      }
      return true;
    });
    if (moved) return moved.value;
  }
  return false;
}

/** What a move in another instance's journal leaves at its target, for reads: the moved file's bytes, wherever it is now. */
export async function movedState(s: JournalState, m: JournaledMove): Promise<AckedState> {
  const ino = inodeOf(m.version);
  if (ino === undefined) return { bytes: null };
  const read = (fd: number): Promise<Uint8Array> => s.io.fstat(fd).then((st) => s.io.read(fd, Number(st.size), 0));
  for (const key of [m.key, ...[m.from].flat().reverse()]) {
    const found = await withFileOf(s, key, ino, O_RDONLY, read);
    if (found) return { bytes: found.value, version: m.version };
  }
  return { bytes: null };
}
