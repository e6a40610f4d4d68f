/** Opening a packed store: the segment made or scanned, its torn tail cut off, the index built. */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, constants, readSync } from 'node:fs';
import { join } from 'node:path';
import { scanSegment } from './record.js';
import { createPackedState, type PackedState } from './state.js';

export const SEGMENT_NAME = 'segment-0.spk';

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
  mkdirSync(options.dir, { recursive: true });
  const path = join(options.dir, SEGMENT_NAME);
  const dsync = options.sync === 'dsync' ? constants.O_DSYNC : 0;
  const fd = openSync(path, constants.O_RDWR | constants.O_CREAT | dsync, 0o644);
  try {
    // The segment's name made durable before anything is written into it.
    syncDirectory(options.dir);
    const data = readWhole(fd);
    const { ops, end } = scanSegment(data);
    if (end < data.length) {
      // A torn tail: the last write did not finish, so nobody was answered for it.
      ftruncateSync(fd, end);
      fsyncSync(fd);
    }
    const state = createPackedState(options, path, fd, end);
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
