import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type StorageAdapter } from 'savepoint';
import { utf8Decode } from '../../src/codec/utf8.js';
import { manualClock } from '../support/clock.js';
import { pausableStorage } from './lease-helpers.js';

const run = 'run-l';
const here = { pid: 4242, hostname: 'host-a' };

/** The writer options these tests vary. */
interface LockOptions {
  readonly isProcessAlive?: (pid: number) => boolean;
  readonly lockLeaseMs?: number;
  readonly heartbeatIntervalMs?: false;
}

/** A writer of `run` that takes the run lock as `identity`; `extra` adds the lease, the liveness probe, … */
function lockedWriter(
  storage: StorageAdapter,
  clock: ReturnType<typeof manualClock>,
  identity: { pid: number; hostname: string },
  extra: LockOptions = {},
) {
  return createWriter({ storage, profile: defaultProfile, runId: run, clock, lock: true, lockIdentity: identity, ...extra });
}

/** One manual checkpoint of `payload`. */
const step = (writer: ReturnType<typeof lockedWriter>, payload: number) =>
  writer.checkpoint({ source: 'manual', status: 'in_progress', payload });

describe('run lock (the two-writer rule: the second writer gets checkpoint_run_locked)', () => {
  it('a second writer on the same run is refused while the first holds it, and gets it after close()', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const a = lockedWriter(storage, clock, here);
    const b = lockedWriter(storage, clock, { pid: 4343, hostname: 'host-a' }, { isProcessAlive: () => true });
    expect((await step(a, 1)).ok).toBe(true);
    const lockDoc = JSON.parse(utf8Decode((await storage.get(defaultProfile.layout.lockKey(run)))!.bytes));
    expect(lockDoc).toMatchObject({ savepoint_lock: 1, run_id: run, pid: 4242, hostname: 'host-a' });
    const refused = await step(b, 2);
    expect(!refused.ok && refused.reasonCode).toBe('checkpoint_run_locked');
    expect(!refused.ok && refused.error.details).toMatchObject({ hostname: 'host-a', pid: 4242 });
    // What is known, never a guess: the probe said the process runs, and when the lease ends.
    expect(!refused.ok && refused.error.message).toContain('held by pid 4242 on this host (host-a), process running, lease ends in 30 s');
    expect((await b.open()).ok).toBe(false);
    await a.close();
    expect(await storage.get(defaultProfile.layout.lockKey(run))).toBeUndefined();
    const r = await step(b, 2);
    expect(r.ok && r.sequence).toBe(2);
  });

  it('takes over at once when the holder process on this host is dead (restart after SIGKILL)', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const a = lockedWriter(storage, clock, here);
    await step(a, 1);
    const opened: boolean[] = [];
    const b = lockedWriter(storage, clock, { pid: 5000, hostname: 'host-a' }, { isProcessAlive: (pid) => pid !== 4242 });
    b.on('opened', (e) => opened.push(e.tookOver));
    const r = await step(b, 2);
    expect(r.ok && r.sequence).toBe(2);
    expect(opened).toEqual([true]);
  });

  it('a holder on another host keeps the run while it renews; once frozen past its lease, the run is taken over and the holder is fenced', async () => {
    const shared = memoryStorage();
    const clock = manualClock();
    const lease = 60_000;
    const viewA = pausableStorage(shared);
    const a = lockedWriter(viewA, clock, here, { lockLeaseMs: lease, heartbeatIntervalMs: false });
    await step(a, 1);
    const b = lockedWriter(shared, clock, { pid: 1, hostname: 'host-b' }, { lockLeaseMs: lease, heartbeatIntervalMs: false });
    const early = await step(b, 2);
    expect(!early.ok && early.reasonCode).toBe('checkpoint_run_locked');
    expect(!early.ok && early.error.message).toContain('held by pid 4242 on host host-a, lease ends in 1 min');
    await clock.advance(lease * 3); // a renews on its timer
    expect((await b.open()).ok).toBe(false);
    viewA.pauseNow(); // SIGSTOP: a's renewals no longer reach the store
    await clock.advance(lease + 1);
    const late = await step(b, 3);
    expect(late.ok && late.sequence).toBe(2);
    viewA.resume();
    const fenced = await step(a, 4);
    expect(!fenced.ok && fenced.reasonCode).toBe('checkpoint_run_locked');
    const next = await step(b, 5);
    expect(next.ok && next.sequence).toBe(3);
  });

  it('writes renew the lease, so an active writer keeps its run', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const lease = 60_000;
    const a = lockedWriter(storage, clock, here, { lockLeaseMs: lease, heartbeatIntervalMs: false });
    for (let i = 0; i < 5; i++) {
      expect((await step(a, i)).ok).toBe(true);
      await clock.advance(40_000);
    }
    const b = lockedWriter(storage, clock, { pid: 1, hostname: 'host-b' }, { lockLeaseMs: lease });
    expect((await b.open()).ok).toBe(false);
  });

  it("lock 'auto' is off for in-process memory storage (crossProcessConditional: false)", async () => {
    const storage = memoryStorage();
    const a = createWriter({ storage, profile: defaultProfile, runId: run, clock: manualClock() });
    await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(await storage.get(defaultProfile.layout.lockKey(run))).toBeUndefined();
  });
});
