/**
 * Waiters of the packed store's lock that find the same stale lock: one takes it over, and the
 * others never take it from the new holder (which would make two holders, each writing the store
 * as its only writer). The interleaving is made by hand: a second waiter looked at the stale lock
 * and acts only once the first took it over; a third process links its token at the lock's name
 * whenever that name is renamed away (the moment a break that put the lock back left it free).
 */
import fs, { lstatSync, mkdtempSync, readdirSync, writeFileSync, linkSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CheckpointError } from '../../../src/contract/errors.js';
import { newOwner, tempName } from '../../../src/storage/fs/names.js';
import { realPackedIo } from '../../../src/storage/fs-packed/io.js';
import {
  createPackedLock,
  dropSpare,
  holdsLease,
  letGoLock,
  LOCK_NAME,
  SEAL_OWED_NAME,
  takeLock,
} from '../../../src/storage/fs-packed/lock.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('packed-take-over');
afterEach(() => vi.restoreAllMocks());

/** A temp file named for `owner` in `dir` (a lock token as a process makes it). */
function tokenOf(dir: string, owner: ReturnType<typeof newOwner>): string {
  const path = join(dir, tempName(owner));
  writeFileSync(path, '');
  return path;
}

/** A promise and its resolve, for holding a call until the test lets it go. */
function gate(): { readonly open: () => void; readonly opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/**
 * A third process waiting for the lock (once `waits` is set): it links its live token at the
 * lock's name the moment that name is renamed away, before the call that renamed it goes on.
 */
function thirdProcess(dir: string): { waits: boolean } {
  const lockPath = join(dir, LOCK_NAME);
  const token = tokenOf(dir, newOwner(Date.now()));
  const third = { waits: false };
  const rename = fs.rename;
  vi.spyOn(fs, 'rename').mockImplementation(((from: string, to: string, cb: fs.NoParamCallback) =>
    rename(from, to, (err) => {
      if (!err && third.waits && from === lockPath) linkSync(token, lockPath);
      cb(err);
    })) as typeof fs.rename);
  return third;
}

describe('the packed lock, taken over from a holder that is gone', () => {
  it('a waiter that saw the stale lock before another took it over leaves the new holder its lock', async () => {
    const dir = mkdtempSync(join(base, 'race-'));
    const lockPath = join(dir, LOCK_NAME);
    // The stale lock: the token of an owner older than the stale bound (gone), linked as the lock.
    linkSync(tokenOf(dir, newOwner(Date.now() - 3_600_000)), lockPath);
    // A third process, waiting too once the first waiter holds the lock.
    const third = thirdProcess(dir);

    // The second waiter stops right after it saw the lock stale: at its first step to break it
    // (writing the seal it owes, or claiming the stale lock's inode).
    const held = gate();
    const reached = gate();
    let armed = true;
    const stop = async (): Promise<void> => {
      if (!armed) return;
      armed = false;
      reached.open();
      await held.opened;
    };
    const open = fs.open;
    vi.spyOn(fs, 'open').mockImplementation(((path: string, ...rest: unknown[]) => {
      if (armed && String(path).includes(`${LOCK_NAME}-breaking-`))
        return void stop().then(() => (open as (...a: unknown[]) => void)(path, ...rest));
      return (open as (...a: unknown[]) => void)(path, ...rest);
    }) as typeof fs.open);
    const second = createPackedLock(
      dir,
      {
        ...realPackedIo,
        open: async (path, flags, mode) => {
          if (path.endsWith(SEAL_OWED_NAME)) await stop();
          return realPackedIo.open(path, flags, mode);
        },
      },
      { lockTimeoutMs: 1 },
    );
    const first = createPackedLock(dir, realPackedIo);

    const secondTake = takeLock(second).then(
      () => undefined,
      (err: unknown) => err,
    );
    await reached.opened;
    await takeLock(first);
    expect(lstatSync(lockPath).ino).toBe(Number(first.held!.token.ino));
    third.waits = true;
    held.open();
    const refused = await secondTake;

    // The first holder's lock is still the lock; the second waited for it (and gave up: lockTimeoutMs).
    expect(holdsLease(first)).toBe(true);
    expect(lstatSync(lockPath).ino).toBe(Number(first.held!.token.ino));
    expect(second.held).toBeUndefined();
    expect((refused as CheckpointError).details).toMatchObject({ reason: 'lock_timeout' });

    await letGoLock(first, false);
    await dropSpare(first);
    expect(readdirSync(dir).filter((name) => name.includes('lock'))).toEqual([]);
  });

  it('a holder letting its lock go after another took it over (its lease ran out) leaves the new holder its lock', async () => {
    const dir = mkdtempSync(join(base, 'late-'));
    const lockPath = join(dir, LOCK_NAME);
    const first = createPackedLock(dir, realPackedIo, { leaseMs: 400 });
    const second = createPackedLock(dir, realPackedIo, { leaseMs: 400 });
    await takeLock(first);
    // The first holder stalls past its whole lease: the second takes the lock over.
    await new Promise((resolve) => setTimeout(resolve, 450));
    await takeLock(second);
    expect(second.held?.lock.brokeStale).toBe(true);
    const third = thirdProcess(dir);
    third.waits = true;

    await letGoLock(first, false);

    expect(second.held).toBeDefined();
    expect(lstatSync(lockPath).ino).toBe(Number(second.held!.token.ino));
    await letGoLock(second, false);
    await Promise.all([dropSpare(first), dropSpare(second)]);
  });
});
