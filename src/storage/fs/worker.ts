import { Worker } from 'node:worker_threads';
import { inProcessCalls, type CallResult, type FileStamp, type RunCalls } from './calls.js';
import { realIo, type FsIo } from './fd.js';
import type { Lane } from './lane.js';

/*
 * The process's file worker (issue 15): one worker_threads worker that makes the journal's
 * background calls synchronously, a list per message, in the order given. On 2 loaded cores
 * each call handed to libuv's thread pool cost the main thread 30–50 µs (it is preempted by
 * the thread it wakes); a list costs one hand-off. Synchronous calls block only the worker,
 * never the event loop (issue 15 item 4).
 *
 * The source is a string evaluated by the worker (no file to find: the ESM and CommonJS
 * builds load it alike). Paths like `/proc/self/fd/<n>/<name>` and descriptors mean the same
 * in a worker of the same process. Bytes are posted by structured clone (copied): the store
 * keeps answering reads from its own. The worker is started on first use and `unref()`ed
 * while it has nothing to answer, so it never keeps the process alive for itself. If it
 * cannot start, or dies, calls run in process through the thread pool as before.
 */
const WORKER_SOURCE = `
const fs = require('node:fs');
const { parentPort } = require('node:worker_threads');
function run(c) {
  switch (c.op) {
    case 'write': { let off = 0; while (off < c.bytes.length) { const n = fs.writeSync(c.fd, c.bytes, off, c.bytes.length - off, off); if (n <= 0) throw Object.assign(new Error('write returned 0 bytes'), { code: 'EIO', syscall: 'write' }); off += n; } return; }
    case 'futimes': return fs.futimesSync(c.fd, c.seconds, c.seconds);
    case 'fstat': { const st = fs.fstatSync(c.fd, { bigint: true }); return { mtimeNs: st.mtimeNs, ino: st.ino, size: st.size }; }
    case 'fsync': return fs.fsyncSync(c.fd);
    case 'close': return fs.closeSync(c.fd);
    case 'rename': return fs.renameSync(c.from, c.to);
    case 'unlink': return fs.unlinkSync(c.path);
    case 'rmdir': return fs.rmdirSync(c.path);
  }
  throw new Error('unknown call ' + c.op);
}
parentPort.on('message', ({ id, calls }) => {
  const results = [];
  let failed = false, skipRest = false;
  for (const c of calls) {
    if (c.op === 'barrier') { skipRest = skipRest || failed; results.push({ ok: false, skipped: true }); continue; }
    if (skipRest || (c.need !== undefined && !(results[c.need] && results[c.need].ok))) { results.push({ ok: false, skipped: true }); continue; }
    try {
      const stamp = run(c);
      results.push(stamp ? { ok: true, stamp } : { ok: true });
    } catch (e) {
      failed = failed || c.op !== 'close';
      results.push({ ok: false, error: { message: String(e && e.message), code: e && e.code, errno: e && e.errno, syscall: e && e.syscall, path: e && e.path } });
    }
  }
  parentPort.postMessage({ id, results });
});
`;

interface PostedError {
  readonly message: string;
  readonly code?: string;
  readonly errno?: number;
  readonly syscall?: string;
  readonly path?: string;
}
type Posted = { readonly ok: true; readonly stamp?: FileStamp } | { readonly ok: false; readonly skipped: true } | { readonly ok: false; readonly error: PostedError };

/** A Node system error again, from the fields the worker posted (code, errno, syscall, path: errnoOf and fsError read them). */
function systemError(e: PostedError): NodeJS.ErrnoException {
  const err = new Error(e.message) as NodeJS.ErrnoException;
  if (e.code !== undefined) err.code = e.code;
  if (e.errno !== undefined) err.errno = e.errno;
  if (e.syscall !== undefined) err.syscall = e.syscall;
  if (e.path !== undefined) err.path = e.path;
  return err;
}

/** How the worker is started (tests start one that cannot, or that dies). */
export type StartWorker = () => Worker;
// trackUnmanagedFds off: the worker closes descriptors the main thread opened (Node would warn, and close them again when the worker exits).
const startDefault: StartWorker = () => new Worker(WORKER_SOURCE, { eval: true, trackUnmanagedFds: false });

/**
 * An executor that sends each list to a worker; `fallback` runs lists when the worker
 * cannot start or has died. A list in flight when the worker dies fails (its calls may or
 * may not have been made: the journal replays).
 */
export function workerCalls(fallback: RunCalls, start: StartWorker = startDefault): RunCalls {
  let worker: Worker | undefined;
  let dead = false;
  let nextId = 0;
  const waiting = new Map<number, { resolve(r: CallResult[]): void; reject(e: unknown): void }>();

  function die(why: unknown): void {
    if (dead) return;
    dead = true;
    worker = undefined;
    const lost = [...waiting.values()];
    waiting.clear();
    const err = Object.assign(new Error(`the file worker stopped: ${why instanceof Error ? why.message : String(why)}`), { code: 'EIO', syscall: 'worker' });
    for (const w of lost) w.reject(err);
  }
  function started(): Worker | undefined {
    if (worker || dead) return worker;
    try {
      const w = start();
      w.unref();
      w.on('message', ({ id, results }: { id: number; results: Posted[] }) => {
        const w8 = waiting.get(id);
        if (!w8) return;
        waiting.delete(id);
        if (waiting.size === 0) w.unref();
        w8.resolve(results.map((r): CallResult => (r.ok || 'skipped' in r ? r : { ok: false, error: systemError(r.error) })));
      });
      w.on('error', die);
      w.on('exit', (code) => die(`exit code ${code}`));
      worker = w;
    } catch {
      dead = true;
    }
    return worker;
  }
  return (calls) => {
    const w = started();
    if (!w) return fallback(calls);
    const id = nextId++;
    return new Promise<CallResult[]>((resolve, reject) => {
      if (waiting.size === 0) w.ref();
      waiting.set(id, { resolve, reject });
      w.postMessage({ id, calls });
    });
  };
}

let shared: RunCalls | undefined;
/*
 * Experiment switches of the sixth round (issue 15; this prototype is measured and reverted,
 * see docs/performance.md): FSW=0 runs the lists in process through the thread pool instead
 * of the worker; FSW_STATS=1 prints lists, calls per list and ms per list at exit.
 */
/** The executor for `io`'s background call lists: the process's worker for the real calls, else in process through `io` (fault injection sees each call). */
export function callRunner(io: FsIo, lane: Lane): RunCalls {
  if (io !== realIo) return inProcessCalls(io, lane);
  shared ??= process.env.FSW === '0' ? inProcessCalls(realIo, lane) : workerCalls(inProcessCalls(realIo, lane));
  if (process.env.FSW_STATS) {
    const inner = shared;
    const st = { lists: 0, calls: 0, ms: 0, ops: {} as Record<string, number> };
    process.on('exit', () => console.error('lists', st.lists, 'calls/list', (st.calls / st.lists).toFixed(2), 'ms/list', (st.ms / st.lists).toFixed(3), JSON.stringify(st.ops)));
    return async (calls) => {
      st.lists++;
      st.calls += calls.length;
      for (const c of calls) st.ops[c.op] = (st.ops[c.op] ?? 0) + 1;
      const t = performance.now();
      const r = await inner(calls);
      st.ms += performance.now() - t;
      return r;
    };
  }
  return shared;
}
