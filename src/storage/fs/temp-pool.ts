import { constants } from 'node:fs';
import { withDescriptor } from './descriptor-budget.js';
import type { RootDir } from './dir.js';
import type { FsIo } from './fd.js';
import type { Lane } from './lane.js';
import type { LockTiming } from './lock.js';
import { newOwner, tempName } from './names.js';

/*
 * Empty temp files made ahead of need. A journaled put is acknowledged once its
 * record is durable, and its version — `<mtime ns>.<inode>.<size>` — must be known then,
 * before its file is written: so the inode comes from a temp file created beforehand, off
 * the commit's path (creating one costs a new inode and a directory entry, ~0.1–0.6 ms),
 * and the mtime is one the store chooses and sets with futimes when it applies the put.
 *
 * The files live in the store's root (a rename moves them into any key's directory of the
 * same file system) under ordinary temp names, so a crashed process's are swept on open
 * like any temp file. A pooled file is used only while it is well inside the stale bound
 * (other processes sweep temp files older than `staleAfterMs`); older ones are removed.
 */

const { O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW } = constants;
const MAX_POOL = 64;

/** An empty temp file in the root, open for writing (or closed: see {@link TempPool.takeClosed}). */
export interface PooledTemp {
  readonly path: string;
  /** Undefined for a closed one: its put opens it again by path to fill it (descriptor-budget.ts). */
  readonly fd: number | undefined;
  readonly ino: bigint;
  readonly atMs: number;
}

export interface TempPool {
  /**
   * A pooled temp file at once, without any call (undefined when the pool has none young).
   * Does not refill: a commit calls {@link TempPool.refill} once its record's write is
   * issued, so the refill's file creations do not run in the kernel before it.
   */
  takeReady(): PooledTemp | undefined;
  /** A pooled temp file, made now when the pool is empty (the commit waits for it). Does not refill. */
  take(): Promise<PooledTemp>;
  /**
   * A closed temp file made ahead, at once, without any call (undefined when none is ready):
   * for a put past the process's open temp files (descriptor-budget.ts). A miss asks the
   * refills to keep some ready from then on.
   */
  takeReadyClosed(): PooledTemp | undefined;
  /** {@link TempPool.takeReadyClosed}, or a temp file made now and closed at once (its inode known). */
  takeClosed(): Promise<PooledTemp>;
  /** Starts making temp files in the background until the pool holds what it wants (no-op while a refill runs). */
  refill(): void;
  /** Whether `temp` is young enough to be written (older ones may be swept as a crashed writer's). */
  young(temp: PooledTemp): boolean;
  /** Gives back a temp file that was never written (a closed one is removed). */
  giveBack(temp: PooledTemp): void;
  /** Whether a time set with futimes reads back exactly as {@link futimesNs} predicts (probed once). */
  exactTimes(): Promise<boolean>;
  /** Waits for a refill under way, then closes and removes every pooled file. */
  close(): Promise<void>;
}

/**
 * The mtime in nanoseconds that futimes(`seconds`) stores on a file system with
 * nanosecond timestamps: libuv splits the double into seconds and nanoseconds and cuts
 * the nanoseconds to whole microseconds (uv__fs_to_timespec). Same double arithmetic here.
 */
export function futimesNs(seconds: number): bigint {
  let sec = Math.trunc(seconds);
  let nsec = Math.trunc((seconds - sec) * 1e9);
  nsec -= nsec % 1000;
  if (nsec < 0) {
    nsec += 1e9;
    sec -= 1;
  }
  return BigInt(sec) * 1_000_000_000n + BigInt(nsec);
}

/** Where a pool makes its temp files, and how. */
interface PoolPlace {
  readonly root: RootDir;
  readonly io: FsIo;
  readonly timing: LockTiming;
  readonly fileMode: number;
}

/** Makes an empty temp file in the root (`through`: the lane its calls go through, or at once). */
async function makeTemp(at: PoolPlace, through: Lane = (call) => call()): Promise<PooledTemp & { readonly fd: number }> {
  const { root, io, timing, fileMode } = at;
  const owner = newOwner(timing.clock.now());
  const path = root.at(tempName(owner));
  const fd = await through(() => io.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, fileMode));
  try {
    return { path, fd, ino: (await through(() => io.fstat(fd))).ino, atMs: owner.atMs };
  } catch (err) {
    await dropTemp(io, { path, fd });
    throw err;
  }
}
/** A temp file made and closed through `through` (its inode known; its put opens it again by path to fill it). */
async function makeClosed(at: PoolPlace, through: Lane = (call) => call()): Promise<PooledTemp> {
  const t = await makeTemp(at, through);
  // The file stays (its inode is the put's version); a failed close leaves nothing open to write through.
  await through(() => at.io.close(t.fd)).catch(() => undefined);
  return { ...t, fd: undefined };
}
/** Closes and removes a temp file (failures ignored: a leftover is swept as any temp file). */
async function dropTemp(io: FsIo, t: { readonly path: string; readonly fd: number | undefined }): Promise<void> {
  await Promise.all([t.fd === undefined ? undefined : io.close(t.fd).catch(() => undefined), io.unlink(t.path).catch(() => undefined)]);
}

/** `lane`: where refills run (background work, see lane.ts); a temp file a commit waits for is made at once. */
export function createTempPool(root: RootDir, io: FsIo, timing: LockTiming, fileMode: number, lane: Lane): TempPool {
  const pool: PooledTemp[] = [];
  let want = 4;
  /**
   * Closed temp files made ahead: once the process holds its most open temp files (a busy
   * run whose applies lag a few hundred puts behind its commits), every put takes a closed
   * one, and made on the commit's path each cost an open, an fstat and a close before the
   * record's write. None are kept until a put first wants one.
   */
  const closedPool: PooledTemp[] = [];
  let wantClosed = 0;
  /** Whether a refill has completed since the pool last grew: only an empty pool then means the store outgrew it. */
  let filled = false;
  let closedFilled = false;
  let refilling: Promise<void> | undefined;
  let closed = false;
  let probe: Promise<boolean> | undefined;
  const young = (t: PooledTemp): boolean => timing.clock.now() - t.atMs <= timing.staleAfterMs / 4;
  const place: PoolPlace = { root, io, timing, fileMode };
  const make = (through?: Lane): Promise<PooledTemp & { readonly fd: number }> => makeTemp(place, through);
  const drop = (t: { readonly path: string; readonly fd: number | undefined }): Promise<void> => dropTemp(io, t);
  const wanting = (): boolean => pool.length < want || closedPool.length < wantClosed;
  function refill(): void {
    if (refilling || closed || !wanting()) return;
    refilling = (async () => {
      while (!closed && pool.length < want) {
        const made = await Promise.all([make(lane), make(lane)]);
        if (closed) await Promise.all(made.map(drop));
        else pool.push(...made);
      }
      filled = true;
      while (!closed && closedPool.length < wantClosed) {
        const made = await Promise.all([makeClosed(place, lane), makeClosed(place, lane)]);
        if (closed) await Promise.all(made.map(drop));
        else closedPool.push(...made);
      }
      if (wantClosed > 0) closedFilled = true;
    })()
      .catch(() => undefined)
      .finally(() => (refilling = undefined));
  }

  /** The youngest usable file of `from` (older ones removed). */
  function popYoung(from: PooledTemp[]): PooledTemp | undefined {
    for (let t = from.pop(); t; t = from.pop()) {
      if (young(t)) return t;
      void drop(t);
    }
    return undefined;
  }
  /**
   * A pooled file at once, or undefined. Empty after a refill completed: the store is busier
   * than the pool was sized for, and the pool grows (once per refill, however many takes miss).
   */
  function takeReady(): PooledTemp | undefined {
    const ready = popYoung(pool);
    if (!ready && filled) {
      want = Math.min(MAX_POOL, want * 2);
      filled = false;
    }
    return ready;
  }
  /** {@link takeReady} of a closed file: the first miss makes the refills keep some ready. */
  function takeReadyClosed(): PooledTemp | undefined {
    const ready = popYoung(closedPool);
    if (!ready && wantClosed === 0) wantClosed = 4;
    else if (!ready && closedFilled) {
      wantClosed = Math.min(MAX_POOL, wantClosed * 2);
      closedFilled = false;
    }
    return ready;
  }

  return {
    takeReady,
    take: async () => takeReady() ?? make(),
    takeReadyClosed,
    takeClosed: async () => takeReadyClosed() ?? withDescriptor(() => makeClosed(place)),
    refill,
    young,
    giveBack(t) {
      if (!closed && young(t) && t.fd !== undefined) pool.push(t);
      else void drop(t);
    },
    exactTimes() {
      return (probe ??= (async () => {
        const t = await make();
        try {
          // A time with a fraction double arithmetic rounds (…0.123456789…), set and read back.
          const seconds = Math.floor(Date.now() / 1000) + 0.123457;
          await io.futimes(t.fd, seconds);
          return (await io.fstat(t.fd)).mtimeNs === futimesNs(seconds);
        } finally {
          pool.push(t);
        }
      })());
    },
    async close() {
      closed = true;
      await refilling;
      await Promise.all([...pool.splice(0), ...closedPool.splice(0)].map(drop));
    },
  };
}
