/**
 * A real PostgreSQL server for the tests and the bench: `initdb` + `pg_ctl` on a free port of
 * 127.0.0.1, in a temp directory, with trust authentication on loopback only. The binaries come
 * from Debian's `postgresql` package (`.ci/run` installs it). `initdb` refuses to run as root,
 * so as root the server runs as the `postgres` account the package creates.
 */
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
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
  const as: RunAs = { ...(user ? { uid: user.uid, gid: user.gid } : {}), env: { ...process.env, LC_ALL: 'C', TZ: 'UTC' }, cwd: dir };
  await initialisedData(bin, data, user, as);
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

/** How {@link startPostgres} runs a program: as the server's account, in its directory. */
interface RunAs {
  readonly uid?: number;
  readonly gid?: number;
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
}

const INITDB_ARGS = ['-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'];

/**
 * Makes `data` a fresh cluster: a copy of the one `initdb` makes, which runs once per machine and
 * temp directory (a template beside the servers', named by the binaries and arguments) rather
 * than once per server. A suite starts two dozen servers; initdb costs about 2 s of CPU each, a
 * copy a third of that. The template is made under a name of its own and renamed into place, so
 * a server never copies half of one; two files making it at once both succeed, and one rename wins.
 */
async function initialisedData(bin: string, data: string, user: { uid: number; gid: number } | undefined, as: RunAs): Promise<void> {
  const key = createHash('sha256')
    .update(JSON.stringify([bin, INITDB_ARGS, user?.uid ?? process.getuid?.()]))
    .digest('hex')
    .slice(0, 16);
  const template = join(tmpdir(), `savepoint-pg-template-${key}`);
  if (!existsSync(join(template, 'PG_VERSION'))) {
    const making = mkdtempSync(`${template}-making-`);
    if (user) chownSync(making, user.uid, user.gid);
    try {
      await run(join(bin, 'initdb'), ['-D', join(making, 'data'), ...INITDB_ARGS], { ...as, cwd: making });
      renameSync(join(making, 'data'), template);
    } catch (err) {
      if (!existsSync(join(template, 'PG_VERSION'))) throw err;
    } finally {
      rmSync(making, { recursive: true, force: true });
    }
  }
  // `cp -a` keeps the owner (the server's account) and the 0700 mode the server insists on.
  await run('cp', ['-a', template, data], as);
}

function safeRead(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}
