/**
 * The file-system calls the packed store makes, as one object so tests inject a fault at any call
 * and the power-loss recorder (which wraps node:fs's callback functions) sees every one. The
 * asynchronous calls are fsStorage's seam ({@link FsIo}); the few synchronous ones serve the
 * flavours that write or read on the event loop.
 */
import fs, { type BigIntStats } from 'node:fs';
import { call, realIo, type FsIo } from '../fs/fd.js';
import { errnoOf, READ_SLICE_BYTES } from '../fs/io.js';

export interface PackedIo extends Pick<
  FsIo,
  'open' | 'close' | 'fsync' | 'datasync' | 'writeAt' | 'read' | 'fstat' | 'ftruncate' | 'rename' | 'unlink' | 'futimes'
> {
  /** mkdir -p. */
  mkdirp(path: string): Promise<void>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<BigIntStats>;
  /** Reads into `bytes` from `position` on the event loop; returns the bytes read (0 at the end). */
  readSync(fd: number, bytes: Uint8Array, offset: number, length: number, position: number): number;
  /** Writes every byte of `bytes` at `position` on the event loop. */
  writeAtSync(fd: number, bytes: Uint8Array, position: number): void;
  datasyncSync(fd: number): void;
  /** The inode of the file at `path`, on the event loop; undefined when there is none. */
  inodeSync(path: string): bigint | undefined;
  /** unlink(2) on the event loop: the lock's release, right after the check that it is still ours (lock.ts). */
  unlinkSync(path: string): void;
}

// Functions are looked up on `fs` at call time, so the power-loss recorder's wrappers see them.
export const realPackedIo: PackedIo = {
  open: realIo.open,
  close: realIo.close,
  fsync: realIo.fsync,
  datasync: realIo.datasync,
  writeAt: realIo.writeAt,
  read: realIo.read,
  fstat: realIo.fstat,
  ftruncate: realIo.ftruncate,
  rename: realIo.rename,
  unlink: realIo.unlink,
  futimes: realIo.futimes,
  mkdirp: (path) => call<void>((cb) => fs.mkdir(path, { recursive: true }, (err) => cb(err ?? null, undefined))),
  readdir: (path) => call<string[]>((cb) => fs.readdir(path, cb)),
  stat: (path) => call<BigIntStats>((cb) => fs.stat(path, { bigint: true }, cb)),
  readSync: (fd, bytes, offset, length, position) => fs.readSync(fd, bytes, offset, length, position),
  writeAtSync(fd, bytes, position) {
    let done = 0;
    while (done < bytes.length) {
      const n = fs.writeSync(fd, bytes, done, bytes.length - done, position + done);
      if (n <= 0) throw Object.assign(new Error('write returned 0 bytes'), { code: 'EIO', syscall: 'write' });
      done += n;
    }
  },
  datasyncSync: (fd) => fs.fdatasyncSync(fd),
  inodeSync: (path) => fs.statSync(path, { bigint: true, throwIfNoEntry: false })?.ino,
  unlinkSync: (path) => fs.unlinkSync(path),
};

/** fsync(2) of a directory: the names made, renamed or removed in it are durable once this returns. */
export async function syncDirectory(io: PackedIo, dir: string): Promise<void> {
  const fd = await io.open(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    await io.fsync(fd);
  } finally {
    await io.close(fd);
  }
}

/** Reads `size` bytes of `fd` from `position` (fewer at the file's end), in slices Node's `read` accepts. */
export async function readRange(io: PackedIo, fd: number, position: number, size: number): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let done = 0;
  while (done < size) {
    const want = Math.min(READ_SLICE_BYTES, size - done);
    const part = await io.read(fd, want, position + done);
    parts.push(part);
    done += part.length;
    if (part.length < want) break;
  }
  return parts.length === 1 ? Buffer.from(parts[0]!.buffer, parts[0]!.byteOffset, parts[0]!.length) : Buffer.concat(parts, done);
}

/** The whole of a small file (a manifest, a hint), or undefined when there is none. */
export async function readWholeFile(io: PackedIo, path: string): Promise<Buffer | undefined> {
  let fd: number;
  try {
    fd = await io.open(path, fs.constants.O_RDONLY);
  } catch (err) {
    if (errnoOf(err) === 'ENOENT') return undefined;
    throw err;
  }
  try {
    const size = Number((await io.fstat(fd)).size);
    const bytes = await io.read(fd, size, 0);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  } finally {
    await io.close(fd);
  }
}
