import { execFileSync, spawnSync } from 'node:child_process';
import fs, {
  linkSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import fsp from 'node:fs/promises';
import { join, relative } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isCheckpointError, listAll, type CheckpointError, type Clock } from 'savepoint';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { acquireLock, assertHeld, inspectLock, releaseLock } from '../../../src/storage/fs/lock.js';
import { removeStale, takeOverStale } from '../../../src/storage/fs/take-over.js';
import { HOST_TAG } from '../../../src/storage/fs/names.js';
import { scratchFolder } from '../../support/scratch.js';

const b = (s: string): Uint8Array => utf8Encode(s);
const text = (u: Uint8Array | undefined): string | undefined => (u ? Buffer.from(u).toString('utf8') : undefined);
const INTERNAL = '.sp\\';

const scratch = scratchFolder('fs-test');
let counter = 0;
/** A fresh sandbox: `<sandbox>/store` for the store, `<sandbox>/outside` with a secret next to it. */
function sandbox(): { base: string; dir: string; outside: string } {
  const base = join(scratch, `s${counter++}`);
  const dir = join(base, 'store');
  const outside = join(base, 'outside');
  mkdirSync(dir, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'secret');
  return { base, dir, outside };
}

const open: FsStorage[] = [];
function store(dir: string, options: Omit<Parameters<typeof fsStorage>[0], 'dir'> = {}): FsStorage {
  // Direct mode (the journal, fsStorage's default, has tests of its own: journal*.test.ts).
  const s = fsStorage({ dir, journal: false, ...options });
  open.push(s);
  return s;
}
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((s) => s.close()));
});

/** Every path below `root`, without following symlinks: `rel -> 'dir' | 'link:<target>' | 'file:<content>'`. */
function tree(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (abs: string): void => {
    for (const name of readdirSync(abs)) {
      const p = join(abs, name);
      const rel = relative(root, p);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out[rel] = `link:${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[rel] = 'dir';
        walk(p);
      } else out[rel] = `file:${readFileSync(p).toString('base64')}`;
    }
  };
  walk(root);
  return out;
}

const internalFiles = (root: string): string[] => Object.keys(tree(root)).filter((p) => p.split('/').at(-1)!.startsWith(INTERNAL));

/** A pid that certainly belongs to no process any more. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '']).pid!;
}
let tags = 0;
const tag = (host: string, pid: number, atMs: number): string =>
  `${host}-${pid}-${Math.floor(atMs).toString(36)}-${(tags++).toString(16).padStart(12, '0')}`;
/** A temp file of process `pid` in `dir` and, when `lock` names one, the lock it holds (a hard link to it). */
function plantHolder(dir: string, pid: number, lock?: string, atMs = Date.now()): string {
  const path = join(dir, `${INTERNAL}tmp-${tag(HOST_TAG, pid, atMs)}`);
  writeFileSync(path, 'partial');
  if (lock) linkSync(path, join(dir, `${INTERNAL}lock-${lock}`));
  return path;
}

/** A clock whose timers fire at once and advance its time: waits cost no real time. */
function virtualClock(onSleep?: (n: number) => void): Clock {
  let now = Date.now();
  let sleeps = 0;
  return {
    now: () => now,
    setTimeout(cb, ms) {
      now += ms;
      onSleep?.(++sleeps);
      return setImmediate(cb);
    },
    clearTimeout: (h) => clearImmediate(h as NodeJS.Immediate),
  };
}

describe('fsStorage on disk', () => {
  it('stores each key as the file dir/<key>, byte for byte, and reads files other tools wrote', async () => {
    const { dir } = sandbox();
    const s = store(dir);
    const { version } = await s.put('checkpoints/run-1/latest.json', b('{"a":1}'));
    expect(readFileSync(join(dir, 'checkpoints/run-1/latest.json'), 'utf8')).toBe('{"a":1}');
    // The version is the stat any process can compute: <mtime ns>.<inode>.<size>.
    const st = statSync(join(dir, 'checkpoints/run-1/latest.json'), { bigint: true });
    expect(version).toBe(`${st.mtimeNs}.${st.ino}.${st.size}`);

    writeFileSync(join(dir, 'checkpoints/run-1/notes.md'), 'by hand');
    expect(text((await s.get('checkpoints/run-1/notes.md'))?.bytes)).toBe('by hand');
    expect((await listAll(s, '')).map((e) => e.key)).toEqual(['checkpoints/run-1/latest.json', 'checkpoints/run-1/notes.md']);
  });

  it('a directory, FIFO or symlink at a key path is not a key: get and put refuse it with a reason', async () => {
    const { dir } = sandbox();
    mkdirSync(join(dir, 'adir'));
    execFileSync('mkfifo', [join(dir, 'fifo')]);
    const s = store(dir);
    // A reader must learn that latest.json was replaced by a directory, not "no snapshot".
    const occupied = { reasonCode: 'checkpoint_key_invalid', details: { reason: 'path_occupied' } };
    await expect(s.get('adir')).rejects.toMatchObject(occupied);
    await expect(s.get('fifo')).rejects.toMatchObject(occupied); // and does not hang on the FIFO
    expect(await listAll(s, '')).toEqual([]);
    await expect(s.put('adir', b('x'))).rejects.toMatchObject({
      reasonCode: 'checkpoint_key_invalid',
      details: { reason: 'path_occupied' },
    });
    await expect(s.put('adir', b('x'), { ifAbsent: true })).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    await expect(s.put('fifo', b('x'))).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    expect(await s.delete('adir')).toBe(false);
    expect(lstatSync(join(dir, 'adir')).isDirectory()).toBe(true);
  });

  it('removes directories a delete left empty, up to but never including the root', async () => {
    const { dir } = sandbox();
    const s = store(dir);
    await s.put('a/b/c/k1', b('1'));
    await s.put('a/k2', b('2'));
    await s.delete('a/b/c/k1');
    const keys = (): Record<string, string> => Object.fromEntries(Object.entries(tree(dir)).filter(([p]) => !p.startsWith(INTERNAL)));
    expect(keys()).toEqual({ a: 'dir', 'a/k2': `file:${Buffer.from('2').toString('base64')}` });
    await s.delete('a/k2');
    expect(keys()).toEqual({});
    await s.close();
    expect(tree(dir)).toEqual({}); // and the owner file goes with close()
    expect(statSync(dir).isDirectory()).toBe(true);
  });

  it('creates files with fileMode (minus the umask)', async () => {
    const { dir } = sandbox();
    const s = store(dir, { fileMode: 0o600 });
    await s.put('k', b('x'));
    await s.put('k2', b('x'), { ifAbsent: true });
    expect(statSync(join(dir, 'k')).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, 'k2')).mode & 0o777).toBe(0o600);
  });

  it('opens lazily, creates the directory, and reports what it cleaned', async () => {
    const { base } = sandbox();
    const dir = join(base, 'new', 'deeper');
    const s = store(dir);
    expect(() => statSync(dir)).toThrow(); // the factory has no side effects
    const report = await s.ready();
    expect(report).toEqual({
      root: dir,
      containment: process.platform === 'linux' ? 'dir-fd' : 'path',
      layout: 'files',
      removedTempFiles: 0,
      removedLocks: 0,
    });
    expect(statSync(dir).isDirectory()).toBe(true);
  });

  it('refuses bad options with checkpoint_config_invalid, a missing dir with create:false, and Windows', async () => {
    for (const bad of [{ dir: '' }, { dir: 'x', staleAfterMs: 0 }, { dir: 'x', lockTimeoutMs: -1 }, { dir: 'x', fileMode: 0o10000 }]) {
      expect(() => fsStorage(bad)).toThrow(expect.objectContaining({ reasonCode: 'checkpoint_config_invalid' }));
    }
    const { base } = sandbox();
    const s = store(join(base, 'missing'), { create: false });
    await expect(s.get('k')).rejects.toMatchObject({ reasonCode: 'checkpoint_storage_unavailable' });
    await expect(s.ready()).rejects.toMatchObject({ reasonCode: 'checkpoint_storage_unavailable' });

    const platform = Object.getOwnPropertyDescriptor(process, 'platform')!;
    Object.defineProperty(process, 'platform', { value: 'win32' });
    try {
      await expect(fsStorage({ dir: base }).ready()).rejects.toMatchObject({ reasonCode: 'checkpoint_unsupported' });
    } finally {
      Object.defineProperty(process, 'platform', platform);
    }
  });

  it("a key's versions strictly increase, even when the file system reuses inode numbers", async () => {
    const { dir } = sandbox();
    const s = store(dir);
    const parts: { mtime: bigint; ino: string }[] = [];
    for (let i = 0; i < 40; i++) {
      const { version } = await s.put('k', b(i % 2 ? 'same-size-a' : 'same-size-b'));
      const [mtime, ino] = version.split('.');
      parts.push({ mtime: BigInt(mtime!), ino: ino! });
    }
    for (let i = 1; i < parts.length; i++) expect(parts[i]!.mtime).toBeGreaterThan(parts[i - 1]!.mtime);
    // On ext4 the two files of a replace swap inode numbers back and forth: without the
    // explicit mtime, a write within one timestamp tick would repeat an older version.
    const inodes = new Set(parts.map((p) => p.ino));
    expect(inodes.size).toBeLessThanOrEqual(parts.length);
  });
});

describe('containment', () => {
  it.runIf(process.platform === 'linux')(
    'names files through the descriptors of /proc/<pid>/fd, not through the /proc/self link',
    async () => {
      const { dir } = sandbox();
      const s = store(dir);
      await s.put('a/b/k', b('v'));
      const named: string[] = [];
      const openSync = fs.openSync.bind(fs);
      vi.spyOn(fs, 'openSync').mockImplementation(((path: fs.PathLike, ...rest: unknown[]) => {
        named.push(String(path));
        return (openSync as (...a: unknown[]) => number)(path, ...rest);
      }) as typeof fs.openSync);
      expect(text((await s.get('a/b/k'))?.bytes)).toBe('v');
      await s.close();
      // The number /proc/self links to: following that link at every call cost about as much as the rest of the lookup.
      const pid = readlinkSync('/proc/self');
      expect(named.length).toBeGreaterThanOrEqual(3);
      for (const path of named) expect(path).toMatch(new RegExp(`^/proc/${pid}/fd/\\d+/`));
    },
  );

  it('a symlink planted inside dir pointing outside is refused for read, write and delete', async () => {
    const { dir, outside } = sandbox();
    symlinkSync(outside, join(dir, 'link'));
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'file-link'));
    const before = tree(join(dir, '..'));
    const s = store(dir);
    const refused = { reasonCode: 'checkpoint_key_invalid', details: { reason: 'symlink' } };
    await expect(s.get('link/secret.txt')).rejects.toMatchObject(refused);
    await expect(s.get('file-link')).rejects.toMatchObject(refused);
    await expect(s.put('link/secret.txt', b('pwned'))).rejects.toMatchObject(refused);
    await expect(s.put('link/new.txt', b('pwned'), { ifAbsent: true })).rejects.toMatchObject(refused);
    await expect(s.put('link/deeper/new.txt', b('pwned'))).rejects.toMatchObject(refused);
    await expect(s.put('file-link', b('pwned'))).rejects.toMatchObject(refused);
    await expect(s.put('file-link', b('pwned'), { ifAbsent: true })).rejects.toMatchObject(refused);
    await expect(s.delete('link/secret.txt')).rejects.toMatchObject(refused);
    await expect(s.delete('file-link')).rejects.toMatchObject(refused);
    await expect(listAll(s, 'link/')).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    expect(await listAll(s, '')).toEqual([]);
    await s.close();
    expect(tree(join(dir, '..'))).toEqual(before);
  });

  it('a symlink pointing inside dir is not followed either (two keys must never be one file)', async () => {
    const { dir } = sandbox();
    const s = store(dir);
    await s.put('real/k', b('v'));
    symlinkSync(join(dir, 'real'), join(dir, 'alias'));
    await expect(s.get('alias/k')).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    await expect(s.put('alias/k', b('w'))).rejects.toMatchObject({ reasonCode: 'checkpoint_key_invalid' });
    expect((await listAll(s, '')).map((e) => e.key)).toEqual(['real/k']);
    expect(text((await s.get('real/k'))?.bytes)).toBe('v');
  });

  it('no key, hostile or not, ever touches a path outside dir (property)', async () => {
    const { base, dir, outside } = sandbox();
    symlinkSync(outside, join(dir, 'link'));
    symlinkSync(join(outside, 'secret.txt'), join(dir, 'file-link'));
    symlinkSync('..', join(dir, 'up'));
    const outsideBefore = tree(outside);
    const siblingsBefore = readdirSync(base).sort();
    const s = store(dir);
    const segment = fc.oneof(
      fc.constantFrom(
        '..',
        '.',
        '',
        '...',
        'a',
        'b',
        'link',
        'file-link',
        'up',
        'outside',
        'secret.txt',
        '..\\..',
        'C:',
        '%2e%2e',
        '~',
        ' ',
        'é',
        INTERNAL + 'tmp-x',
      ),
      fc.string({ unit: fc.constantFrom('a', '.', '/', '\\', '\u0000', ':', '\n', 'é', ' ', '~'), maxLength: 6 }),
    );
    const key = fc.oneof(
      fc.array(segment, { minLength: 1, maxLength: 5 }).map((parts) => parts.join('/')),
      fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`),
      fc.constantFrom(
        join(outside, 'evil'),
        '../outside/evil',
        'link/evil',
        'up/outside/evil',
        'up/store/../outside/evil',
        'x'.repeat(1100),
      ),
      fc.string({ maxLength: 12 }),
    );
    const accepted = new Set<string>();
    const op = fc.constantFrom('put', 'create', 'get', 'list', 'delete');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(op, key), { minLength: 1, maxLength: 8 }), async (calls) => {
        for (const [i, [what, k]] of calls.entries()) {
          try {
            if (what === 'put' || what === 'create') {
              await s.put(k, b(`v${i}`), what === 'create' ? { ifAbsent: true } : {});
              accepted.add(k);
            } else if (what === 'get') {
              expect(text((await s.get(k))?.bytes)).not.toBe('secret');
            } else if (what === 'list') {
              for (const e of await listAll(s, k)) expect(text((await s.get(e.key))?.bytes)).not.toBe('secret');
            } else await s.delete(k);
          } catch (err) {
            // Refusals and conflicts are fine; any other kind of failure is not.
            expect(isCheckpointError(err), `${what} ${JSON.stringify(k)}: ${String(err)}`).toBe(true);
          }
          // Checked after every call: a write outside must not hide behind a later delete.
          expect(tree(outside)).toEqual(outsideBefore);
          expect(readdirSync(base).sort()).toEqual(siblingsBefore);
        }
        // Everything left in the store is a plain file or directory, or one of the planted links.
        for (const [rel, what] of Object.entries(tree(dir))) {
          if (what.startsWith('link:')) expect(['link', 'file-link', 'up']).toContain(rel);
        }
      }),
      { numRuns: 80 },
    );
    expect(accepted.size).toBeGreaterThan(10); // the property did exercise real writes
    expect(readlinkSync(join(dir, 'link'))).toBe(outside);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('secret');
  });
});

describe('temp and lock files', () => {
  it('are never listed while present, and open removes only those whose owner is gone or too old', async () => {
    const { dir } = sandbox();
    const now = Date.now();
    const dead = deadPid();
    const live = process.ppid;
    const old = now - 2 * 60_000;
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'k'), 'kept key');
    const plant = {
      deadTemp: join(dir, `${INTERNAL}tmp-${tag(HOST_TAG, dead, now)}`),
      liveTemp: join(dir, 'sub', `${INTERNAL}tmp-${tag(HOST_TAG, live, now)}`),
      oldLiveTemp: join(dir, 'sub', `${INTERNAL}tmp-${tag(HOST_TAG, live, old)}`),
      otherHostTemp: join(dir, `${INTERNAL}tmp-${tag('ffffffff', dead, now)}`),
      deadBroken: join(dir, `${INTERNAL}dead-${tag(HOST_TAG, dead, now)}`),
      unknown: join(dir, `${INTERNAL}something-else`),
    };
    for (const p of Object.values(plant)) writeFileSync(p, 'partial');
    const deadHolder = plantHolder(join(dir, 'sub'), dead, 'k');
    const liveHolder = plantHolder(dir, live, 'live');

    const untouched = store(dir, { cleanupOnOpen: false });
    expect((await listAll(untouched, '')).map((e) => e.key)).toEqual(['sub/k']);
    expect(internalFiles(dir)).toHaveLength(10);

    const report = await store(dir).ready();
    expect(report).toMatchObject({ removedTempFiles: 4, removedLocks: 1 });
    expect(internalFiles(dir).sort()).toEqual(
      [
        relative(dir, plant.liveTemp),
        relative(dir, plant.otherHostTemp),
        relative(dir, plant.unknown),
        `${INTERNAL}lock-live`,
        relative(dir, liveHolder),
      ].sort(),
    );
    expect(() => statSync(deadHolder)).toThrow();
  });

  it('a put that fails part-way leaves no temp or lock file behind', async () => {
    const { dir } = sandbox();
    const s = store(dir);
    await s.put('k', b('old'));
    await expect(s.put('k', b('x'), { ifVersion: 'stale' })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    await expect(s.put('k', b('x'), { ifAbsent: true })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    await expect(s.delete('k', { ifVersion: 'stale' })).rejects.toMatchObject({ reasonCode: 'checkpoint_conflict' });
    await s.close();
    expect(internalFiles(dir)).toEqual([]);
  });
});

describe('lock files', () => {
  it('a lock left by a dead process is broken at once', async () => {
    const { dir } = sandbox();
    plantHolder(dir, deadPid(), 'k');
    let slept = 0;
    const s = store(dir, { cleanupOnOpen: false, clock: virtualClock(() => slept++) });
    await s.put('k', b('v'));
    expect(slept).toBe(0);
    await s.close(); // waits for the lock release that trails the acknowledgement
    expect(internalFiles(dir).filter((n) => n.includes('lock'))).toEqual([]);
  });

  it('a lock whose temp file is gone (holder committed, or died and was swept) is broken at once', async () => {
    const { dir } = sandbox();
    rmSync(plantHolder(dir, process.ppid, 'k'));
    let slept = 0;
    const s = store(dir, { cleanupOnOpen: false, clock: virtualClock(() => slept++) });
    await s.put('k', b('v'));
    expect(slept).toBe(0);
    expect(text((await s.get('k'))?.bytes)).toBe('v');
  });

  it('a lock older than staleAfterMs is broken even though its process lives', async () => {
    const { dir } = sandbox();
    plantHolder(dir, process.ppid, 'k', Date.now() - 61_000);
    const s = store(dir, { cleanupOnOpen: false, clock: virtualClock() });
    await s.put('k', b('v'));
    expect(text((await s.get('k'))?.bytes)).toBe('v');
  });

  it("a live holder's fresh lock makes writers wait, then fail with lock_timeout, writing nothing", async () => {
    const { dir } = sandbox();
    writeFileSync(join(dir, 'k'), 'old');
    const holder = plantHolder(dir, process.ppid, 'k');
    const s = store(dir, { cleanupOnOpen: false, clock: virtualClock(), lockTimeoutMs: 5_000 });
    const err = await s.put('k', b('new')).catch((e: unknown) => e);
    expect(err).toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
      details: { reason: 'lock_timeout', holderPid: process.ppid },
    });
    await expect(s.delete('k')).rejects.toMatchObject({ details: { reason: 'lock_timeout' } });
    expect(readFileSync(join(dir, 'k'), 'utf8')).toBe('old');
    await s.close();
    expect(internalFiles(dir).sort()).toEqual([`${INTERNAL}lock-k`, relative(dir, holder)].sort()); // the holder's files are left alone
  });

  it('a waiting writer proceeds as soon as the holder releases', async () => {
    const { dir } = sandbox();
    plantHolder(dir, process.ppid, 'k');
    const clock = virtualClock((n) => n === 5 && rmSync(join(dir, `${INTERNAL}lock-k`)));
    const s = store(dir, { cleanupOnOpen: false, clock });
    await s.put('k', b('after'));
    expect(readFileSync(join(dir, 'k'), 'utf8')).toBe('after');
  });

  it('two instances in one process exclude each other through the lock file', async () => {
    const { dir } = sandbox();
    const a = store(dir);
    const c = store(dir);
    let { version } = await a.put('k', b('base'));
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled([
        a.put('k', b(`a${round}`), { ifVersion: version }),
        c.put('k', b(`c${round}`), { ifVersion: version }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      version = (await a.get('k'))!.version;
    }
  });

  it('removing a stale lock, or taking it over, leaves a live lock that replaced it meanwhile', async () => {
    const { dir } = sandbox();
    const path = join(dir, `${INTERNAL}lock-k`);
    const timing = { clock: virtualClock(), staleAfterMs: 60_000, lockTimeoutMs: 1000 };
    const inspect = () => inspectLock(path, dir, timing);
    // The sweep or a waiter judged an earlier lock (inode 1) stale; by the time it acts, a live one is there.
    const live = plantHolder(dir, process.ppid, 'k');
    expect(await removeStale(path, 1n, { inspect, claimStaleMs: 200 })).toBe(false);
    const waiter = plantHolder(dir, process.pid);
    const token = {
      path: waiter,
      ino: statSync(waiter, { bigint: true }).ino,
      owner: { host: HOST_TAG, pid: process.pid, atMs: Date.now(), tag: '' },
    };
    expect(await takeOverStale(path, dir, token, 1n, { inspect, claimStaleMs: 200 })).toBe(false);
    expect(statSync(path).ino).toBe(statSync(live).ino);
    expect(internalFiles(dir).sort()).toEqual([`${INTERNAL}lock-k`, relative(dir, live), relative(dir, waiter)].sort());
  });

  it('a holder whose lock was broken while it stalled aborts instead of committing, and never removes the new lock', async () => {
    const { dir } = sandbox();
    const path = join(dir, `${INTERNAL}lock-k`);
    let now = Date.now();
    const clock: Clock = { now: () => now, setTimeout: (cb) => setImmediate(cb), clearTimeout: () => undefined };
    const timing = { clock, staleAfterMs: 60_000, lockTimeoutMs: 1000 };
    const mine = plantHolder(dir, process.pid, undefined, now);
    const token = {
      path: mine,
      ino: statSync(mine, { bigint: true }).ino,
      owner: { host: HOST_TAG, pid: process.pid, atMs: now, tag: '' },
    };
    const held = await acquireLock(path, dir, 'k', token, timing);
    await assertHeld(held, 'k', timing); // young: nothing to check
    now += 61_000; // the holder stalls past the stale bound; another process breaks the lock and takes it
    rmSync(path);
    const thief = plantHolder(dir, process.ppid, 'k');
    await expect(assertHeld(held, 'k', timing)).rejects.toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
      details: { key: 'k', reason: 'lock_lost' },
    });
    await releaseLock(held, timing);
    expect(statSync(path).ino).toBe(statSync(thief).ino);
    expect(internalFiles(dir).sort()).toEqual([`${INTERNAL}lock-k`, relative(dir, mine), relative(dir, thief)].sort());
  });
});

describe('durability: the order of file-system calls', () => {
  type Event = readonly [string, string];
  let log: Event[];
  let root: string;

  beforeEach(() => {
    log = [];
    const names = new Map<number, string>();
    const name = (p: string): string => {
      // Names through a directory descriptor (/proc/<pid>/fd/<fd>/x) stand for that directory's x.
      const viaFd = /^\/proc\/(?:self|\d+)\/fd\/(\d+)(\/.*)?$/.exec(p);
      if (viaFd) p = `${readlinkSync(`/proc/self/fd/${viaFd[1]}`)}${viaFd[2] ?? ''}`;
      const rel = relative(root, p) || '.';
      return rel.split('/').at(-1)!.startsWith(INTERNAL) ? rel.replace(/\.sp\\(tmp|lock|owner|dead)[^/]*$/, '<$1>') : rel;
    };
    type Cb = (err: NodeJS.ErrnoException | null, value?: unknown) => void;
    const realOpen = fs.open.bind(fs) as (...a: unknown[]) => void;
    vi.spyOn(fs, 'open').mockImplementation(((path: string, flags: number, mode: number, cb: Cb) => {
      realOpen(path, flags, mode, (err: NodeJS.ErrnoException | null, fd: number) => {
        if (!err) {
          names.set(fd, name(String(path)));
          log.push(['open', name(String(path))]);
        }
        cb(err, fd);
      });
    }) as never);
    const realOpenSync = fs.openSync.bind(fs) as (...a: unknown[]) => number;
    vi.spyOn(fs, 'openSync').mockImplementation(((path: string, ...rest: unknown[]) => {
      const fd = realOpenSync(path, ...rest);
      names.set(fd, name(String(path)));
      log.push(['open', name(String(path))]);
      return fd;
    }) as never);
    for (const method of ['write', 'fsync'] as const) {
      const original = fs[method].bind(fs) as (...a: unknown[]) => void;
      vi.spyOn(fs, method).mockImplementation(((fd: number, ...rest: unknown[]) => {
        log.push([method, names.get(fd) ?? '?']);
        original(fd, ...rest);
      }) as never);
    }
    for (const method of ['rename', 'link'] as const) {
      const original = fs[method].bind(fs) as (...a: unknown[]) => void;
      vi.spyOn(fs, method).mockImplementation(((from: string, to: string, cb: Cb) => {
        log.push([method, `${name(String(from))} -> ${name(String(to))}`]);
        original(from, to, cb);
      }) as never);
    }
    for (const method of ['linkSync', 'unlinkSync'] as const) {
      const original = fs[method].bind(fs) as (...a: unknown[]) => void;
      vi.spyOn(fs, method).mockImplementation(((...args: unknown[]) => {
        log.push([method.replace('Sync', ''), args.map((a) => name(String(a))).join(' -> ')]);
        return original(...args);
      }) as never);
    }
    const realUnlink = fsp.unlink.bind(fsp);
    vi.spyOn(fsp, 'unlink').mockImplementation(async (path) => {
      log.push(['unlink', name(String(path))]);
      return realUnlink(path);
    });
  });

  const at = (event: string, what: string): number => {
    const i = log.findIndex(([e, w]) => e === event && w === what);
    expect(i, `${event} ${what} in ${JSON.stringify(log)}`).toBeGreaterThanOrEqual(0);
    return i;
  };

  it('replace: temp → write → fsync → rename → fsync dir, the check and rename under the lock', async () => {
    const { dir } = sandbox();
    root = dir;
    const s = store(dir);
    await s.put('run/latest.json', b('v1'));
    log.length = 0;
    await s.put('run/latest.json', b('v2'));
    const acknowledged = log.length;
    await s.close(); // closing files and releasing the lock trail the acknowledgement; close() waits for them
    const write = at('write', 'run/<tmp>');
    const fsync = at('fsync', 'run/<tmp>');
    const rename = at('rename', 'run/<tmp> -> run/latest.json');
    const dirSync = at('fsync', 'run');
    expect(dirSync).toBeLessThan(acknowledged);
    const lock = at('link', 'run/<tmp> -> run/<lock>');
    // Before the rename takes the temp file's name, a second name keeps the lock's holder; the
    // lock goes by one unlink (checked in the same synchronous step, see releaseLock), then that name.
    const holderName = at('link', 'run/<tmp> -> run/<tmp>');
    const unlock = at('unlink', 'run/<lock>');
    expect(at('unlink', 'run/<tmp>')).toBeGreaterThan(unlock);
    expect(holderName).toBeLessThan(rename);
    expect(at('open', 'run/<tmp>')).toBeLessThan(write);
    expect(write).toBeLessThan(fsync);
    expect(fsync).toBeLessThan(rename);
    expect(rename).toBeLessThan(dirSync);
    // The lock covers the check and the rename; it is released right after the rename, so the
    // unlink joins the rename's journal commit and the next writer need not wait for the fsync.
    expect(lock).toBeLessThan(rename);
    expect(rename).toBeLessThan(unlock);
    expect(log.filter(([e]) => e === 'fsync')).toHaveLength(2);
  });

  it('create-only: write → fsync → link(2) → fsync dir; new directories are fsynced in their parents', async () => {
    const { dir } = sandbox();
    root = dir;
    const s = store(dir);
    await s.ready();
    log.length = 0;
    await s.put('n1/n2/cp.json', b('v'), { ifAbsent: true });
    const acknowledged = log.length;
    await s.close();
    const fsync = at('fsync', 'n1/n2/<tmp>');
    const link = at('link', 'n1/n2/<tmp> -> n1/n2/cp.json');
    expect(at('write', 'n1/n2/<tmp>')).toBeLessThan(fsync);
    expect(fsync).toBeLessThan(link);
    expect(link).toBeLessThan(at('unlink', 'n1/n2/<tmp>'));
    for (const d of ['n1/n2', 'n1', '.']) {
      expect(at('fsync', d)).toBeGreaterThan(link);
      expect(at('fsync', d)).toBeLessThan(acknowledged); // durable before put resolved
    }
    expect(log.some(([e]) => e === 'rename')).toBe(false);
  });

  it('a failed fsync aborts the put: nothing is renamed, the old value and version stay, the temp file goes', async () => {
    const { dir } = sandbox();
    root = dir;
    const s = store(dir);
    const old = await s.put('k', b('old'));
    vi.mocked(fs.fsync).mockImplementationOnce(((_fd: number, cb: (err: Error) => void) => {
      cb(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO', errno: -5, syscall: 'fsync' }));
    }) as never);
    log.length = 0;
    const err = await s.put('k', b('new')).catch((e: unknown) => e);
    expect(err).toMatchObject({ reasonCode: 'checkpoint_atomic_write_failed', details: { key: 'k', code: 'EIO', syscall: 'fsync' } });
    expect((err as Error).cause).toMatchObject({ code: 'EIO' });
    expect(log.some(([e, w]) => e === 'rename' && w.endsWith('-> k'))).toBe(false);
    const got = await s.get('k');
    expect(text(got?.bytes)).toBe('old');
    expect(got?.version).toBe(old.version);
    expect(internalFiles(dir).filter((n) => !n.includes('owner'))).toEqual([]);
    await s.put('k', b('new')); // and the store keeps working
    expect(text((await s.get('k'))?.bytes)).toBe('new');
  });

  it('ENOSPC or EACCES becomes checkpoint_atomic_write_failed with the cause, and no absolute path leaks', async () => {
    const { dir } = sandbox();
    root = dir;
    const s = store(dir);
    await s.put('a/k', b('old'));
    vi.mocked(fs.write).mockImplementationOnce(((...args: unknown[]) => {
      (args.at(-1) as (err: Error) => void)(
        Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', errno: -28, syscall: 'write' }),
      );
    }) as never);
    const enospc = await s.put('a/k', b('new')).catch((e: unknown) => e);
    expect(enospc).toMatchObject({ reasonCode: 'checkpoint_atomic_write_failed', details: { key: 'a/k', code: 'ENOSPC' } });

    const spied = vi.mocked(fs.open).getMockImplementation()!;
    vi.mocked(fs.open).mockImplementation(((path: string, ...rest: unknown[]) => {
      const cb = rest.at(-1) as (err: Error) => void;
      if (String(path).includes(`${INTERNAL}tmp-`))
        cb(Object.assign(new Error(`EACCES: permission denied, open '${path}'`), { code: 'EACCES', errno: -13, syscall: 'open', path }));
      else (spied as (...a: unknown[]) => void)(path, ...rest);
    }) as never);
    const eacces = await s.put('a/k', b('new')).catch((e: unknown) => e);
    expect(eacces).toMatchObject({
      reasonCode: 'checkpoint_atomic_write_failed',
      details: { key: 'a/k', code: 'EACCES', syscall: 'open' },
    });
    const cause = (eacces as Error).cause as NodeJS.ErrnoException;
    expect(cause.code).toBe('EACCES');
    expect(cause.message).toContain('<dir>/a/');
    for (const e of [enospc, eacces] as CheckpointError[]) {
      const shown = JSON.stringify([
        e.message,
        e.toJSON(),
        String((e.cause as Error).message),
        (e.cause as NodeJS.ErrnoException).path ?? '',
      ]);
      expect(shown).not.toContain(scratch);
    }
    expect(text((await s.get('a/k'))?.bytes)).toBe('old');
  });
});
