/**
 * A batch larger than the descriptor budget (more puts than temp files the process keeps open,
 * more directories than a hold keeps open: closed temp files reopened for their fill, directories
 * walked per use) keeps the journal's promises: with a fault or a crash injected at a random
 * file-system call of the batch, its apply and the journal checkpoint after it, the files hold the
 * whole old state or the whole new one after reopening, and an acknowledged batch is never lost.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { systemClock, type BatchOperation, type Clock } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { MAX_CACHED_DIRS, OPEN_TEMPS_PER_BATCH } from '../../../src/storage/fs/descriptor-budget.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-descriptor-faults');
/** A clock two minutes ahead: what an abandoned ("crashed") instance of this process left is stale to it. */
const later: Clock = { ...systemClock, now: () => Date.now() + 120_000 };
const PUTS = OPEN_TEMPS_PER_BATCH * 2;
const DIRS = MAX_CACHED_DIRS + 30;
const SEEDED = PUTS / 2;
const keyOf = (i: number): string => `runs/d${i % DIRS}/k${i}.json`;
const value = (i: number, state: 'old' | 'new'): string => `${state} ${i}`;

/** The real calls; from call `failAt` of an armed run on, one fails (`fault`) or every one does (`crash`). */
function faultyIo(): {
  io: FsIo;
  calls: () => number;
  arm(failAt: number, mode: 'fault' | 'crash'): void;
  /** Every later call fails (the process died now). */
  die(): void;
  disarm(): void;
} {
  let calls = 0;
  let failAt = Infinity;
  let mode: 'fault' | 'crash' = 'fault';
  let armed = false;
  const io = Object.fromEntries(
    Object.entries(realIo).map(([name, fn]) => [
      name,
      (...args: unknown[]): Promise<unknown> => {
        if (armed) {
          calls++;
          if (calls === failAt || (mode === 'crash' && calls > failAt))
            return Promise.reject(Object.assign(new Error(`EIO: injected at call ${calls} (${name})`), { code: 'EIO', syscall: name }));
        }
        return (fn as (...a: unknown[]) => Promise<unknown>)(...args);
      },
    ]),
  ) as unknown as FsIo;
  return {
    io,
    calls: () => calls,
    arm(at, m) {
      calls = 0;
      failAt = at;
      mode = m;
      armed = true;
    },
    die() {
      mode = 'crash';
      failAt = Math.min(failAt, calls);
    },
    disarm() {
      armed = false;
    },
  };
}

/** The old state: the first half of the keys, through another instance. */
async function seed(dir: string): Promise<void> {
  const s = fsStorage({ dir, journal: true });
  await s.batch!(
    Array.from({ length: SEEDED }, (_, i): BatchOperation => ({ type: 'put', key: keyOf(i), bytes: utf8Encode(value(i, 'old')) })),
  );
  await s.close();
}
const bigBatch = (): BatchOperation[] =>
  Array.from({ length: PUTS }, (_, i): BatchOperation => ({ type: 'put', key: keyOf(i), bytes: utf8Encode(value(i, 'new')) }));

/** 'old', 'new', or what else the files hold. */
function onDisk(dir: string): string {
  const states = Array.from({ length: PUTS }, (_, i) => {
    const path = join(dir, keyOf(i));
    if (!existsSync(path)) return i < SEEDED ? `k${i} missing` : 'old';
    const text = readFileSync(path, 'utf8');
    return text === value(i, 'new') ? 'new' : text === value(i, 'old') ? 'old' : `k${i} holds ${JSON.stringify(text)}`;
  });
  const kinds = [...new Set(states)];
  return kinds.length === 1 ? kinds[0]! : `a mix: ${kinds.join(', ')}`;
}

describe('fsStorage journal: a batch past the descriptor budget under faults and crashes', () => {
  it('property: after a fault or crash at any call, reopening finds the whole old or new state; an acknowledged batch is never lost', async () => {
    // Count the calls of one batch, its apply and the journal checkpoint at close.
    const probeDir = fresh();
    await seed(probeDir);
    const probe = faultyIo();
    const p = createFsStorage({ dir: probeDir, journal: true }, { io: probe.io });
    await p.ready();
    probe.arm(Infinity, 'fault');
    await p.batch!(bigBatch());
    await p.close();
    const steps = probe.calls();
    expect(onDisk(probeDir)).toBe('new');

    const seen = { acked: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: steps + 1 }), fc.constantFrom('fault' as const, 'crash' as const), async (step, mode) => {
        const dir = fresh();
        await seed(dir);
        const faults = faultyIo();
        const s = createFsStorage({ dir, journal: true }, { io: faults.io });
        await s.ready();
        faults.arm(step, mode);
        const acked = await s.batch!(bigBatch()).then(
          () => true,
          () => false,
        );
        seen[acked ? 'acked' : 'refused']++;
        // A live process (fault) closes its store, replaying what failed. A crashed one went on with
        // its applies until the crash point; it dies before another opens the store (it shares this process).
        if (mode === 'fault') {
          faults.disarm();
          await s.close().catch(() => undefined);
        } else {
          await s.flush!().catch(() => undefined);
          faults.die();
        }
        const reopened = fsStorage({ dir, journal: true, clock: later });
        await reopened.ready();
        const after = onDisk(dir);
        expect(['old', 'new'], `${mode} at call ${step}`).toContain(after);
        if (acked) expect(after, `${mode} at call ${step}: acknowledged batch lost`).toBe('new');
        expect(new TextDecoder().decode((await reopened.get(keyOf(0)))!.bytes)).toBe(value(0, after as 'old' | 'new'));
        await reopened.close();
        // No temp file survives a reopen.
        const debris = readdirSync(join(dir, 'runs'), { recursive: true })
          .map(String)
          .filter((n) => n.includes('.sp\\'));
        expect(debris, `${mode} at call ${step}`).toEqual([]);
      }),
      { numRuns: 30 },
    );
    expect(seen.acked + seen.refused).toBe(30);
  }, 300_000);
});
