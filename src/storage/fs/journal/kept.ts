import type { JournalState } from './state.js';

/*
 * Kept descriptors: an applied file's temp descriptor left open after its rename, so the
 * journal checkpoint fsyncs it without an open and a close (see `kept` in state.ts).
 */

/** Applied files' descriptors kept open for the journal checkpoint's fsync, at most, by every journaled store of the process together (see `kept`). */
const MAX_KEPT = 256;
let keptInProcess = 0;
/** How many descriptors the process keeps now (tests: none once every store is closed). */
export const keptDescriptors = (): number => keptInProcess;

/** Takes the kept descriptor of `key` out (the caller closes it), if any. */
export function takeKept(s: JournalState, key: string): number | undefined {
  const fd = s.kept.get(key);
  if (fd !== undefined) {
    s.kept.delete(key);
    keptInProcess--;
  }
  return fd;
}
/** Keeps `fd` as the descriptor of the file `key` holds now (closing the one it replaced), or closes it when the process keeps MAX_KEPT. */
export async function keep(s: JournalState, key: string, fd: number): Promise<void> {
  const replaced = takeKept(s, key);
  const closing = replaced === undefined ? [] : [replaced];
  if (keptInProcess < MAX_KEPT) {
    s.kept.set(key, fd);
    keptInProcess++;
  } else closing.push(fd);
  // The file is in place: a failed close leaks nothing of what is committed.
  await Promise.all(closing.map((c) => s.lane(() => s.io.close(c)).catch(() => undefined)));
}
/** Closes the kept descriptor of `key` (its file is being deleted), if any. */
export async function unkeep(s: JournalState, key: string): Promise<void> {
  const fd = takeKept(s, key);
  if (fd === undefined) return;
  await s.lane(() => s.io.close(fd)).catch(() => undefined);
}
/**
 * Forgets every kept descriptor — the files may be replaced by someone else (the lock
 * goes) or by a replay — and closes them in the background lane: up to MAX_KEPT closes
 * at once would otherwise queue ahead of the next commit's write in the thread pool.
 */
export function dropKept(s: JournalState): void {
  const fds = [...s.kept.values()];
  s.kept.clear();
  keptInProcess -= fds.length;
  if (fds.length > 0) s.dropping = Promise.all([s.dropping, ...fds.map((fd) => s.lane(() => s.io.close(fd)).catch(() => undefined))]);
}
