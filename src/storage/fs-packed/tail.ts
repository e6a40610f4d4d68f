/**
 * Tailing: what other processes appended to the active segment since this one last looked,
 * applied to the index. A holder of the lock tails once after taking it (nothing else writes
 * while it holds it) and cuts a torn tail a crashed holder left; a process that does not hold
 * it tails before a read or a listing, up to the first incomplete record (one being written
 * now), and cuts nothing.
 */
import { CheckpointError } from '../../contract/errors.js';
import { scanSegment, type ScannedOp } from './record.js';
import type { PackedState } from './state.js';

/** Applies scanned ops, in order, to the index. */
export function applyScanned(state: PackedState, ops: readonly ScannedOp[]): void {
  for (const op of ops) {
    if (op.kind === 'put') {
      if (!state.index.has(op.key)) state.order.add(op.key);
      state.index.set(op.key, { offset: op.offset, length: op.length, version: op.version });
    } else if (state.index.delete(op.key)) state.order.remove(op.key);
  }
}

function shrunk(state: PackedState, size: number): CheckpointError {
  return new CheckpointError(
    'checkpoint_atomic_write_failed',
    `packed store ${state.path}: the active segment is ${size} bytes, shorter than the ${state.end} bytes already read from it`,
    { details: { key: 'packed', reason: 'packed_segment_shrunk' } },
  );
}

/** Reads and applies the records past `state.end`; `cut`: the lock is ours, so bytes past the last intact record are a crashed holder's torn tail. */
async function tailNow(state: PackedState, cut: boolean): Promise<void> {
  const io = state.io;
  const size = Number((await io.fstat(state.fd)).size);
  if (size < state.end) throw shrunk(state, size);
  if (size > state.end) {
    const from = state.end;
    const bytes = await io.read(state.fd, size - from, from);
    const scanned = scanSegment(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length), from);
    applyScanned(state, scanned.ops);
    state.end = scanned.end;
  }
  if (cut && state.end < size) {
    await io.ftruncate(state.fd, state.end);
    await io.datasync(state.fd);
  }
}

/** Tails in order, one at a time, so that no two read past the same end. */
export interface Tails {
  /** Settles once the last tail asked for is done. */
  last: Promise<void>;
  /** A tail asked for that has not looked at the segment yet: a caller now may share it. */
  waiting: Promise<void> | undefined;
  waitingCut: boolean;
}

export const createTails = (): Tails => ({ last: Promise.resolve(), waiting: undefined, waitingCut: false });

/**
 * Brings the index up to date with the segment (`cut`: as the lock's holder). A tail asked for
 * while another runs starts after it (that one may have looked before the bytes this caller must
 * see were there); callers meanwhile share it.
 */
export function tail(state: PackedState, cut: boolean): Promise<void> {
  const t = state.tails;
  if (t.waiting && (t.waitingCut || !cut)) return t.waiting;
  const next: Promise<void> = t.last.then(() => {
    if (t.waiting === next) t.waiting = undefined;
    return tailNow(state, cut);
  });
  t.waiting = next;
  t.waitingCut = cut;
  t.last = next.catch(() => undefined);
  return next;
}
