/**
 * Leases and fencing on one process: a writer frozen inside its write (pausableStorage, the
 * in-process SIGSTOP) past its lease, a second writer taking over, the first waking up.
 * Both write paths: the atomic batch fenced by a `check` of the lock's version (memory), and
 * the sequential path fenced by claims in the lock document (memory without batch, as fs).
 */
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type StorageAdapter } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';
import { historyOf } from '../support/runs.js';
import { manualClock } from '../support/clock.js';
import { sequentialMemory } from '../support/storages.js';
import { pausableStorage } from './lease-helpers.js';

const run = 'run-f';
const lease = 30_000;
const hostA = { pid: 100, hostname: 'host-a' };
const hostB = { pid: 200, hostname: 'host-b' };
const lockKey = defaultProfile.layout.lockKey(run);
const isHistory = (key: string): boolean => defaultProfile.layout.classify(key)?.kind === 'history';

function writerOn(
  storage: StorageAdapter,
  clock: ReturnType<typeof manualClock>,
  identity: { pid: number; hostname: string },
  takeover: 'stale' | 'force' = 'stale',
) {
  return createWriter({
    storage,
    profile: defaultProfile,
    runId: run,
    clock,
    lock: true,
    lockLeaseMs: lease,
    lockIdentity: identity,
    heartbeatIntervalMs: false,
    takeover,
    maxAttempts: 1,
  });
}

const paths: [string, (s: StorageAdapter) => StorageAdapter][] = [
  ['atomic batch fenced by a check of the lock version', (s) => s],
  ['sequential writes fenced by claims in the lock document', (s) => sequentialMemory(s)],
];

describe.each(paths)('a writer paused past its lease (%s)', (_name, shape) => {
  it('has its in-flight checkpoint refused with checkpoint_run_locked after another writer took over; no sequence is used twice', async () => {
    const shared = shape(memoryStorage());
    const clock = manualClock();
    const viewA = pausableStorage(shared);
    const a = writerOn(viewA, clock, hostA);
    expect((await a.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 1 } })).ok).toBe(true);

    // Freeze A inside its next write: at the batch, or at its first history create.
    const frozen = viewA.pauseAt((c) => c.op === 'batch' || (c.op === 'put' && isHistory(c.key)));
    const inFlight = a.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 2 } });
    await frozen;
    await clock.advance(lease + 1); // A's renewal timer fires, but its request is frozen too

    const b = writerOn(shared, clock, hostB);
    const bFirst = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 'b1' } });
    expect(bFirst.ok).toBe(true);
    const bSecond = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 'b2' } });
    expect(bSecond.ok).toBe(true);

    viewA.resume();
    const stale = await inFlight;
    expect(stale.ok).toBe(false);
    expect(!stale.ok && stale.reasonCode).toBe('checkpoint_run_locked');
    expect(!stale.ok && stale.error.message).toMatch(/taken over.*pid 200 on host host-b, lease ends in \d+ s/);

    const history = await historyOf(shared, defaultProfile, run);
    const sequences = history.map((s) => s.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);
    // B's acknowledgements are in history as acknowledged, and nothing else holds their numbers.
    for (const r of [bFirst, bSecond]) {
      if (!r.ok) continue;
      expect(history.filter((s) => s.sequence === r.sequence).map((s) => s.id)).toEqual([r.snapshotId]);
    }
    // A stays out: later checkpoints are refused too, B goes on.
    const again = await a.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 3 } });
    expect(!again.ok && again.reasonCode).toBe('checkpoint_run_locked');
    const bThird = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 'b3' } });
    expect(bThird.ok && bSecond.ok && bThird.sequence).toBe(bSecond.ok ? bSecond.sequence + 1 : -1);
    await b.close();
    await a.close();
    expect(clock.pending).toBe(0);
  });

  it("takeover: 'force' takes the run from a live holder at once and fences the holder out", async () => {
    const shared = shape(memoryStorage());
    const clock = manualClock();
    const viewA = pausableStorage(shared);
    const a = writerOn(viewA, clock, hostA);
    expect((await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 })).ok).toBe(true);
    const frozen = viewA.pauseAt((c) => c.op === 'batch' || (c.op === 'put' && isHistory(c.key)));
    const inFlight = a.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    await frozen;

    const polite = writerOn(shared, clock, hostB);
    const refused = await polite.open();
    expect(!refused.ok && refused.reasonCode).toBe('checkpoint_run_locked');
    expect(!refused.ok && refused.error.message).toMatch(/held by pid 100 on host host-a, lease ends in 30 s .*takeover: 'force'/);
    expect(!refused.ok && refused.error.details).toMatchObject({ pid: 100, hostname: 'host-a', leaseEndsInMs: lease });

    const b = writerOn(shared, clock, hostB, 'force');
    const opened: boolean[] = [];
    b.on('opened', (e) => opened.push(e.tookOver));
    const r = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: 'b' });
    expect(r.ok).toBe(true);
    expect(opened).toEqual([true]);
    viewA.resume();
    const stale = await inFlight;
    expect(!stale.ok && stale.reasonCode).toBe('checkpoint_run_locked');
    const sequences = (await historyOf(shared, defaultProfile, run)).map((s) => s.sequence);
    expect(new Set(sequences).size).toBe(sequences.length);
    await a.close();
    await b.close();
  });
});

describe('claims in the lock document (stores without an atomic batch)', () => {
  it('a taker-over numbers after what the paused holder claimed, so the woken holder cannot reuse a number', async () => {
    const shared = sequentialMemory(memoryStorage());
    const clock = manualClock();
    const viewA = pausableStorage(shared);
    const a = writerOn(viewA, clock, hostA);
    await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    const frozen = viewA.pauseAt((c) => c.op === 'put' && isHistory(c.key)); // after its claim of #2
    const inFlight = a.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    await frozen;
    const doc = JSON.parse(utf8Decode((await shared.get(lockKey))!.bytes)) as { claimed_through?: number };
    expect(doc.claimed_through).toBe(2);
    await clock.advance(lease + 1);
    const b = writerOn(shared, clock, hostB);
    const r = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: 'b' });
    expect(r.ok && r.sequence).toBe(3);
    viewA.resume();
    const stale = await inFlight;
    expect(!stale.ok && stale.reasonCode).toBe('checkpoint_run_locked');
    // A's entry #2 landed (it was claimed in time) but was never acknowledged; B's #3 is latest.
    const history = await historyOf(shared, defaultProfile, run);
    expect(history.map((s) => s.sequence)).toEqual([1, 2, 3]);
    const latest = JSON.parse(utf8Decode((await shared.get(defaultProfile.layout.latestKey(run)))!.bytes)) as { sequence: number };
    expect(latest.sequence).toBe(3);
  });

  it('claims of a holder whose process is gone are reused: no gap after a crash on this host', async () => {
    const shared = sequentialMemory(memoryStorage());
    const clock = manualClock();
    const viewA = pausableStorage(shared);
    const a = writerOn(viewA, clock, { pid: 100, hostname: 'host-a' });
    await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    const frozen = viewA.pauseAt((c) => c.op === 'put' && isHistory(c.key));
    void a.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 }); // "killed" here: never resumed
    await frozen;
    const b = createWriter({
      storage: shared,
      profile: defaultProfile,
      runId: run,
      clock,
      lock: true,
      lockLeaseMs: lease,
      lockIdentity: { pid: 101, hostname: 'host-a' },
      isProcessAlive: (pid) => pid !== 100,
      heartbeatIntervalMs: false,
    });
    const r = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: 'b' });
    expect(r.ok && r.sequence).toBe(2);
    await b.close();
  });

  it('a lock document with a malformed claim is taken over without inheriting it', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const doc = {
      savepoint_lock: 1,
      run_id: run,
      owner: 'someone',
      pid: 7,
      hostname: 'host-z',
      acquired_at: '2025-01-01T00:00:00.000Z',
      lease_until: clock.now() - 1,
      claimed_through: 'many',
    };
    await storage.put(lockKey, utf8Encode(JSON.stringify(doc)));
    const b = writerOn(storage, clock, hostB);
    const r = await b.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(r.ok && r.sequence).toBe(1);
    await b.close();
  });

  it('an atomic store whose batch refuses check operations is fenced by claims instead', async () => {
    const inner = memoryStorage();
    const noCheck: StorageAdapter = {
      ...inner,
      name: 'memory-no-check',
      get: (k) => inner.get(k),
      put: (k, b, o) => inner.put(k, b, o),
      delete: (k, o) => inner.delete(k, o),
      list: (p) => inner.list(p),
      close: () => inner.close(),
      batch: async (ops) => {
        if (ops.some((op) => op.type === 'check')) {
          const { CheckpointError } = await import('savepoint');
          throw new CheckpointError('checkpoint_unsupported', 'no check operations here');
        }
        return inner.batch!(ops);
      },
    };
    const clock = manualClock();
    const a = writerOn(noCheck, clock, hostA);
    const first = await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(first.ok && first.sequence).toBe(1);
    const second = await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    expect(second.ok && second.sequence).toBe(2);
    const doc = JSON.parse(utf8Decode((await inner.get(lockKey))!.bytes)) as { claimed_through?: number };
    expect(doc.claimed_through).toBe(2);
    await a.close();
  });
});

describe('renewal', () => {
  it('a live idle writer keeps its run past many leases; renewal timers are background timers and close() clears them', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const timers: { ms: number; background: boolean }[] = [];
    const spy = {
      ...clock,
      now: () => clock.now(),
      setTimeout: (cb: () => void, ms: number, o?: { background?: boolean }) => (
        timers.push({ ms, background: o?.background === true }),
        clock.setTimeout(cb, ms, o)
      ),
      clearTimeout: (h: unknown) => clock.clearTimeout(h),
    };
    const a = createWriter({
      storage,
      profile: defaultProfile,
      runId: run,
      clock: spy,
      lock: true,
      lockLeaseMs: lease,
      lockIdentity: hostA,
      heartbeatIntervalMs: false,
    });
    expect((await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 })).ok).toBe(true);
    await clock.advance(lease * 5);
    const b = writerOn(storage, clock, hostB);
    const refused = await b.open();
    expect(!refused.ok && refused.reasonCode).toBe('checkpoint_run_locked');
    const renewals = timers.filter((t) => t.ms === lease / 3);
    expect(renewals.length).toBeGreaterThanOrEqual(15);
    expect(renewals.every((t) => t.background)).toBe(true);
    await a.close();
    expect(clock.pending).toBe(0);
    expect((await b.open()).ok).toBe(true);
    await b.close();
  });

  it('a renewal that finds the run taken over reports it (error event, during lease) and stops', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const a = writerOn(storage, clock, hostA);
    const errors: string[] = [];
    a.on('error', (e) => errors.push(`${e.during}:${e.reasonCode}`));
    await a.open();
    const b = writerOn(storage, clock, hostB, 'force');
    expect((await b.open()).ok).toBe(true);
    await clock.advance(lease);
    expect(errors).toContain('lease:checkpoint_run_locked');
    const r = await a.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_run_locked');
    await b.close();
    await a.close();
    expect(clock.pending).toBe(0);
  });
});
