/**
 * The packed lock's release and take-over under the orderings a loaded machine makes: a release
 * whose unlink libuv's pool runs late, waiters that stall between looking at a claim and acting
 * on it, claimers killed with their claim, a stale lock that is a link of the taker's own token.
 * The orderings are made by hand (gated calls), as in lock-take-over.test.ts.
 */
import fs, { existsSync, linkSync, lstatSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import fsp from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CheckpointError } from '../../../src/contract/errors.js';
import type { LockToken } from '../../../src/storage/fs/lock.js';
import { newOwner, tempName } from '../../../src/storage/fs/names.js';
import { claimPath, takeOverStale } from '../../../src/storage/fs/take-over.js';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { createPackedLock, dropSpare, letGoLock, LOCK_NAME, takeLock } from '../../../src/storage/fs-packed/lock.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('packed-claims');
afterEach(() => vi.restoreAllMocks());

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and its resolve, for holding a call until the test lets it go. */
function gate(): { readonly open: () => void; readonly opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** A lock token of a new process in `dir`. */
function tokenIn(dir: string): LockToken {
  const owner = newOwner(Date.now());
  const path = join(dir, tempName(owner));
  writeFileSync(path, '');
  return { path, ino: lstatSync(path, { bigint: true }).ino, owner };
}

const claims = (dir: string): string[] => readdirSync(dir).filter((name) => name.includes(`${LOCK_NAME}-breaking-`));

describe('the packed lock, let go late or taken over past claims', () => {
  it('a release inside the trusted lease whose unlink the thread pool would run late never removes the lock of whoever took it over', async () => {
    const dir = mkdtempSync(join(base, 'pool-'));
    const lockPath = join(dir, LOCK_NAME);
    // libuv's pool stalls: an unlink of the lock handed to it runs only when the test lets it.
    const stalled = gate();
    const io: PackedIo = {
      ...realPackedIo,
      unlink: async (path) => {
        if (path === lockPath) await stalled.opened;
        return realPackedIo.unlink(path);
      },
    };
    const first = createPackedLock(dir, io, { leaseMs: 300 });
    const second = createPackedLock(dir, realPackedIo, { leaseMs: 300 });
    await takeLock(first);
    const released = letGoLock(first, false);
    // Past the whole lease: the lock, if still there, is anyone's to take over.
    await sleep(350);
    await takeLock(second);
    stalled.open();
    await released;

    expect(lstatSync(lockPath).ino).toBe(Number(second.held!.token.ino));
    await letGoLock(second, false);
    await Promise.all([dropSpare(first), dropSpare(second)]);
  });

  it('a release inside the trusted lease whose unlink fails once still lets the lock go, so no one (this process included) waits out its lease', async () => {
    const dir = mkdtempSync(join(base, 'unlink-fails-'));
    const lockPath = join(dir, LOCK_NAME);
    // Unlinks of the lock: the first of each part of the test fails with EIO.
    let unlinks = 0;
    const io: PackedIo = {
      ...realPackedIo,
      unlinkSync: (path) => {
        if (path === lockPath && unlinks++ === 0) throw Object.assign(new Error('injected EIO'), { code: 'EIO', syscall: 'unlink' });
        realPackedIo.unlinkSync(path);
      },
    };
    const lock = createPackedLock(dir, io);
    await takeLock(lock);
    await letGoLock(lock, false);
    expect(unlinks).toBe(2);
    expect(existsSync(lockPath)).toBe(false);

    // The same through the store, whose close lets the lock go.
    unlinks = 0;
    const store = createPackedFsStorage({ dir }, { io });
    await store.put('a', new TextEncoder().encode('one'));
    await store.close();
    expect(unlinks).toBeGreaterThanOrEqual(2);
    expect(existsSync(lockPath)).toBe(false);
    await dropSpare(lock);
  });

  it('waiters that stall between judging a claim old and acting on it, or between their last check and their rename: one of them takes the lock over', async () => {
    const dir = mkdtempSync(join(base, 'race-'));
    const lockPath = join(dir, LOCK_NAME);
    const claimStaleMs = 400;
    // A dead holder's lock, and a claim of it by a waiter killed while taking it over.
    writeFileSync(lockPath, '');
    const staleIno = lstatSync(lockPath, { bigint: true }).ino;
    writeFileSync(claimPath(lockPath, staleIno), '');
    await sleep(claimStaleMs + 50);
    const inspect = (): Promise<'gone' | { ino: bigint; stale: boolean }> => {
      const st = lstatSync(lockPath, { bigint: true, throwIfNoEntry: false });
      return Promise.resolve(st ? { ino: st.ino, stale: st.ino === staleIno } : 'gone');
    };
    const tokens = { a: tokenIn(dir), b: tokenIn(dir), c: tokenIn(dir), d: tokenIn(dir) };
    const took: string[] = [];
    const run = (name: keyof typeof tokens): Promise<void> =>
      takeOverStale(lockPath, dir, tokens[name], staleIno, { inspect, claimStaleMs }).then((done) => void (done && took.push(name)));

    // Waiter a stalls right after its first look at a claim (it judged the dead one old).
    const aStalled = gate();
    const aLooked = gate();
    let aArmed = true;
    const lstat = fsp.lstat.bind(fsp);
    vi.spyOn(fsp, 'lstat').mockImplementation((async (path: fs.PathLike, opts?: fs.StatOptions) => {
      const st = await lstat(path, opts as fs.StatOptions & { bigint: true });
      if (aArmed && String(path).includes('-breaking-')) {
        aArmed = false;
        aLooked.open();
        await aStalled.opened;
      }
      return st;
    }) as typeof fsp.lstat);
    // Waiter b stalls between its last check and its rename over the lock (if it gets there).
    const bStalled = gate();
    const bRenames = gate();
    let bArmed = false;
    const rename = fs.rename;
    vi.spyOn(fs, 'rename').mockImplementation(((from: string, to: string, cb: fs.NoParamCallback) => {
      if (bArmed && to === lockPath) {
        bArmed = false;
        bRenames.open();
        void bStalled.opened.then(() => rename(from, to, cb));
        return;
      }
      rename(from, to, cb);
    }) as typeof fs.rename);

    const a = run('a');
    await aLooked.opened;
    await run('d');
    bArmed = true;
    const b = run('b');
    await Promise.race([bRenames.opened, b]);
    bArmed = false;
    aStalled.open();
    await a;
    await run('c');
    bStalled.open();
    await b;

    expect(took).toHaveLength(1);
    expect(lstatSync(lockPath, { bigint: true }).ino).toBe(tokens[took[0] as keyof typeof tokens].ino);
  });

  it('a holder letting its lock go late, its inode claimed by a waiter killed meanwhile, still lets it go', async () => {
    const dir = mkdtempSync(join(base, 'late-claimed-'));
    const lockPath = join(dir, LOCK_NAME);
    const first = createPackedLock(dir, realPackedIo, { leaseMs: 400 });
    await takeLock(first);
    writeFileSync(claimPath(lockPath, first.held!.token.ino), '');
    await sleep(450);

    await letGoLock(first, false);

    expect(existsSync(lockPath)).toBe(false);
    expect(claims(dir)).toEqual([]);
    await dropSpare(first);
  });

  it('a stale lock that is a link of the taker’s own token is taken over without leaving a second link behind', async () => {
    const dir = mkdtempSync(join(base, 'own-'));
    const lockPath = join(dir, LOCK_NAME);
    const first = createPackedLock(dir, realPackedIo, { leaseMs: 200 });
    const hold = await takeLock(first);
    // The process loses its hold (as after a fault) but keeps its token; the lock runs out its lease.
    first.held = undefined;
    first.leaseFrom = undefined;
    first.spare = hold.token;
    await sleep(250);

    await takeLock(first);

    expect(first.held!.lock.brokeStale).toBe(true);
    expect(lstatSync(lockPath).ino).toBe(Number(hold.token.ino));
    expect(readdirSync(dir).filter((name) => name.includes('dead-'))).toEqual([]);
    await letGoLock(first, false);
    await dropSpare(first);
  });

  it('a claim left by a waiter killed after its take-over is removed by the next process to hold the lock; a young one is left', async () => {
    const dir = mkdtempSync(join(base, 'left-'));
    const store = createPackedFsStorage({ dir, lingerMs: 0 });
    await store.put('k', new Uint8Array([1]));
    await store.close();
    const old = join(dir, `${LOCK_NAME}-breaking-12345`);
    writeFileSync(old, '');
    const hourAgo = (Date.now() - 3_600_000) / 1000;
    utimesSync(old, hourAgo, hourAgo);
    const young = join(dir, `${LOCK_NAME}-breaking-67890.1`);
    writeFileSync(young, '');

    const next = createPackedFsStorage({ dir, lingerMs: 0 });
    await next.put('k2', new Uint8Array([2]));
    await next.close();

    expect(existsSync(old)).toBe(false);
    expect(existsSync(young)).toBe(true);
  });

  it('a wait that runs out while another waiter takes a dead holder’s lock over says so, not that a lease is running', async () => {
    const dir = mkdtempSync(join(base, 'claimed-'));
    const lockPath = join(dir, LOCK_NAME);
    const dead = join(dir, tempName(newOwner(Date.now() - 3_600_000)));
    writeFileSync(dead, '');
    linkSync(dead, lockPath);
    writeFileSync(claimPath(lockPath, lstatSync(lockPath, { bigint: true }).ino), '');
    const waiter = createPackedLock(dir, realPackedIo, { lockTimeoutMs: 30 });

    const err = await takeLock(waiter).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as CheckpointError).details).toMatchObject({ key: 'packed', reason: 'lock_timeout' });
    expect((err as CheckpointError).message).not.toMatch(/lease ends in/);
    expect((err as CheckpointError).message).toMatch(/another waiter claimed it/);
    await dropSpare(waiter);
  });
});
