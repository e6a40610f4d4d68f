import fs, { constants, type BigIntStats } from 'node:fs';
import { fdClose, fdOpen, realIo, type FsIo } from './fd.js';
import { errnoOf } from './io.js';
import { keyRefused, symlinkRefused } from './paths.js';

/*
 * Race-free containment (DESIGN invariant 6). Checking a path and then using it by name is
 * a race: between the two, anyone who can write inside the store can swap a directory for a
 * symbolic link (renameat2 RENAME_EXCHANGE does it atomically) and the use lands outside.
 *
 * So the store never uses a path below its root by name. It walks a key's directories one
 * component at a time, each opened with O_DIRECTORY | O_NOFOLLOW relative to the previous
 * directory's descriptor, and names the key's file relative to the last one. Node has no
 * openat()/renameat(), but on Linux `/proc/self/fd/<fd>/<name>` is their equivalent: the
 * kernel jumps through the magic link to the very directory the descriptor holds (it does
 * not resolve the directory's path again), then looks up only `<name>`. Swapping any
 * component after it was opened changes nothing for us; a swap before it makes the open
 * fail (ELOOP) and the key is refused. Final names are never followed either: reads open
 * with O_NOFOLLOW, and rename/link/unlink act on the name itself.
 *
 * The descriptors are named through `/proc/<pid>/fd`, with the number `/proc/self` links to
 * (read once): the same directory `/proc/self/fd` leads to while this process lives, without
 * following the `self` link at every call, which cost about as much as the rest of the lookup.
 *
 * Elsewhere (macOS, BSDs: no /proc magic links) the same walk is made by absolute path:
 * every component is still opened with O_NOFOLLOW, which refuses a link planted before the
 * check, but a swap between the walk and the use is not excluded there. The report of
 * ready() says which mode the store runs in (`containment`).
 */

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;
const DIR_FLAGS = O_RDONLY | O_DIRECTORY | O_NOFOLLOW;

/** How the store names files below its root: through directory descriptors (race-free) or by path. */
export type Containment = 'dir-fd' | 'path';

/** An open directory of the store. */
export interface Dir {
  readonly fd: number;
  /** The directory relative to the root (`''` for the root). */
  readonly rel: string;
  /** A path naming this very directory (`/proc/<pid>/fd/<fd>`, or its absolute path). */
  readonly prefix: string;
  /** A path naming `name` inside this very directory (see above). */
  at(name: string): string;
  /** `<dir>/rel`, for messages: never the absolute path. */
  readonly shown: string;
}

/** The store's root, open for its whole life. */
export interface RootDir extends Dir {
  readonly containment: Containment;
  /** Absolute (real) path of the root. */
  readonly real: string;
}

export function makeDir(fd: number, rel: string, containment: Containment, absRoot: string): Dir {
  const prefix = containment === 'dir-fd' ? `${procFd}/${fd}` : rel ? `${absRoot}/${rel}` : absRoot;
  return { fd, rel, prefix, at: (name) => `${prefix}/${name}`, shown: rel ? `<dir>/${rel}` : '<dir>' };
}

/** This process's descriptors in /proc: `/proc/<pid>/fd` once {@link procWorks} found the number `/proc/self` links to. */
let procFd = '/proc/self/fd';

/** The directory of this process's descriptors named without the `self` link, or undefined when /proc does not give it. */
async function procFdByPid(): Promise<string | undefined> {
  try {
    // The number as the mounted /proc knows it (another pid namespace's may differ from process.pid).
    const pid = await fs.promises.readlink('/proc/self');
    return /^[1-9][0-9]*$/.test(pid) ? `/proc/${pid}/fd` : undefined;
  } catch {
    return undefined;
  }
}

/** Whether `<dir>/<fd>` leads to the directory `fd` holds. */
async function leadsTo(dir: string, fd: number, expected: BigIntStats): Promise<boolean> {
  try {
    const st = await fs.promises.stat(`${dir}/${fd}/.`, { bigint: true });
    return st.ino === expected.ino && st.dev === expected.dev;
  } catch {
    return false;
  }
}

/** True when `/proc/self/fd/<fd>` leads to the directory `fd` holds (Linux with /proc mounted); then settles {@link procFd}. */
async function procWorks(fd: number, expected: BigIntStats): Promise<boolean> {
  if (!(await leadsTo('/proc/self/fd', fd, expected))) return false;
  const byPid = await procFdByPid();
  if (byPid !== undefined && (await leadsTo(byPid, fd, expected))) procFd = byPid;
  return true;
}

/** Opens the (real, absolute) root directory and decides how names below it are made. */
export async function openRoot(real: string): Promise<RootDir> {
  const fd = await fdOpen(real, O_RDONLY | O_DIRECTORY);
  try {
    const st = await new Promise<BigIntStats>((res, rej) => fs.fstat(fd, { bigint: true }, (e, s) => (e ? rej(e) : res(s))));
    const containment: Containment = (await procWorks(fd, st)) ? 'dir-fd' : 'path';
    return { ...makeDir(fd, '', containment, real), containment, real };
  } catch (err) {
    await fdClose(fd).catch(() => undefined);
    throw err;
  }
}

/** Whether `path` is a symbolic link now (only to word an error: the open already refused it). */
async function isLink(path: string): Promise<boolean> {
  try {
    return (await fs.promises.lstat(path)).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Opens directory entry `name` of `parent` without following a link: `undefined` when it is
 * missing, a symbolic link or not a directory (for walks that skip what is not a key).
 */
export async function openChild(root: RootDir, parent: Dir, name: string): Promise<Dir | undefined> {
  try {
    const fd = await fdOpen(parent.at(name), DIR_FLAGS);
    return makeDir(fd, parent.rel ? `${parent.rel}/${name}` : name, root.containment, root.real);
  } catch (err) {
    const code = errnoOf(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return undefined;
    throw err;
  }
}

/** A directory of a key, opened; `parents` are the directories whose entries changed (new subdirectories) and need an fsync. */
export interface OpenedDir {
  readonly dir: Dir;
  /** Directories (open) in which this walk created a subdirectory, outermost first. */
  readonly changed: readonly Dir[];
  /** The root and every directory opened down to `dir`, outermost first. */
  readonly chain: readonly Dir[];
  /** Closes everything this walk opened (never the root). */
  close(): Promise<void>;
}

/**
 * How a walk treats missing components: `false` resolves `undefined` (and so does a file in
 * the way), `true` makes them, `'probe'` resolves `undefined` but refuses a file in the way
 * as `true` does (a journaled put plans into a directory it makes only when applied), and
 * `'make'` makes them with a mkdir before the open (components known to be missing: one
 * call fewer than an open that fails first).
 */
export type WalkMode = boolean | 'probe' | 'make';

/**
 * Opens directory `dirKey` below the root one component at a time, never following a
 * symbolic link. With `create` (or `'make'`), missing components are made (mode 0o777 minus
 * the umask). Resolves `undefined` when a component is missing (without `create`) or is not
 * a directory and `create` is `false`. Rejects with `checkpoint_key_invalid` (reason
 * `symlink`) when a component is a symbolic link, and (reason `path_occupied`) when a walk
 * that is not `false` finds a file. See {@link WalkMode}.
 */
export async function openDir(
  root: RootDir,
  dirKey: string,
  key: string,
  create: WalkMode,
  io: FsIo = realIo,
  from?: readonly Dir[],
): Promise<OpenedDir | undefined> {
  const opened: Dir[] = [];
  const changed: Dir[] = [];
  const close = async (): Promise<void> => {
    await Promise.all(opened.map((d) => io.close(d.fd).catch(() => undefined)));
  };
  // A walk may start below the root, from directories another walk holds open (`from`: the root
  // first, each the previous one's child, the last an ancestor of dirKey): as safe as walking
  // them again, since each was opened without following a link; they stay that walk's to close.
  const start = from && from.length > 1 && dirKey.startsWith(`${from[from.length - 1]!.rel}/`) ? from : [root];
  let current: Dir = start[start.length - 1]!;
  try {
    if (dirKey !== current.rel) {
      let rel = current.rel;
      for (const segment of dirKey.slice(rel ? rel.length + 1 : 0).split('/')) {
        rel = rel ? `${rel}/${segment}` : segment;
        const name = current.at(segment);
        let fd: number | undefined;
        const makes = create === true || create === 'make';
        for (let attempt = 0; fd === undefined; attempt++) {
          try {
            if (create === 'make' && attempt === 0) await makeIn(current, name, changed, io);
            fd = await io.open(name, DIR_FLAGS);
          } catch (err) {
            const code = errnoOf(err);
            // Linux answers O_DIRECTORY | O_NOFOLLOW on a symbolic link with ENOTDIR, not ELOOP.
            if (code === 'ELOOP' || (code === 'ENOTDIR' && (await isLink(name)))) throw symlinkRefused(key);
            if (code === 'ENOTDIR') {
              if (create !== false) throw keyRefused(key, 'a parent path is a file (another key)', 'path_occupied');
              await close();
              return undefined;
            }
            if (code !== 'ENOENT') throw err;
            if (!makes) {
              await close();
              return undefined;
            }
            if (attempt > 8) throw err;
            await makeIn(current, name, changed, io);
          }
        }
        current = makeDir(fd, rel, root.containment, root.real);
        opened.push(current);
      }
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { dir: current, changed, chain: [...start, ...opened], close };
}

/** mkdir `name` in `parent` (never follows a link at its last component); one that exists already is fine (a racing mkdir: EEXIST). */
async function makeIn(parent: Dir, name: string, changed: Dir[], io: FsIo): Promise<void> {
  try {
    await io.mkdir(name);
    if (!changed.includes(parent)) changed.push(parent);
  } catch (mkErr) {
    // ENOENT: the directory we create in was removed (an emptied run pruned); the caller retries.
    if (errnoOf(mkErr) !== 'EEXIST') throw mkErr;
  }
}
