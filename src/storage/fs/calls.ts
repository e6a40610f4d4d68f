import type { FsIo } from './fd.js';
import type { Lane } from './lane.js';

/*
 * A list of file-system calls run in order, one answer per call (issue 15). The journal's
 * background work (a merged apply's writes, futimes and renames, the closes it frees, the
 * journal checkpoint's fsyncs) is described as such a list and handed over at once: on the
 * real file system to one worker thread that makes the calls synchronously (worker.ts), one
 * hand-off per list instead of one per call through libuv's thread pool; with any other
 * `FsIo` (the tests' fault injection) in process, each call through that `FsIo`'s own
 * method, so a test still sees — and can fail — every call.
 */

/** The identity of a file as a version needs it (versionOf): what `fstat` answers in a list. */
export interface FileStamp {
  readonly mtimeNs: bigint;
  readonly ino: bigint;
  readonly size: bigint;
}

/**
 * One call. `need`: made only if the call at that index of the list succeeded (else
 * skipped). A `barrier` makes no call: every call after it is skipped once any call before
 * it failed — any but a `close`, whose failure leaks nothing and stops nothing.
 */
export type FsCall =
  | { readonly op: 'write'; readonly fd: number; readonly bytes: Uint8Array; readonly need?: number }
  | { readonly op: 'futimes'; readonly fd: number; readonly seconds: number; readonly need?: number }
  | { readonly op: 'fstat'; readonly fd: number; readonly need?: number }
  | { readonly op: 'fsync'; readonly fd: number; readonly need?: number }
  | { readonly op: 'close'; readonly fd: number; readonly need?: number }
  | { readonly op: 'rename'; readonly from: string; readonly to: string; readonly need?: number }
  | { readonly op: 'unlink'; readonly path: string; readonly need?: number }
  | { readonly op: 'rmdir'; readonly path: string; readonly need?: number }
  | { readonly op: 'barrier' };

/** A call's answer: done (with `fstat`'s stamp), failed (a Node system error), or skipped. */
export type CallResult = { readonly ok: true; readonly stamp?: FileStamp } | { readonly ok: false; readonly error: unknown } | { readonly ok: false; readonly skipped: true };

/** Runs a list of calls in order and answers each. Never rejects for a call's failure. */
export type RunCalls = (calls: readonly FsCall[]) => Promise<CallResult[]>;

export const SKIPPED: CallResult = { ok: false, skipped: true };

/** Whether a call's `need` is met by the answers so far. */
function needMet(call: { readonly need?: number }, results: readonly CallResult[]): boolean {
  return call.need === undefined || results[call.need]?.ok === true;
}

/** Makes one call through `io`. */
async function callThrough(io: FsIo, call: Exclude<FsCall, { op: 'barrier' }>): Promise<FileStamp | undefined> {
  switch (call.op) {
    case 'write':
      return void (await io.write(call.fd, call.bytes));
    case 'futimes':
      return void (await io.futimes(call.fd, call.seconds));
    case 'fstat': {
      const st = await io.fstat(call.fd);
      return { mtimeNs: st.mtimeNs, ino: st.ino, size: st.size };
    }
    case 'fsync':
      return void (await io.fsync(call.fd));
    case 'close':
      return void (await io.close(call.fd));
    case 'rename':
      return void (await io.rename(call.from, call.to));
    case 'unlink':
      return void (await io.unlink(call.path));
    case 'rmdir':
      return void (await io.rmdir(call.path));
  }
}

/** The in-process executor: each call, in order, through `io`'s own method and `lane` (the background lane of the thread pool). */
export function inProcessCalls(io: FsIo, lane: Lane): RunCalls {
  return async (calls) => {
    const results: CallResult[] = [];
    let failed = false;
    let skipRest = false;
    for (const call of calls) {
      if (call.op === 'barrier') {
        skipRest ||= failed;
        results.push(SKIPPED);
        continue;
      }
      if (skipRest || !needMet(call, results)) {
        results.push(SKIPPED);
        continue;
      }
      try {
        const stamp = await lane(() => callThrough(io, call));
        results.push(stamp ? { ok: true, stamp } : { ok: true });
      } catch (error) {
        failed ||= call.op !== 'close';
        results.push({ ok: false, error });
      }
    }
    return results;
  };
}

/** The error of a failed call (undefined when it succeeded or was skipped). */
export function errorOf(result: CallResult | undefined): unknown {
  return result && !result.ok && 'error' in result ? result.error : undefined;
}

/** Whether a call was skipped (by its `need` or a barrier). */
export function skipped(result: CallResult | undefined): boolean {
  return result !== undefined && !result.ok && 'skipped' in result;
}
