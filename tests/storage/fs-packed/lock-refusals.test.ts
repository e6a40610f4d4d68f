/** What the packed store's lock says when it refuses: the same words and details whatever builds them. */
import { mkdtempSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from '../../../src/contract/errors.js';
import { leaseLost } from '../../../src/storage/fs/journal/lease.js';
import { realPackedIo } from '../../../src/storage/fs-packed/io.js';
import { createPackedLock, dropSpare, leaseLostError, letGoLock, takeLock } from '../../../src/storage/fs-packed/lock.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('packed-lock-refusals');

describe('the packed lock refuses', () => {
  it.each([
    [
      'the packed store',
      leaseLostError('/d'),
      "packed store /d: the lock's lease ran out before the write was done (this process was paused or stalled; another process may have taken the store)",
      { key: 'packed', reason: 'packed_lease_lost' },
    ],
    [
      'the journal',
      leaseLost('the commit'),
      "the journal lock's lease ran out before the commit (this process was paused or stalled; another process may have taken the journal)",
      { key: 'journal', reason: 'journal_lease_lost' },
    ],
  ])('a write on %s whose lease ran out, saying nothing of it was acknowledged', (_name, err, said, details) => {
    expect(err.message).toBe(`checkpoint_atomic_write_failed: ${said}: nothing of it was acknowledged — retry the write`);
    expect(err.details).toEqual(details);
  });

  it("a take that waited lockTimeoutMs for a live holder, saying who holds it and when its lease ends; the waiter's token is removed", async () => {
    const dir = mkdtempSync(join(base, 'busy-'));
    const holder = createPackedLock(dir, realPackedIo);
    const waiter = createPackedLock(dir, realPackedIo, { lockTimeoutMs: 30 });
    await takeLock(holder);
    try {
      const err = await takeLock(waiter).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(CheckpointError);
      expect((err as CheckpointError).message).toMatch(
        new RegExp(
          `^checkpoint_atomic_write_failed: packed store ${dir} is busy: waited \\d+ ms for its lock \\(held by pid ${process.pid}, ` +
            'whose lease ends in \\d+ ms\\); nothing was written — retry the write or raise lockTimeoutMs$',
        ),
      );
      expect((err as CheckpointError).details).toEqual({ key: 'packed', reason: 'lock_timeout', holderPid: process.pid });
      expect(waiter.held).toBeUndefined();
    } finally {
      await letGoLock(holder, false);
      await dropSpare(holder);
    }
    expect(readdirSync(dir)).toEqual([]);
  });
});
