/**
 * Records the file-system calls fsStorage makes under one directory, in both modes: the
 * store calls node:fs (and node:fs/promises) functions looked up at call time — its I/O
 * seam (src/storage/fs/fd.ts) — so wrapping them here sees every open, write, fsync,
 * fdatasync, truncate, rename, link, unlink, mkdir and rmdir, with the names resolved
 * through `/proc/<pid>/fd/<fd>` directory descriptors. Calls outside the directory are
 * ignored; reads change nothing and are not recorded.
 */
import fs, { constants, readlinkSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { applyOp, cloneTree, type Op, type Tree } from './model.js';

const { O_CREAT, O_DIRECTORY, O_TRUNC } = constants;
const SYNC_FLAGS = (constants.O_DSYNC ?? 0) | (constants.O_SYNC ?? 0);

export interface Recording {
  readonly ops: Op[];
  /** Marks a checkpoint acknowledged at this point of the calls. */
  ack(run: string, sequence: number): void;
  /** Puts the real functions back. */
  stop(): void;
}

type AnyFn = (...args: never[]) => unknown;

/** Starts recording the calls under `root` (a real path, whose current content `base` holds). */
export function record(root: string, base: Tree): Recording {
  const live = cloneTree(base);
  const ops: Op[] = [];
  const files = new Map<number, { ino: number; synced: boolean }>();
  const dirFds = new Map<number, string>();
  // New files take inode numbers the base tree does not use: a shared number would make a new file and an old one one file.
  let nextIno = Math.max(0, ...base.inodes.keys()) + 1;
  const push = (op: Op): void => {
    ops.push(op);
    applyOp(live, op);
  };
  /** A path's directory and name relative to the root, or undefined outside it. */
  const where = (p: unknown): { dir: string; name: string; rel: string } | undefined => {
    if (typeof p !== 'string') return undefined;
    let abs = p;
    const m = /^\/proc\/(?:self|\d+)\/fd\/(\d+)(\/.*)?$/.exec(p);
    if (m) {
      try {
        abs = readlinkSync(`/proc/self/fd/${m[1]}`) + (m[2] ?? '');
      } catch {
        return undefined;
      }
    }
    abs = resolve(abs);
    if (abs !== root && !abs.startsWith(`${root}/`)) return undefined;
    const rel = abs === root ? '' : abs.slice(root.length + 1);
    const dir = dirname(rel);
    return { dir: dir === '.' ? '' : dir, name: basename(rel), rel };
  };
  const restore: (() => void)[] = [];
  /** Wraps `obj[name]` (callback style): `before` runs at call time and returns what to do once it succeeded. */
  const wrapCb = (
    obj: Record<string, unknown>,
    name: string,
    before: (args: unknown[]) => ((result: unknown) => void) | undefined,
  ): void => {
    const real = obj[name] as AnyFn;
    obj[name] = (...args: unknown[]) => {
      const after = before(args);
      const cb = args[args.length - 1];
      if (after && typeof cb === 'function') {
        args[args.length - 1] = (err: unknown, value: unknown) => {
          if (!err) after(value);
          (cb as (e: unknown, v: unknown) => void)(err, value);
        };
      }
      return (real as (...a: unknown[]) => unknown).apply(obj, args);
    };
    restore.push(() => (obj[name] = real));
  };
  /** Wraps `obj[name]` (synchronous): `before` runs at call time, what it returns once the call returned. */
  const wrapSync = (
    obj: Record<string, unknown>,
    name: string,
    before: (args: unknown[]) => ((result: unknown) => void) | undefined,
  ): void => {
    const real = obj[name] as AnyFn;
    obj[name] = (...args: unknown[]) => {
      const after = before(args);
      const value = (real as (...a: unknown[]) => unknown).apply(obj, args);
      after?.(value);
      return value;
    };
    restore.push(() => (obj[name] = real));
  };
  /**
   * Wraps `obj[name]` (a promise): as {@link wrapSync}, what `before` returns running once the
   * promise fulfilled, before the caller's own continuation (registered first).
   */
  const wrapPromise = (
    obj: Record<string, unknown>,
    name: string,
    before: (args: unknown[]) => ((result: unknown) => void) | undefined,
  ): void =>
    wrapSync(obj, name, (args) => {
      const after = before(args);
      return after && ((promise) => void (promise as Promise<unknown>).then(after, () => undefined));
    });
  const onOpen = (args: unknown[]): ((fd: unknown) => void) | undefined => {
    const w = where(args[0]);
    if (!w) return undefined;
    const flags = typeof args[1] === 'number' ? args[1] : 0;
    return (fd) => {
      if (typeof fd !== 'number') return;
      if (flags & O_DIRECTORY) {
        dirFds.set(fd, w.rel);
        return;
      }
      const entry = live.dirs.get(w.dir)?.get(w.name);
      const synced = (flags & SYNC_FLAGS) !== 0;
      if (entry?.kind === 'file') {
        files.set(fd, { ino: entry.ino, synced });
        if (flags & O_TRUNC) push({ t: 'trunc', ino: entry.ino, size: 0, synced: false });
      } else if (!entry && flags & O_CREAT) {
        const ino = nextIno++;
        push({ t: 'create', dir: w.dir, name: w.name, ino });
        files.set(fd, { ino, synced });
      } else if (!entry) dirFds.set(fd, w.rel); // a directory opened without O_DIRECTORY
    };
  };
  const names2 = (t: 'rename' | 'link') => (args: unknown[]) => {
    const a = where(args[0]);
    const b = where(args[1]);
    if (!a || !b) return undefined;
    return () => push({ t, fromDir: a.dir, from: a.name, toDir: b.dir, to: b.name });
  };
  const name1 = (t: 'unlink' | 'mkdir' | 'rmdir') => (args: unknown[]) => {
    const w = where(args[0]);
    if (!w || w.rel === '') return undefined;
    return () => push({ t, dir: w.dir, name: w.name });
  };
  const F = fs as unknown as Record<string, unknown>;
  const P = fsp as unknown as Record<string, unknown>;
  wrapCb(F, 'open', onOpen);
  wrapCb(F, 'close', (args) => {
    files.delete(args[0] as number);
    dirFds.delete(args[0] as number);
    return undefined;
  });
  const onWrite = (args: unknown[]): ((written: unknown) => void) | undefined => {
    const f = files.get(args[0] as number);
    if (!f) return undefined;
    const buf = args[1] as Uint8Array;
    const offset = typeof args[2] === 'number' ? args[2] : 0;
    const pos = typeof args[4] === 'number' ? args[4] : 0;
    return (written) => push({ t: 'write', ino: f.ino, pos, bytes: buf.slice(offset, offset + (written as number)), synced: f.synced });
  };
  wrapCb(F, 'write', onWrite);
  // The packed store writes a lone call's group on the event loop (positioned, as `write` above).
  wrapSync(F, 'writeSync', onWrite);
  wrapCb(F, 'ftruncate', (args) => {
    const f = files.get(args[0] as number);
    return f ? () => push({ t: 'trunc', ino: f.ino, size: args[1] as number, synced: f.synced }) : undefined;
  });
  const onSync = (args: unknown[]): (() => void) | undefined => {
    const fd = args[0] as number;
    const f = files.get(fd);
    if (f) return () => push({ t: 'fsync', ino: f.ino });
    const d = dirFds.get(fd);
    return d === undefined ? undefined : () => push({ t: 'dsync', dir: d });
  };
  for (const sync of ['fsync', 'fdatasync']) {
    wrapCb(F, sync, onSync);
    wrapSync(F, `${sync}Sync`, onSync);
  }
  wrapCb(F, 'rename', names2('rename'));
  wrapCb(F, 'link', names2('link'));
  for (const op of ['unlink', 'mkdir', 'rmdir'] as const) {
    wrapCb(F, op, name1(op));
    wrapPromise(P, op, name1(op));
  }
  // The packed lock lets go (and is taken over) by a synchronous call right after its check.
  wrapSync(F, 'renameSync', names2('rename'));
  wrapSync(F, 'unlinkSync', name1('unlink'));
  return {
    ops,
    ack: (run, sequence) => ops.push({ t: 'ack', run, sequence }),
    stop: () => {
      for (const r of restore.splice(0).reverse()) r();
    },
  };
}
