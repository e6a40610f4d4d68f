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

/**
 * A spill in `root` for the queue named by `identity`, or undefined when this runtime has no
 * file system (the caller then keeps the queue in memory).
 */
export function fileSpill(root: string, identity: SpillIdentity): QueueSpill | undefined {
  const fs = nodeFs();
  const proc = nodeProcess();
  if (!fs || !proc) return undefined;
  const host = hostName(proc);
  const own = `${host}~${proc.pid}~${Math.random().toString(36).slice(2, 10)}`;
  let dir: Promise<string> | undefined;
  let ownReady: Promise<void> | undefined;
  let adopted = 0;

  const queueDir = (): Promise<string> =>
    (dir ??= (async () => {
      const hash = (await sha256Hex(JSON.stringify([identity.baseUrl, identity.owner, identity.repo, identity.branch, identity.basePath]))).slice(0, 16);
      const safe = (s: string): string => s.replace(/[^A-Za-z0-9_.-]/g, '_');
      // Created by the first queued write only: an adapter that never queues leaves no trace.
      return `${root.replace(/[\\/]+$/, '')}/${safe(identity.owner)}+${safe(identity.repo)}+${hash}`;
    })());

  /** fsyncs a folder so a rename or a new entry in it survives power loss (not possible on Windows: skipped there). */
  const syncDir = async (path: string): Promise<void> => {
    let handle: FileHandle | undefined;
    try {
      handle = await fs.open(path, 'r');
      await handle.sync();
    } catch (err) {
      if (!['EISDIR', 'EPERM', 'EACCES', 'EINVAL'].includes(codeOf(err) ?? '')) throw err;
    } finally {
      await handle?.close().catch(() => undefined);
    }
  };

  /** Removes an adopted folder once it holds no entry (a temp file a crash cut short is no entry). */
  const dropIfEmpty = async (path: string): Promise<void> => {
    try {
      const left = await fs.readdir(path);
      if (left.some((f) => !f.startsWith('.'))) return;
      for (const f of left) await fs.unlink(`${path}/${f}`);
      await fs.rmdir(path);
    } catch {
      // another adapter is cleaning it too, or it is gone: either way not ours to fail on
    }
  };

  /** A folder left by a process that is gone: same host, pid no longer running. */
  const orphaned = (name: string): boolean => {
    const [h, pid] = name.split('~');
    return h === host && Number(pid) !== proc.pid && Number.isInteger(Number(pid)) && !alive(proc, Number(pid));
  };

  return {
    durable: true,
    async load() {
      const d = await queueDir();
      const found: { name: string; bytes: Uint8Array }[] = [];
      let names: string[];
      try {
        names = await fs.readdir(d);
      } catch (err) {
        if (codeOf(err) === 'ENOENT') return found; // nothing was ever queued here
        throw err;
      }
      for (const name of names.sort()) {
        if (name.startsWith('.') || !orphaned(name)) continue;
        // Claim it: one rename, atomic, so two adapters opening at once cannot both push it.
        const claimed = `${own}.adopted-${++adopted}`;
        try {
          await fs.rename(`${d}/${name}`, `${d}/${claimed}`);
        } catch (err) {
          if (codeOf(err) === 'ENOENT') continue; // another adapter took it first
          throw err;
        }
        const files = (await fs.readdir(`${d}/${claimed}`)).filter((f) => f.endsWith('.json') && !f.startsWith('.')).sort();
        for (const f of files) found.push({ name: `${claimed}/${f}`, bytes: await fs.readFile(`${d}/${claimed}/${f}`) });
        if (files.length === 0) await dropIfEmpty(`${d}/${claimed}`);
      }
      return found;
    },
    async store(file, bytes) {
      const d = await queueDir();
      ownReady ??= (async () => {
        await fs.mkdir(`${d}/${own}`, { recursive: true });
        await syncDir(d);
        await syncDir(d.slice(0, d.lastIndexOf('/')));
      })();
      await ownReady;
      const tmp = `${d}/${own}/.${file}.tmp`;
      const handle = await fs.open(tmp, 'wx');
      try {
        await handle.writeFile(bytes);
        await handle.sync();
      } finally {
        await handle.close();
      }
      await fs.rename(tmp, `${d}/${own}/${file}`);
      await syncDir(`${d}/${own}`);
      return `${own}/${file}`;
    },
    async remove(name) {
      const d = await queueDir();
      try {
        await fs.unlink(`${d}/${name}`);
      } catch (err) {
        if (codeOf(err) !== 'ENOENT') throw err;
      }
      const folder = name.slice(0, name.lastIndexOf('/'));
      // An adopted folder goes once it is empty; our own stays while we live (close() removes it).
      if (folder !== own) await dropIfEmpty(`${d}/${folder}`);
    },
    async close() {
      if (ownReady === undefined) return;
      const d = await queueDir();
      await fs.rmdir(`${d}/${own}`).catch(() => undefined); // only when empty: a queue that could not be pushed stays
    },
  };
}
