import type { BigIntStats } from 'node:fs';
import fsp, { type FileHandle } from 'node:fs/promises';
import { CheckpointError } from '../../contract/errors.js';
import type { ReasonCode } from '../../contract/reason-codes.js';

/** The errno code of a Node system error, if it is one. */
export function errnoOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** lstat that resolves `undefined` for a missing name. */
export async function lstatIfAny(path: string): Promise<BigIntStats | undefined> {
  try {
    return await fsp.lstat(path, { bigint: true });
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/**
 * A key's version: modification time in nanoseconds, inode number and size, from one
 * `stat`. Any process reading the same file computes the same string, so versions are
 * comparable across processes and survive a restart. Under the key's lock, every write
 * moves the mtime past the previous version's — the write's own mtime when it already is,
 * else an explicit one (see {@link nextMtimeSeconds}) — so the version of a key never
 * repeats, even when the file system reuses an inode number within one timestamp tick
 * (ext4 does: a replaced key's inodes alternate A, B, A, B…).
 */
export function versionOf(st: BigIntStats): string {
  return `${st.mtimeNs}.${st.ino}.${st.size}`;
}

/** Wall-clock time with microsecond resolution (Date.now() has only milliseconds). */
function nowMicros(): number {
  return Math.round((performance.timeOrigin + performance.now()) * 1000);
}

/**
 * The mtime (in seconds, as `futimes` takes it) for a file about to replace `previous`:
 * now, but at least 2 µs after the previous file's mtime. libuv truncates times to whole
 * microseconds and a double holds them to ±0.12 µs, so the stored value is at least 1 µs
 * above the previous one: a key's versions strictly increase while its writes are
 * serialized by its lock.
 */
export function nextMtimeSeconds(previous: BigIntStats | undefined): number {
  let us = nowMicros();
  if (previous) {
    const prevUs = Number(previous.mtimeNs / 1000n);
    if (us < prevUs + 2) us = prevUs + 2;
  }
  return us / 1e6;
}

/**
 * The most one read call asks for. Node's `read` takes its length as a 32-bit integer and
 * aborts the process (an assertion, not an exception) on 2 GiB or more: a file is read in
 * slices of this size.
 */
export const READ_SLICE_BYTES = 16 * 1024 * 1024;

/** Reads `size` bytes from offset 0 into a fresh, unshared Uint8Array (shorter if the file is). */
export async function readAll(fh: FileHandle, size: number): Promise<Uint8Array> {
  const bytes = new Uint8Array(size);
  let offset = 0;
  while (offset < size) {
    const { bytesRead } = await fh.read(bytes, offset, Math.min(size - offset, READ_SLICE_BYTES), offset);
    if (bytesRead === 0) return bytes.slice(0, offset);
    offset += bytesRead;
  }
  return bytes;
}

/** Rewrites the store's paths in a message to `<dir>/…` (see {@link scrubbedCause}). */
export type Scrub = (s: string) => string;

/**
 * A scrubber for messages naming the absolute root `real` or directories by their
 * `/proc/<pid>/fd/<fd>` names: each known descriptor prefix becomes its `<dir>/…` form, any
 * other one `<dir>/…`.
 */
export function scrubber(real: string | undefined, dirs: readonly { readonly prefix: string; readonly shown: string }[]): Scrub {
  const known = new Map(dirs.map((d) => [d.prefix, d.shown]));
  return (s) => {
    const out = s.replace(/\/proc\/(?:self|\d+)\/fd\/\d+(?![0-9])/g, (m) => known.get(m) ?? '<dir>/…');
    return real ? out.split(real).join('<dir>') : out;
  };
}

/**
 * A copy of a Node system error that names paths relative to the store root (`<dir>/…`)
 * instead of absolutely, keeping `code`, `errno` and `syscall` for programs.
 */
export function scrubbedCause(err: unknown, scrub: Scrub): unknown {
  if (!(err instanceof Error)) return err;
  const e = err as NodeJS.ErrnoException;
  const copy = new Error(scrub(e.message)) as NodeJS.ErrnoException;
  if (e.code !== undefined) copy.code = e.code;
  if (e.errno !== undefined) copy.errno = e.errno;
  if (e.syscall !== undefined) copy.syscall = e.syscall;
  if (e.path !== undefined) copy.path = scrub(e.path);
  return copy;
}

/** Wraps a failed file-system call into a CheckpointError (a CheckpointError passes through). */
export function fsError(err: unknown, reasonCode: ReasonCode, what: string, key: string, scrub: Scrub): CheckpointError {
  if (err instanceof CheckpointError) return err;
  const code = errnoOf(err) ?? 'UNKNOWN';
  const syscall = (err as { syscall?: unknown } | null)?.syscall;
  return new CheckpointError(reasonCode, `${what} ${key} failed: ${code}`, {
    cause: scrubbedCause(err, scrub),
    details: { key, code, ...(typeof syscall === 'string' ? { syscall } : {}) },
  });
}
