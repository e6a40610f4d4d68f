/**
 * Keys' locks and the journal lock under the orderings several processes make at a stale lock,
 * or at a lock let go late: nobody renames a lock away to look at it, so its name is never free
 * while a live lock is away, and a third process can never hold it beside another. Each ordering
 * is made by hand (gated calls, as in ../fs-packed/lock-claims.test.ts): a process stopped right
 * after it judged a lock stale acts only once another holds the lock, and a third process links
 * its token at the lock's name whenever that name is renamed away (the moment a break that put
 * the lock back left it free).
 */
import fs, { linkSync, lstatSync, mkdtempSync, readdirSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { systemClock, type Clock } from '../../../src/contract/clock.js';
import { listAll } from '../../../src/contract/storage.js';
import { openRoot } from '../../../src/storage/fs/dir.js';
import { fdClose, realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { acquireLock, releaseLock, type LockTiming, type LockToken } from '../../../src/storage/fs/lock.js';
import { classifyInternal, HOST_TAG, newOwner, tempName, type Owner } from '../../../src/storage/fs/names.js';
import { sweepInternalFiles } from '../../../src/storage/fs/sweep.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-lock-claims');
afterEach(() => vi.restoreAllMocks());

const INTERNAL = '.sp\\';
const KEY_LOCK = `${INTERNAL}lock-k`;
const JOURNAL_LOCK = `${INTERNAL}lock-\\journal`;
const timing: LockTiming = { clock: systemClock, staleAfterMs: 60_000, lockTimeoutMs: 300 };
const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const inoOf = (path: string): bigint | undefined => lstatSync(path, { bigint: true, throwIfNoEntry: false })?.ino;

/** A promise and its resolve, for holding a call until the test lets it go. */
function gate(): { readonly open: () => void; readonly opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** A temp file of `owner` in `dir`, as a process makes its lock token. */
function tokenIn(dir: string, owner: Owner = newOwner(Date.now())): LockToken {
  const path = join(dir, tempName(owner));
  writeFileSync(path, '');
  return { path, ino: lstatSync(path, { bigint: true }).ino, owner };
}

/** A pid that certainly belongs to no process any more. */
const deadPid = (): number => spawnSync(process.execPath, ['-e', '']).pid!;

let tags = 0;
/** The lock at `lockPath` of a holder that died: its token (of a dead pid) linked there; the lock's inode. */
function deadHolder(dir: string, lockPath: string): bigint {
  const pid = deadPid();
  const atMs = Date.now();
  const owner: Owner = {
    host: HOST_TAG,
    pid,
    atMs,
    tag: `${HOST_TAG}-${pid}-${atMs.toString(36)}-${(tags++).toString(16).padStart(12, '0')}`,
  };
  const token = tokenIn(dir, owner);
  linkSync(token.path, lockPath);
  return token.ino;
}

const named = (path: unknown, name: string): boolean => typeof path === 'string' && path.endsWith(`/${name}`);

/**
 * The orderings' machinery, on the real calls. Once `arm()`ed, the first act on the lock named
 * `lock` — a claim of its inode, the journal's replay owed, or a rename of the lock away: the
 * first step of whoever judged it stale — waits until `release()`; `reached` resolves when it
 * does. `third`: once `waits`, a third process links its live token at the lock's name the moment
 * that name is renamed away (before the call that renamed it goes on).
 */
function orderings(dir: string, lock: string) {
  const lockPath = join(dir, lock);
  const token = tokenIn(dir);
  const third = { waits: false, token };
  const reached = gate();
  const held = gate();
  let armed = false;
  const stopHere = async (): Promise<void> => {
    armed = false;
    reached.open();
    await held.opened;
  };
  const realRename = fs.rename;
  vi.spyOn(fs, 'rename').mockImplementation(((from: string, to: string, cb: fs.NoParamCallback) => {
    const go = (): void =>
      realRename(from, to, (err) => {
        if (!err && third.waits && named(from, lock)) linkSync(token.path, lockPath);
        cb(err);
      });
    if (armed && named(from, lock)) void stopHere().then(go);
    else go();
  }) as typeof fs.rename);
  const realOpen = fs.open;
  vi.spyOn(fs, 'open').mockImplementation(((path: string, ...rest: unknown[]) => {
    const go = (): void => void (realOpen as unknown as (...a: unknown[]) => void)(path, ...rest);
    if (armed && typeof path === 'string' && path.includes(`${INTERNAL}claim-${lock.slice(INTERNAL.length)}-`)) void stopHere().then(go);
    else go();
  }) as typeof fs.open);
  const realPromiseOpen = fsp.open.bind(fsp) as unknown as (...a: unknown[]) => Promise<unknown>;
  vi.spyOn(fsp, 'open').mockImplementation((async (path: fs.PathLike, ...rest: unknown[]) => {
    if (armed && named(String(path), `${INTERNAL}journal-replay`)) await stopHere();
    return realPromiseOpen(path, ...rest);
  }) as typeof fsp.open);
  return {
    lockPath,
    third,
    reached: reached.opened,
    arm: () => void (armed = true),
    release: () => held.open(),
  };
}

describe("a key's lock, at a stale lock", () => {
  it('a waiter that saw the stale lock before another took it over leaves the new holder its lock', async () => {
    const dir = mkdtempSync(join(base, 'key-race-'));
    const at = orderings(dir, KEY_LOCK);
    deadHolder(dir, at.lockPath);
    const first = tokenIn(dir);
    const second = tokenIn(dir);

    // The second waiter stops right after it saw the lock stale.
    at.arm();
    const secondTake = acquireLock(at.lockPath, dir, 'k', second, timing).then(
      () => 'took',
      (err: unknown) => err,
    );
    await at.reached;
    const held = await acquireLock(at.lockPath, dir, 'k', first, timing);
    expect(held.brokeStale).toBe(true);
    at.third.waits = true;
    at.release();
    const outcome = await secondTake;

    // The first waiter's lock is still the lock; the second waited for it and gave up.
    expect(inoOf(at.lockPath)).toBe(first.ino);
    expect(outcome).toMatchObject({ details: { reason: 'lock_timeout' } });
    await releaseLock(held, timing);
    expect(inoOf(at.lockPath)).toBeUndefined();
    expect(readdirSync(dir).filter((n) => !n.startsWith(`${INTERNAL}tmp-`))).toEqual([]);
  });

  it('the open-time sweep that saw the stale lock before a writer took it over leaves the writer its lock', async () => {
    const dir = mkdtempSync(join(base, 'key-sweep-'));
    const at = orderings(dir, KEY_LOCK);
    const staleIno = deadHolder(dir, at.lockPath);
    const writer = tokenIn(dir);
    const root = await openRoot(dir);
    try {
      at.arm();
      const swept = sweepInternalFiles(root, timing);
      await at.reached;
      // A writer takes the lock over as a take-over does: a second link of its token renamed over it.
      linkSync(writer.path, join(dir, `${INTERNAL}aside`));
      renameSync(join(dir, `${INTERNAL}aside`), at.lockPath);
      expect(inoOf(at.lockPath)).not.toBe(staleIno);
      at.third.waits = true;
      at.release();
      expect((await swept).removedLocks).toBe(0);
    } finally {
      await fdClose(root.fd);
    }
    expect(inoOf(at.lockPath)).toBe(writer.ino);
  });

  it('a holder whose unlink of its lock fails once still lets it go, so no one (itself included) waits out the stale bound', async () => {
    const dir = mkdtempSync(join(base, 'key-unlink-fails-'));
    const lockPath = join(dir, KEY_LOCK);
    const realUnlinkSync = fs.unlinkSync;
    // Unlinks of the lock: the first fails with EIO.
    let unlinks = 0;
    vi.spyOn(fs, 'unlinkSync').mockImplementation((path: fs.PathLike) => {
      if (path === lockPath && unlinks++ === 0) throw Object.assign(new Error('injected EIO'), { code: 'EIO', syscall: 'unlink' });
      realUnlinkSync(path);
    });
    const held = await acquireLock(lockPath, dir, 'k', tokenIn(dir), timing);
    await releaseLock(held, timing);
    expect(unlinks).toBe(2);
    expect(inoOf(lockPath)).toBeUndefined();
  });

  it('a writer letting its lock go after committing, while another waits, leaves the name to that one alone', async () => {
    const dir = mkdtempSync(join(base, 'key-release-'));
    const a = createFsStorage({ dir, journal: false });
    const b = createFsStorage({ dir, journal: false, lockTimeoutMs: 5_000 });
    await a.put('k', bytes('0'));
    const lockPath = join(dir, KEY_LOCK);
    const third = { waits: false, token: tokenIn(dir) };
    // A's commit (its rename over `k`) returns late: until B holds the lock, or 300 ms.
    const aCommitted = gate();
    const bLinked = gate();
    const bAtCommit = gate();
    const bGoes = gate();
    let linkedIno: bigint | undefined;
    let commits = 0;
    const realLink = fs.link;
    vi.spyOn(fs, 'link').mockImplementation(((from: string, to: string, cb: fs.NoParamCallback) =>
      realLink(from, to, (err) => {
        if (!err && named(to, KEY_LOCK) && commits > 0) {
          linkedIno = lstatSync(to, { bigint: true }).ino;
          bLinked.open();
        }
        cb(err);
      })) as typeof fs.link);
    const realRename = fs.rename;
    vi.spyOn(fs, 'rename').mockImplementation(((from: string, to: string, cb: fs.NoParamCallback) =>
      realRename(from, to, (err) => {
        if (!err && third.waits && named(from, KEY_LOCK)) linkSync(third.token.path, lockPath);
        if (err || !named(to, 'k')) return cb(err);
        const n = ++commits;
        if (n === 1) {
          aCommitted.open();
          void Promise.race([bLinked.opened, new Promise((r) => setTimeout(r, 300))]).then(() => {
            third.waits = true;
            cb(null);
          });
        } else {
          bAtCommit.open();
          void bGoes.opened.then(() => cb(null));
        }
      })) as typeof fs.rename);

    const aPut = a.put('k', bytes('a'));
    await aCommitted.opened;
    const bPut = b.put('k', bytes('b'));
    await aPut;
    await bAtCommit.opened;
    // B holds the lock and is about to commit: the lock is the one B linked, nobody else's.
    expect(linkedIno).toBeDefined();
    expect(inoOf(lockPath)).toBe(linkedIno);
    bGoes.open();
    await bPut;
    await Promise.all([a.close(), b.close()]);
    vi.restoreAllMocks();
    expect(inoOf(lockPath)).toBeUndefined();
    expect(readdirSync(dir).filter((n) => n.startsWith(INTERNAL) && n !== tempName(third.token.owner))).toEqual([]);
  });

  it('any interleaving of three waiters at one stale lock, each taking, holding and letting it go, leaves at most one holder at a time (property)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), async (s) => {
        const dir = mkdtempSync(join(base, 'key-property-'));
        const lockPath = join(dir, KEY_LOCK);
        // A holder older than the stale bound (a hung one) left its lock.
        linkSync(tokenIn(dir, newOwner(Date.now() - 3_600_000)).path, lockPath);
        const tokens = [tokenIn(dir), tokenIn(dir), tokenIn(dir)];
        const ours = (path: unknown): boolean => typeof path === 'string' && path.startsWith(dir);
        const fds = new Set<number>();
        const step = (label: string): Promise<void> => s.schedule(Promise.resolve(), label);
        // Every asynchronous call on the directory is one step the scheduler orders; synchronous ones are atomic.
        for (const name of ['link', 'rename', 'unlink'] as const) {
          const real = fs[name] as unknown as (...a: unknown[]) => void;
          vi.spyOn(fs, name).mockImplementation(((...args: unknown[]) =>
            ours(args[0]) ? void step(`${name} ${String(args[1])}`).then(() => real(...args)) : real(...args)) as never);
        }
        const realOpen = fs.open as unknown as (...a: unknown[]) => void;
        vi.spyOn(fs, 'open').mockImplementation(((path: unknown, ...rest: unknown[]) => {
          if (!ours(path)) return realOpen(path, ...rest);
          const cb = rest.pop() as (err: unknown, fd?: number) => void;
          void step(`open ${String(path)}`).then(() =>
            realOpen(path, ...rest, (err: unknown, fd?: number) => {
              if (fd !== undefined) fds.add(fd);
              cb(err, fd);
            }),
          );
        }) as never);
        const realClose = fs.close as unknown as (...a: unknown[]) => void;
        vi.spyOn(fs, 'close').mockImplementation(((fd: number, cb: (err: unknown) => void) =>
          fds.delete(fd) ? void step('close').then(() => realClose(fd, cb)) : realClose(fd, cb)) as never);
        for (const name of ['lstat', 'readdir', 'unlink'] as const) {
          const real = (fsp[name] as unknown as (...a: unknown[]) => Promise<unknown>).bind(fsp);
          vi.spyOn(fsp, name).mockImplementation((async (...args: unknown[]) => {
            if (ours(args[0])) await step(`${name} ${String(args[0])}`);
            return real(...args);
          }) as never);
        }
        // Pauses are steps too (no time passes: nobody's lock or claim ages).
        const clock: Clock = {
          now: () => Date.now(),
          setTimeout: (cb: () => void) => void step('pause').then(cb),
          clearTimeout: () => undefined,
        } as unknown as Clock;
        const t: LockTiming = { clock, staleAfterMs: 60_000, lockTimeoutMs: 60_000 };
        let holding = 0;
        let most = 0;
        const wrong: string[] = [];
        const runs = tokens.map(async (token, i) => {
          const held = await acquireLock(lockPath, dir, 'k', token, t);
          holding++;
          most = Math.max(most, holding);
          if (inoOf(lockPath) !== token.ino) wrong.push(`waiter ${i} holds, the lock is another's`);
          await step(`hold ${i}`);
          holding--;
          await releaseLock(held, t);
        });
        try {
          await s.waitFor(Promise.all(runs));
        } finally {
          vi.restoreAllMocks();
        }
        expect(wrong).toEqual([]);
        expect(most).toBe(1);
        expect(inoOf(lockPath)).toBeUndefined();
        expect(readdirSync(dir).filter((n) => !n.startsWith(`${INTERNAL}tmp-`))).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });
});

describe('the journal lock, at a stale lock or let go late', () => {
  it('a waiter that saw the stale lock before the sweep removed it and a process linked its own leaves that process the lock', async () => {
    const dir = mkdtempSync(join(base, 'journal-waiter-'));
    const at = orderings(dir, JOURNAL_LOCK);
    deadHolder(dir, at.lockPath);
    const other = tokenIn(dir);
    const waiter = createFsStorage({ dir, journal: true, cleanupOnOpen: false, lockTimeoutMs: 300 });
    try {
      at.arm();
      const put = waiter.put('k', bytes('w')).then(
        () => 'written',
        (err: unknown) => err,
      );
      await at.reached;
      // A process opening the store removes the stale lock; another, seeing no contention, links its own.
      const root = await openRoot(dir);
      try {
        expect((await sweepInternalFiles(root, timing)).removedLocks).toBe(1);
      } finally {
        await fdClose(root.fd);
      }
      linkSync(other.path, at.lockPath);
      at.third.waits = true;
      at.release();
      const outcome = await put;

      expect(inoOf(at.lockPath)).toBe(other.ino);
      expect(outcome).toMatchObject({ details: { reason: 'lock_timeout' } });
    } finally {
      rmSync(at.lockPath, { force: true });
      await waiter.close();
    }
  });

  it('the open-time sweep that saw the stale lock before a waiter took it over leaves the waiter its lock', async () => {
    const dir = mkdtempSync(join(base, 'journal-sweep-'));
    const at = orderings(dir, JOURNAL_LOCK);
    deadHolder(dir, at.lockPath);
    const waiter = tokenIn(dir);
    const root = await openRoot(dir);
    try {
      at.arm();
      const swept = sweepInternalFiles(root, timing);
      await at.reached;
      linkSync(waiter.path, join(dir, `${INTERNAL}aside`));
      renameSync(join(dir, `${INTERNAL}aside`), at.lockPath);
      at.third.waits = true;
      at.release();
      expect((await swept).removedLocks).toBe(0);
    } finally {
      await fdClose(root.fd);
    }
    expect(inoOf(at.lockPath)).toBe(waiter.ino);
  });

  it('a holder letting the lock go after its lease ran out and another took it over leaves the new holder its lock', async () => {
    const dir = mkdtempSync(join(base, 'journal-late-'));
    const lockPath = join(dir, JOURNAL_LOCK);
    // A's record's write and its lease renewal wait at a gate, as a paused process's would.
    const stalled = gate();
    let stalling = false;
    const atWrite = gate();
    const hold =
      <A extends unknown[], R>(call: (...a: A) => Promise<R>, reached?: () => void) =>
      async (...args: A): Promise<R> => {
        if (stalling) {
          reached?.();
          await stalled.opened;
        }
        return call(...args);
      };
    const io: FsIo = { ...realIo, writeAt: hold(realIo.writeAt, atWrite.open), futimes: hold(realIo.futimes) };
    const options = { dir, journal: true, staleAfterMs: 2_000, lockTimeoutMs: 10_000 };
    const a = createFsStorage({ ...options, lockTimeoutMs: 300 }, { io, journalLingerMs: 60_000 });
    const b = createFsStorage(options, { journalLingerMs: 60_000 });
    try {
      await a.put('a/one', bytes('a1'));
      stalling = true;
      const late = a.put('a/two', bytes('a2')).catch((err: unknown) => err);
      await atWrite.opened;
      // B waits for A's lease (1 s here) to run out, takes the lock over and keeps it.
      await b.put('b/one', bytes('b1'));
      const bIno = inoOf(lockPath);
      const third = { token: tokenIn(dir) };
      const realRename = fs.rename;
      vi.spyOn(fs, 'rename').mockImplementation(((from: string, to: string, cb: fs.NoParamCallback) =>
        realRename(from, to, (err) => {
          if (!err && named(from, JOURNAL_LOCK)) linkSync(third.token.path, lockPath);
          cb(err);
        })) as typeof fs.rename);
      stalling = false;
      stalled.open();
      // A's late record is refused. A's next call lets its hold go first (past maxHoldMs, its
      // lease long run out), then waits for B's lock and gives up.
      expect(await late).toMatchObject({ details: { reason: 'journal_lease_lost' } });
      expect(await a.put('a/three', bytes('a3')).catch((err: unknown) => err)).toMatchObject({ details: { reason: 'lock_timeout' } });

      expect(inoOf(lockPath)).toBe(bIno);
      vi.restoreAllMocks();
      await b.put('b/two', bytes('b2'));
    } finally {
      stalled.open();
      await b.close();
      await a.close();
    }
  });
});

describe('claims of keys’ and the journal’s locks', () => {
  it('are internal names of their own, never listed, and the open-time sweep removes those older than the stale bound', async () => {
    const dir = mkdtempSync(join(base, 'names-'));
    const store = createFsStorage({ dir, journal: false });
    await store.put('run/k', bytes('v'));
    await store.put('run/k-7', bytes('v'));
    await store.close();
    const hourAgo = (Date.now() - 3_600_000) / 1000;
    const planted = {
      oldKey: join(dir, 'run', `${INTERNAL}claim-lock-k-7`),
      youngKey: join(dir, 'run', `${INTERNAL}claim-lock-k-8.1`),
      oldJournal: join(dir, `${INTERNAL}claim-lock-\\journal-12`),
      youngJournal: join(dir, `${INTERNAL}claim-lock-\\journal-13`),
    };
    for (const path of Object.values(planted)) writeFileSync(path, '');
    for (const path of [planted.oldKey, planted.oldJournal]) utimesSync(path, hourAgo, hourAgo);
    // A claim of `k`'s lock is no other key's lock (`k-7`'s is `.sp\lock-k-7`), and is of its own kind.
    expect(classifyInternal(`${INTERNAL}claim-lock-k-7`)).toEqual({ kind: 'claim' });

    const reopened = createFsStorage({ dir, journal: false });
    const report = await reopened.ready();
    expect((await listAll(reopened, 'run/')).map((e) => e.key).sort()).toEqual(['run/k', 'run/k-7']);
    await reopened.close();

    expect(report.removedTempFiles).toBe(2);
    expect(inoOf(planted.oldKey)).toBeUndefined();
    expect(inoOf(planted.oldJournal)).toBeUndefined();
    expect(inoOf(planted.youngKey)).toBeDefined();
    expect(inoOf(planted.youngJournal)).toBeDefined();
  });
});
