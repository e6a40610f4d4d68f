/**
 * A file tree as a power loss sees it: directories (by path relative to the store root)
 * naming files by inode, and each inode's bytes. The recorder (recorder.ts) keeps one up to
 * date with every call; crash states (crash-states.ts) replay a subset of the calls onto a
 * copy of the tree the recording started from.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, lstatSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type Entry = { readonly kind: 'file'; readonly ino: number } | { readonly kind: 'dir' };

export interface Tree {
  /** Directory path relative to the root ('' for the root) → its entries. */
  readonly dirs: Map<string, Map<string, Entry>>;
  readonly inodes: Map<number, Uint8Array>;
}

/** One file-system call as recorded (what it did, on which names and inodes), or an acknowledgement. */
export type Op =
  | { readonly t: 'create'; readonly dir: string; readonly name: string; readonly ino: number }
  | { readonly t: 'write'; readonly ino: number; readonly pos: number; readonly bytes: Uint8Array; readonly synced: boolean }
  | { readonly t: 'trunc'; readonly ino: number; readonly size: number; readonly synced: boolean }
  | { readonly t: 'fsync'; readonly ino: number }
  | { readonly t: 'dsync'; readonly dir: string }
  | { readonly t: 'rename'; readonly fromDir: string; readonly from: string; readonly toDir: string; readonly to: string }
  | { readonly t: 'link'; readonly fromDir: string; readonly from: string; readonly toDir: string; readonly to: string }
  | { readonly t: 'unlink'; readonly dir: string; readonly name: string }
  | { readonly t: 'mkdir'; readonly dir: string; readonly name: string }
  | { readonly t: 'rmdir'; readonly dir: string; readonly name: string }
  | { readonly t: 'ack'; readonly run: string; readonly sequence: number };

export const childPath = (dir: string, name: string): string => (dir ? `${dir}/${name}` : name);

export function cloneTree(t: Tree): Tree {
  return { dirs: new Map([...t.dirs].map(([k, v]) => [k, new Map(v)])), inodes: new Map(t.inodes) };
}

/** Applies one call to `tree` (bytes replaced, never shared); false when it cannot apply (its source is not there). */
export function applyOp(tree: Tree, op: Op, tornTo?: number, owned?: Set<number>): boolean {
  const { dirs, inodes } = tree;
  switch (op.t) {
    case 'create': {
      const d = dirs.get(op.dir);
      if (!d) return false;
      d.set(op.name, { kind: 'file', ino: op.ino });
      if (!inodes.has(op.ino)) inodes.set(op.ino, new Uint8Array(0));
      return true;
    }
    case 'write': {
      const old = inodes.get(op.ino);
      if (!old) return false;
      const bytes = tornTo === undefined ? op.bytes : op.bytes.subarray(0, tornTo);
      // Written in place when this tree has its own copy already (a replay makes hundreds of writes to one journal file).
      if (owned?.has(op.ino) && op.pos + bytes.length <= old.length) {
        old.set(bytes, op.pos);
        return true;
      }
      owned?.add(op.ino);
      const out = new Uint8Array(Math.max(old.length, op.pos + bytes.length));
      out.set(old);
      out.set(bytes, op.pos);
      inodes.set(op.ino, out);
      return true;
    }
    case 'trunc': {
      const old = inodes.get(op.ino);
      if (!old) return false;
      const out = new Uint8Array(op.size);
      out.set(old.subarray(0, op.size));
      inodes.set(op.ino, out);
      return true;
    }
    case 'rename':
    case 'link': {
      const from = dirs.get(op.fromDir)?.get(op.from);
      const to = dirs.get(op.toDir);
      if (!from || !to || from.kind !== 'file') return false;
      if (op.t === 'rename') dirs.get(op.fromDir)!.delete(op.from);
      to.set(op.to, from);
      return true;
    }
    case 'unlink':
      return dirs.get(op.dir)?.delete(op.name) ?? false;
    case 'mkdir': {
      const d = dirs.get(op.dir);
      if (!d || d.has(op.name)) return false;
      d.set(op.name, { kind: 'dir' });
      dirs.set(childPath(op.dir, op.name), new Map());
      return true;
    }
    case 'rmdir': {
      const path = childPath(op.dir, op.name);
      if ((dirs.get(path)?.size ?? 1) > 0) return false;
      dirs.get(op.dir)?.delete(op.name);
      dirs.delete(path);
      return true;
    }
    default:
      return true;
  }
}

/** Reads the tree under `root` (files and directories only). */
export function readTree(root: string): Tree {
  const tree: Tree = { dirs: new Map(), inodes: new Map() };
  let ino = -1;
  const walk = (rel: string): void => {
    const entries = new Map<string, Entry>();
    tree.dirs.set(rel, entries);
    for (const name of readdirSync(join(root, rel))) {
      const st = lstatSync(join(root, rel, name));
      if (st.isDirectory()) {
        entries.set(name, { kind: 'dir' });
        walk(childPath(rel, name));
      } else if (st.isFile()) {
        entries.set(name, { kind: 'file', ino: ino });
        tree.inodes.set(ino--, new Uint8Array(readFileSync(join(root, rel, name))));
      }
    }
  };
  walk('');
  return tree;
}

/** Writes `tree` under the (empty, existing) directory `root`. */
export function writeTree(tree: Tree, root: string): void {
  const reachable = (rel: string): boolean => {
    if (rel === '') return true;
    const at = rel.lastIndexOf('/');
    const parent = at < 0 ? '' : rel.slice(0, at);
    return tree.dirs.get(parent)?.get(rel.slice(at + 1))?.kind === 'dir' && reachable(parent);
  };
  const dirs = [...tree.dirs.keys()].filter(reachable).sort((a, b) => a.split('/').length - b.split('/').length);
  for (const rel of dirs) {
    if (rel) mkdirSync(join(root, rel));
    for (const [name, e] of tree.dirs.get(rel)!) if (e.kind === 'file') writeFile(join(root, rel, name), tree.inodes.get(e.ino));
  }
}

/** Writes a file's bytes up to their trailing zeros, then sets its length: the zeros of a preallocated journal are a hole, read back as zeros. */
function writeFile(path: string, bytes: Uint8Array = new Uint8Array(0)): void {
  writeFileSync(path, bytes.subarray(0, withoutTrailingZeros(bytes)));
  truncateSync(path, bytes.length);
}

/** A digest of what `tree` holds, names and bytes (two crash states that hold the same are checked once). */
export function digestTree(tree: Tree): string {
  const h = createHash('sha256');
  for (const rel of [...tree.dirs.keys()].sort()) {
    h.update(`d ${rel}\n`);
    for (const [name, e] of [...tree.dirs.get(rel)!].sort(([a], [b]) => (a < b ? -1 : 1))) {
      h.update(`${name} ${e.kind}\n`);
      if (e.kind === 'file') h.update(digestBytes(tree.inodes.get(e.ino) ?? new Uint8Array(0)));
    }
  }
  return h.digest('hex');
}

/**
 * A file's length and the digest of its bytes up to its trailing zeros: the same for the same
 * bytes, and cheap for a preallocated journal file (a megabyte of zeros after a few records).
 */
function digestBytes(bytes: Uint8Array): string {
  const end = withoutTrailingZeros(bytes);
  return `${bytes.length} ${createHash('sha256').update(bytes.subarray(0, end)).digest('hex')}\n`;
}

const ZEROS = new Uint8Array(64 * 1024);

/** The length of `bytes` without its trailing zero bytes (compared a block at a time, natively). */
function withoutTrailingZeros(bytes: Uint8Array): number {
  let end = bytes.length;
  while (end > 0) {
    const start = Math.max(0, end - ZEROS.length);
    if (Buffer.compare(bytes.subarray(start, end), ZEROS.subarray(0, end - start)) !== 0) break;
    end = start;
  }
  while (end > 0 && bytes[end - 1] === 0) end--;
  return end;
}
