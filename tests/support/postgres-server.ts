/**
 * A real PostgreSQL server for the tests and the bench: `initdb` + `pg_ctl` on a free port of
 * 127.0.0.1, in a temp directory, with trust authentication on loopback only. The binaries come
 * from Debian's `postgresql` package (`.ci/run` installs it). `initdb` refuses to run as root,
 * so as root the server runs as the `postgres` account the package creates.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where initdb, pg_ctl and postgres live, or undefined when PostgreSQL is not installed. */
export function findPostgresBin(): string | undefined {
  const fromPath = (process.env.PATH ?? '')
    .split(delimiter)
    .find((d) => d && existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
  if (fromPath) return fromPath;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

/**
 * The binaries, or a reason to skip. In CI (`CI=true`) a missing PostgreSQL is a hard failure:
 * a green run must mean the store was tested against a server.
 */
export function postgresAvailability(): { bin: string } | { skip: string } {
  const bin = findPostgresBin();
  if (bin) return { bin };
  const why =
    "PostgreSQL binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql/*/bin: install Debian's postgresql package (.ci/run does)";
  if (process.env.CI === 'true' || process.env.CI === '1') throw new Error(`CI: ${why}`);
  console.warn(`\n*** SKIPPING PostgreSQL tests: ${why} ***\n`);
  return { skip: why };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const address = srv.address();
      srv.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** uid/gid to run the server as: ourselves, or the `postgres` account when we are root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid))
    throw new Error('running as root needs the "postgres" account to run the server (initdb refuses root)');
  return { uid, gid };
}

/** Options of {@link startPostgres}. */
export interface StartOptions {
  /** fsync on (the realistic setting, and required for crash tests) or off (fast, for plain tests). @default false */
  readonly fsync?: boolean;
  readonly maxConnections?: number;
}

/** A running server. */
export interface PostgresServer {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust auth: no password). */
  readonly url: string;
  readonly dir: string;
  /** Stops the server the way a power cut would (`pg_ctl stop -m immediate`: no checkpoint, WAL replay at next start). */
  crash(): Promise<void>;
  /** Starts the server again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  destroy(): Promise<void>;
  /** The server log so far (for failure messages). */
  log(): string;
}

/** Starts a fresh server in a temp directory. */
export async function startPostgres(bin: string, options: StartOptions = {}): Promise<PostgresServer> {
  const user = serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-pg-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  if (user) chownSync(dir, user.uid, user.gid);
  const as = { ...(user ? { uid: user.uid, gid: user.gid } : {}), env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' }, cwd: dir };
  await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'], as);
  let port = 0;
  const serverOptions = (): string =>
    [
      `-p ${port}`,
      `-k ${dir}`,
      '-c listen_addresses=127.0.0.1',
      `-c fsync=${options.fsync ? 'on' : 'off'}`,
      `-c synchronous_commit=${options.fsync ? 'on' : 'off'}`,
      `-c full_page_writes=${options.fsync ? 'on' : 'off'}`,
      `-c max_connections=${options.maxConnections ?? 100}`,
      '-c shared_buffers=32MB',
    ].join(' ');
  const start = async (): Promise<void> => {
    await run(join(bin, 'pg_ctl'), ['-D', data, '-l', logFile, '-w', '-t', '60', '-o', serverOptions(), 'start'], as);
  };
  for (let attempt = 0; ; attempt++) {
    port = await freePort();
    try {
      await start();
      break;
    } catch (err) {
      if (attempt >= 4) throw new Error(`postgres did not start: ${String(err)}\n${safeRead(logFile)}`, { cause: err });
    }
  }
  const stop = async (mode: 'immediate' | 'fast'): Promise<void> => {
    await run(join(bin, 'pg_ctl'), ['-D', data, '-m', mode, '-w', 'stop'], as).catch(() => undefined);
  };
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    crash: () => stop('immediate'),
    start,
    async destroy() {
      await stop('immediate');
      rmSync(dir, { recursive: true, force: true });
    },
    log: () => safeRead(logFile),
  };
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
