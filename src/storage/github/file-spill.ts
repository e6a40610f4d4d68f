import { sha256Hex } from '../../codec/sha256.js';
import type { QueueSpill } from './emergency-queue.js';

/**
 * The emergency queue's default spill in Node: files beside the process, fsync'd before a
 * queued write is acknowledged, so a crash (SIGKILL, power loss) loses nothing the
 * adapter answered `pending: true` for.
 *
 * This module reaches Node's `fs` through `process.getBuiltinModule` (Node >= 20.16), never
 * a static `node:` import, so `savepoint/github` still loads in browsers and edge runtimes;
 * there {@link fileSpill} returns undefined and the queue stays in memory.
 *
 * Layout: `<root>/<owner>+<repo>+<hash>/` per repository, branch, API URL and basePath,
 * holding one folder per live adapter (`<host>~<pid>~<random>/<seq>.json`). An adapter that
 * opens finds the folders of processes that are gone (same host, pid no longer alive),
 * claims each with one atomic rename (two openers cannot both take it), and pushes its
 * writes first, in their order.
 */

interface FileHandle {
  writeFile(data: Uint8Array): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
}

interface NodeFsPromises {
  mkdir(path: string, options: { recursive: true }): Promise<string | undefined>;
  readdir(path: string): Promise<string[]>;
  readFile(path: string): Promise<Uint8Array>;
  open(path: string, flags: string): Promise<FileHandle>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
}

interface NodeProcess {
  readonly pid: number;
  cwd(): string;
  kill(pid: number, signal: number): boolean;
  getBuiltinModule?(id: string): unknown;
}

function nodeProcess(): NodeProcess | undefined {
  const proc = (globalThis as { process?: Partial<NodeProcess> }).process;
  return typeof proc?.getBuiltinModule === 'function' && typeof proc.cwd === 'function' ? (proc as NodeProcess) : undefined;
}

/** Node's fs promises API, or undefined outside Node (browsers, edge runtimes, Node < 20.16). */
function nodeFs(): NodeFsPromises | undefined {
  try {
    return (nodeProcess()?.getBuiltinModule?.('fs') as { promises?: NodeFsPromises } | undefined)?.promises;
  } catch {
    return undefined;
  }
}

/** The default spill folder: `.savepoint/github-queue` in the working directory, or undefined outside Node. */
export function defaultSpillRoot(): string | undefined {
  const proc = nodeProcess();
  return proc && nodeFs() ? `${proc.cwd()}/.savepoint/github-queue` : undefined;
}

const codeOf = (err: unknown): string | undefined => (err as { code?: unknown } | null)?.code as string | undefined;

function alive(proc: NodeProcess, pid: number): boolean {
  try {
    proc.kill(pid, 0);
    return true;
  } catch (err) {
    return codeOf(err) === 'EPERM';
  }
}

function hostName(proc: NodeProcess): string {
  try {
    const os = proc.getBuiltinModule?.('os') as { hostname?: () => string } | undefined;
    return (os?.hostname?.() ?? 'host').replace(/[^A-Za-z0-9.-]/g, '_');
  } catch {
    return 'host';
  }
}

/** What names a queue: entries of one repository, branch, API and basePath never mix with another's. */
export interface SpillIdentity {
  readonly baseUrl: string;
  readonly owner: string;
  readonly repo: string;
  readonly branch: string;
  readonly basePath: string;
}

/** What one file spill keeps: Node's fs, this process, the queue's folder and this adapter's own folder in it. */
interface FileSpillState {
  readonly fs: NodeFsPromises;
  readonly proc: NodeProcess;
  readonly root: string;
  readonly identity: SpillIdentity;
  readonly host: string;
  /** This adapter's folder name: `<host>~<pid>~<random>`. */
  readonly own: string;
  /** The queue's folder, once named. */
  dir: Promise<string> | undefined;
  /** This adapter's folder, once created (by the first queued write). */
  ownReady: Promise<void> | undefined;
  /** Folders of gone processes claimed so far (numbers their new names). */
  adopted: number;
}

/**
 * A spill in `root` for the queue named by `identity`, or undefined when this runtime has no
 * file system (the caller then keeps the queue in memory).
 */
export function fileSpill(root: string, identity: SpillIdentity): QueueSpill | undefined {
  const fs = nodeFs();
  const proc = nodeProcess();
  if (!fs || !proc) return undefined;
  const host = hostName(proc);
  const s: FileSpillState = {
    fs,
    proc,
    root,
    identity,
    host,
    own: `${host}~${proc.pid}~${Math.random().toString(36).slice(2, 10)}`,
    dir: undefined,
    ownReady: undefined,
    adopted: 0,
  };
  return {
    durable: true,
    load: () => loadOrphaned(s),
    store: (file, bytes) => storeEntry(s, file, bytes),
    remove: (name) => removeEntry(s, name),
    close: () => closeOwn(s),
  };
}

function queueDir(s: FileSpillState): Promise<string> {
  return (s.dir ??= (async () => {
    const { identity } = s;
    const hash = (
      await sha256Hex(JSON.stringify([identity.baseUrl, identity.owner, identity.repo, identity.branch, identity.basePath]))
    ).slice(0, 16);
    const safe = (v: string): string => v.replace(/[^A-Za-z0-9_.-]/g, '_');
    // Created by the first queued write only: an adapter that never queues leaves no trace.
    return `${s.root.replace(/[\\/]+$/, '')}/${safe(identity.owner)}+${safe(identity.repo)}+${hash}`;
  })());
}

/** fsyncs a folder so a rename or a new entry in it survives power loss (not possible on Windows: skipped there). */
async function syncDir(s: FileSpillState, path: string): Promise<void> {
  let handle: FileHandle | undefined;
  try {
    handle = await s.fs.open(path, 'r');
    await handle.sync();
  } catch (err) {
    if (!['EISDIR', 'EPERM', 'EACCES', 'EINVAL'].includes(codeOf(err) ?? '')) throw err;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Removes an adopted folder once it holds no entry (a temp file a crash cut short is no entry). */
async function dropIfEmpty(s: FileSpillState, path: string): Promise<void> {
  try {
    const left = await s.fs.readdir(path);
    if (left.some((f) => !f.startsWith('.'))) return;
    for (const f of left) await s.fs.unlink(`${path}/${f}`);
    await s.fs.rmdir(path);
  } catch {
    // another adapter is cleaning it too, or it is gone: either way not ours to fail on
  }
}

/** A folder left by a process that is gone: same host, pid no longer running. */
function orphaned(s: FileSpillState, name: string): boolean {
  const [h, pid] = name.split('~');
  return h === s.host && Number(pid) !== s.proc.pid && Number.isInteger(Number(pid)) && !alive(s.proc, Number(pid));
}

/** `load()`: claims the folders of gone processes and reads their entries, in order. */
async function loadOrphaned(s: FileSpillState): Promise<{ name: string; bytes: Uint8Array }[]> {
  const { fs } = s;
  const d = await queueDir(s);
  const found: { name: string; bytes: Uint8Array }[] = [];
  let names: string[];
  try {
    names = await fs.readdir(d);
  } catch (err) {
    if (codeOf(err) === 'ENOENT') return found; // nothing was ever queued here
    throw err;
  }
  for (const name of names.sort()) {
    if (name.startsWith('.') || !orphaned(s, name)) continue;
    // Claim it: one rename, atomic, so two adapters opening at once cannot both push it.
    const claimed = `${s.own}.adopted-${++s.adopted}`;
    try {
      await fs.rename(`${d}/${name}`, `${d}/${claimed}`);
    } catch (err) {
      if (codeOf(err) === 'ENOENT') continue; // another adapter took it first
      throw err;
    }
    const files = (await fs.readdir(`${d}/${claimed}`)).filter((f) => f.endsWith('.json') && !f.startsWith('.')).sort();
    for (const f of files) found.push({ name: `${claimed}/${f}`, bytes: await fs.readFile(`${d}/${claimed}/${f}`) });
    if (files.length === 0) await dropIfEmpty(s, `${d}/${claimed}`);
  }
  return found;
}

/** `store()`: a new entry in this adapter's folder, fsync'd (file, then folder) before it resolves. */
async function storeEntry(s: FileSpillState, file: string, bytes: Uint8Array): Promise<string> {
  const { fs, own } = s;
  const d = await queueDir(s);
  s.ownReady ??= (async () => {
    await fs.mkdir(`${d}/${own}`, { recursive: true });
    await syncDir(s, d);
    await syncDir(s, d.slice(0, d.lastIndexOf('/')));
  })();
  await s.ownReady;
  const tmp = `${d}/${own}/.${file}.tmp`;
  const handle = await fs.open(tmp, 'wx');
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await fs.rename(tmp, `${d}/${own}/${file}`);
  await syncDir(s, `${d}/${own}`);
  return `${own}/${file}`;
}

async function removeEntry(s: FileSpillState, name: string): Promise<void> {
  const d = await queueDir(s);
  try {
    await s.fs.unlink(`${d}/${name}`);
  } catch (err) {
    if (codeOf(err) !== 'ENOENT') throw err;
  }
  const folder = name.slice(0, name.lastIndexOf('/'));
  // An adopted folder goes once it is empty; our own stays while we live (close() removes it).
  if (folder !== s.own) await dropIfEmpty(s, `${d}/${folder}`);
}

async function closeOwn(s: FileSpillState): Promise<void> {
  if (s.ownReady === undefined) return;
  const d = await queueDir(s);
  await s.fs.rmdir(`${d}/${s.own}`).catch(() => undefined); // only when empty: a queue that could not be pushed stays
}
