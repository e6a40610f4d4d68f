/** Opening a packed store: the segment made or scanned, its torn tail cut off, the index built. */
import { closeSync, fstatSync, fsyncSync, mkdirSync, openSync, constants, readSync } from 'node:fs';
import { join } from 'node:path';
import { INTERNAL_MARK } from '../fs/names.js';
import { realIo } from '../fs/fd.js';
import { createPackedLock } from './lock.js';
import { scanSegment } from './record.js';
import { createPackedState, type PackedState } from './state.js';

export const SEGMENT_NAME = 'segment-0.spk';
/** The directory of the store's own files (the lock, the seal owed, tokens). */
export const PACKED_DIR = `${INTERNAL_MARK}packed`;

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function readWhole(fd: number): Buffer {
  const size = fstatSync(fd).size;
  const data = Buffer.allocUnsafe(size);
  let done = 0;
  while (done < size) {
    const n = readSync(fd, data, done, size - done, done);
    if (n === 0) break;
    done += n;
  }
  return data.subarray(0, done);
}

/** The open store of `options.dir`. */
export function openPackedState(options: PackedState['options']): PackedState {
  mkdirSync(join(options.dir, PACKED_DIR), { recursive: true });
  const path = join(options.dir, SEGMENT_NAME);
  const dsync = options.sync === 'dsync' ? constants.O_DSYNC : 0;
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | dsync, 0o644);
  try {
    // The segment's name made durable before anything is written into it.
    syncDirectory(options.dir);
    const data = readWhole(fd);
    // Bytes past the last intact record are cut by the next holder of the lock, not here: another process may be writing them now.
    const { ops, end } = scanSegment(data);
    const lock = createPackedLock(join(options.dir, PACKED_DIR), realIo, options);
    const state = createPackedState(options, path, fd, end, realIo, lock);
    for (const op of ops) {
      if (op.kind === 'put') state.index.set(op.key, { offset: op.offset, length: op.length, version: op.version });
      else state.index.delete(op.key);
    }
    for (const key of state.index.keys()) state.order.add(key);
    return state;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}
