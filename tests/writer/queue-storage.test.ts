import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, memoryStorage, type BatchOperation, type StorageAdapter } from 'savepoint';
import { decodeBatchFile, decodeRunIndex, readSnapshot, type BufferedStorage, type RateBudget } from 'savepoint/toolkit';
import { faultyStorage } from 'savepoint/testing';
import { gatedStorage, sequentialMemory } from '../support/storages.js';
import { historyOf, latestOf } from '../support/runs.js';
import { instantTimerClock, manualClock, tick } from '../support/clock.js';
import { phasedLike } from '../support/profiles.js';

const run = 'run-q';

describe('serialization and group commit', () => {
  it('queued checkpoints are committed as one group: every history entry, latest and index once', async () => {
    const storage = gatedStorage(sequentialMemory());
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    storage.hold();
    const first = w.checkpoint({ source: 'manual', status: 'in_progress', payload: 0 });
    await tick();
    await tick();
    const rest = Array.from({ length: 10 }, (_, i) => w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: i + 1 }));
    storage.release();
    const results = await Promise.all([first, ...rest]);
    expect(results.map((r) => r.ok && r.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    const latestWrites = storage.writes.filter((x) => x.endsWith('latest.json'));
    const indexWrites = storage.writes.filter((x) => x.endsWith('index.json'));
    const historyWrites = storage.writes.filter((x) => x.includes('/history/'));
    expect([historyWrites.length, latestWrites.length, indexWrites.length]).toEqual([11, 2, 2]);
    expect((await latestOf(storage, defaultProfile, run))!.payload).toBe(10);
    const index = decodeRunIndex((await storage.get(defaultProfile.layout.indexKey!(run)))!.bytes);
    expect(index.checkpoints.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('answers checkpoint_backpressure when the queue is full, and recovers once it drains', async () => {
    const storage = gatedStorage();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock: manualClock(), maxQueue: 2 });
    const pressure: number[] = [];
    w.on('error', (e) => e.reasonCode === 'checkpoint_backpressure' && pressure.push(1));
    storage.hold();
    const inFlight = w.checkpoint({ source: 'manual', status: 'in_progress', payload: 0 });
    await tick();
    await tick();
    const q1 = w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    const q2 = w.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    const rider = w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 2 });
    const full = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 3 });
    expect(!full.ok && full.reasonCode).toBe('checkpoint_backpressure');
    expect(pressure.length).toBe(1);
    storage.release();
    const rs = await Promise.all([inFlight, q1, q2, rider]);
    expect(rs.map((r) => r.ok && `${r.outcome}#${r.sequence}`)).toEqual(['written#1', 'written#2', 'written#3', 'coalesced#3']);
    const after = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 3 });
    expect(after.ok && after.sequence).toBe(4);
  });
});

describe('sequence numbers recovered from storage', () => {
  it('a new writer continues the numbering of an existing run', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w1 = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    for (let i = 0; i < 3; i++) await w1.checkpoint({ source: 'manual', status: 'in_progress', payload: i });
    await w1.close();
    const w2 = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const opened = await w2.open();
    expect(opened).toEqual({ ok: true, lastSequence: 3 });
    const r = await w2.checkpoint({ source: 'manual', status: 'in_progress', payload: 9 });
    expect(r.ok && r.sequence).toBe(4);
  });

  it('counts a history entry newer than latest and index (crash between the writes), and part files', async () => {
    const inner = memoryStorage();
    const clock = manualClock();
    const w1 = createWriter({ storage: sequentialMemory(inner), profile: defaultProfile, runId: run, clock });
    await w1.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    // Crash right after the history entry of snapshot 2: latest and index still say 1.
    const crashing = faultyStorage(sequentialMemory(inner), {
      at: (op) => (op.operation === 'put' && op.keys[0]!.endsWith('latest.json') ? 'crash' : undefined),
    });
    const w2 = createWriter({ storage: crashing, profile: defaultProfile, runId: run, clock, maxAttempts: 1 });
    const lost = await w2.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    expect(lost.ok).toBe(false);
    expect((await latestOf(inner, defaultProfile, run))!.sequence).toBe(1);
    expect((await historyOf(inner, defaultProfile, run)).map((s) => s.sequence)).toEqual([1, 2]);
    const w3 = createWriter({ storage: inner, profile: defaultProfile, runId: run, clock });
    const r = await w3.checkpoint({ source: 'manual', status: 'in_progress', payload: 3 });
    expect(r.ok && r.sequence).toBe(3);
    const index = decodeRunIndex((await inner.get(defaultProfile.layout.indexKey!(run)))!.bytes);
    expect(index.checkpoints.map((e) => e.sequence)).toEqual([1, 2, 3]); // the orphan entry is indexed again
    // Orphan part files of a snapshot that never got its document still hold their number.
    await inner.put(defaultProfile.layout.partKey!({ runId: run, id: 'x', sequence: 7, source: 'manual' }, '1.json'), new Uint8Array([49]));
    const w4 = createWriter({ storage: inner, profile: defaultProfile, runId: run, clock });
    const r4 = await w4.checkpoint({ source: 'manual', status: 'in_progress', payload: 4 });
    expect(r4.ok && r4.sequence).toBe(8);
  });

  it('ignores a corrupt latest for numbering but never overwrites history with it', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w1 = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    await w1.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    await w1.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    await storage.put(defaultProfile.layout.latestKey(run), new TextEncoder().encode('{"broken":'));
    const w2 = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const r = await w2.checkpoint({ source: 'manual', status: 'in_progress', payload: 3 });
    expect(r.ok && r.sequence).toBe(3);
    expect((await latestOf(storage, defaultProfile, run))!.payload).toBe(3);
  });
});

describe('size limit', () => {
  it('splits an oversized snapshot into part files written before the document, read back transparently', async () => {
    const inner = memoryStorage();
    const storage = faultyStorage(sequentialMemory(inner), { count: 'writes' });
    const w = createWriter({ storage, profile: phasedLike, runId: run, clock: manualClock(), maxSnapshotBytes: 4096 });
    const blob = Array.from({ length: 60 }, (_, i) => `item-${i}-${'x'.repeat(100)}`);
    const r = await w.checkpoint({ source: 'phase_complete', status: 'in_progress', payload: { phase: 'phase_1_a', cost: 1, blob } });
    expect(r.ok && r.outcome).toBe('written');
    const keys = storage.log.filter((x) => x.operation === 'put').map((x) => x.keys[0]!);
    const partKeys = keys.filter((k) => k.includes('/parts/1/'));
    expect(partKeys.length).toBeGreaterThan(1);
    expect(keys.indexOf('checkpoints/run-q/cp_001_phase_complete.json')).toBeGreaterThan(keys.lastIndexOf(partKeys.at(-1)!));
    for (const k of keys) expect((await inner.get(k))!.bytes.length).toBeLessThanOrEqual(4096);
    const back = await readSnapshot(inner, phasedLike, 'checkpoints/run-q/cp_001_phase_complete.json');
    expect(back!.payload.blob).toEqual(blob);
    expect((await readSnapshot(inner, phasedLike, phasedLike.layout.latestKey(run)))!.payload.blob).toEqual(blob);
  });

  it("rejects with checkpoint_too_large when onOversize is 'reject', without using a number", async () => {
    const storage = memoryStorage();
    const w = createWriter({
      storage,
      profile: phasedLike,
      runId: run,
      clock: manualClock(),
      maxSnapshotBytes: 1024,
      onOversize: 'reject',
    });
    const r = await w.checkpoint({
      source: 'phase_complete',
      status: 'in_progress',
      payload: { phase: 'p', cost: 1, blob: ['y'.repeat(2000)] },
    });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_too_large');
    expect(await listAll(storage, '')).toEqual([]);
    const ok = await w.checkpoint({ source: 'phase_complete', status: 'in_progress', payload: { phase: 'p', cost: 1 } });
    expect(ok.ok && ok.sequence).toBe(1);
  });

  it('defaults to 10 MB and honours the adapter maxValueBytes', async () => {
    const w = createWriter({
      storage: memoryStorage({ maxValueBytes: 2048 }),
      profile: phasedLike,
      runId: run,
      clock: manualClock(),
      onOversize: 'reject',
    });
    const r = await w.checkpoint({
      source: 'phase_complete',
      status: 'in_progress',
      payload: { phase: 'p', cost: 1, blob: ['y'.repeat(3000)] },
    });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_too_large');
    expect(phasedLike.maxSnapshotBytes).toBe(10 * 1024 * 1024);
  });
});

describe('fail-forward', () => {
  it('a failing store resolves ok:false with a reason code, fires error and retry events, and later checkpoints work', async () => {
    const inner = memoryStorage();
    let failing = true;
    const storage = faultyStorage(inner, { at: (op) => (failing && op.operation === 'batch' ? 'fail' : undefined) });
    const clock = instantTimerClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock, retryBaseMs: 100 });
    const events: string[] = [];
    w.on('retry', (e) => events.push(`retry ${e.attempt} ${e.delayMs} ${e.reasonCode}`));
    w.on('error', (e) => events.push(`error ${e.during} ${e.reasonCode}`));
    const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(!r.ok && r.reasonCode).toBe('checkpoint_storage_unavailable');
    expect(events).toEqual([
      'retry 1 100 checkpoint_storage_unavailable',
      'retry 2 200 checkpoint_storage_unavailable',
      'error write checkpoint_storage_unavailable',
    ]);
    failing = false;
    const ok = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    expect(ok.ok && ok.sequence).toBe(1); // nothing of the failed attempt landed, so its number is free
  });

  it('retries with backoff on the injected clock and succeeds when the store comes back', async () => {
    const inner = memoryStorage();
    const storage = faultyStorage(inner, { at: [0, 1], count: 'writes' });
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const retries: [number, number][] = [];
    w.on('retry', (e) => retries.push([e.attempt, e.delayMs]));
    let settled = false;
    const p = w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 }).finally(() => (settled = true));
    for (let i = 0; i < 100 && !settled; i++) await clock.advance(50);
    const r = await p;
    expect(r.ok && r.sequence).toBe(1);
    expect(retries).toEqual([
      [1, 200],
      [2, 400],
    ]);
  });

  it("failMode 'throw' rejects with the storage error", async () => {
    const storage = faultyStorage(memoryStorage(), { at: () => 'fail' });
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock: instantTimerClock(), failMode: 'throw', maxAttempts: 2 });
    await expect(w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 })).rejects.toMatchObject({
      reasonCode: 'checkpoint_storage_unavailable',
    });
  });

  it("reports 'queued' when the adapter accepted the write into its durable-later queue", async () => {
    const inner = sequentialMemory();
    const pendingStore: StorageAdapter = { ...inner, put: async (k, b, o) => ({ ...(await inner.put(k, b, o)), pending: true }) };
    const w = createWriter({ storage: pendingStore, profile: defaultProfile, runId: run, clock: manualClock() });
    const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(r.ok && r.outcome).toBe('queued');
  });

  it("reports 'queued' when an atomic batch was accepted into the adapter's queue, and 'written' when it was not", async () => {
    let queueing = true;
    const inner = memoryStorage();
    const batchStore: StorageAdapter = {
      ...inner,
      batch: async (ops) => (await inner.batch!(ops)).map((o) => (o.type === 'put' && queueing ? { ...o, pending: true } : o)),
    };
    const w = createWriter({ storage: batchStore, profile: defaultProfile, runId: run, clock: manualClock() });
    const first = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(first.ok && first.outcome).toBe('queued');
    queueing = false;
    const second = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    expect(second.ok && second.outcome).toBe('written');
  });
});

/** A rate-limited fake backend: counts requests, reports a budget. */
function rateLimitedStore(low: () => boolean, atomic: boolean): BufferedStorage & { requests: string[]; hold(): void; release(): void } {
  const g = gatedStorage(atomic ? memoryStorage() : sequentialMemory());
  const requests: string[] = [];
  const budget = (): RateBudget => ({ remaining: low() ? 50 : 4000, limit: 5000, resetAtMs: 0, low: low() });
  const store: BufferedStorage & { requests: string[]; hold(): void; release(): void } = {
    name: 'rate-limited',
    capabilities: { atomicBatch: atomic, crossProcessConditional: false },
    requests,
    hold: () => g.hold(),
    release: () => g.release(),
    get: (k) => (requests.push(`get ${k}`), g.get(k)),
    put: (k, b, o) => (requests.push(`put ${k}`), g.put(k, b, o)),
    delete: (k, o) => g.delete(k, o),
    list: (p) => g.list(p),
    rateBudget: budget,
    close: () => g.close(),
  };
  if (atomic) store.batch = (ops: readonly BatchOperation[]) => (requests.push(`batch ${ops.map((o) => o.key).join(' ')}`), g.batch!(ops));
  return store;
}

describe('rate-limited backends (phased-workflow-github.md batching_strategy)', () => {
  for (const atomic of [true, false]) {
    it(`writes queued checkpoints as one batch file plus latest and index when the budget is low (atomic=${atomic})`, async () => {
      let low = false;
      const storage = rateLimitedStore(() => low, atomic);
      const w = createWriter({ storage, profile: phasedLike, runId: run, clock: manualClock() });
      await w.checkpoint({ source: 'phase_complete', status: 'in_progress', payload: { phase: 'p0', cost: 0 } });
      low = true;
      storage.hold();
      const first = w.checkpoint({ source: 'phase_complete', status: 'in_progress', payload: { phase: 'p1', cost: 1 } });
      await tick();
      await tick();
      const queued = [2, 3, 4].map((n) =>
        w.checkpoint({ source: 'gate_decision', status: 'in_progress', payload: { phase: `p${n}`, cost: n } }),
      );
      storage.requests.length = 0;
      storage.release();
      const results = await Promise.all([first, ...queued]);
      expect(results.map((r) => r.ok && r.sequence)).toEqual([2, 3, 4, 5]);
      const batchKey = 'checkpoints/run-q/batch_3_5.json';
      expect(results.slice(1).map((r) => r.ok && r.key)).toEqual([batchKey, batchKey, batchKey]);
      const writes = storage.requests.filter((r) => !r.startsWith('get'));
      if (atomic) expect(writes.at(-1)).toBe(`batch ${batchKey} checkpoints/run-q/latest.json checkpoints/run-q/index.json`);
      else expect(writes.slice(-3)).toEqual([`put ${batchKey}`, 'put checkpoints/run-q/latest.json', 'put checkpoints/run-q/index.json']);
      const members = await decodeBatchFile(storage, phasedLike, batchKey, (await storage.get(batchKey))!.bytes);
      expect(members.map((m) => m.ok && m.snapshot.sequence)).toEqual([3, 4, 5]);
      const index = decodeRunIndex((await storage.get(phasedLike.layout.indexKey!(run)))!.bytes);
      expect(index.checkpoints.map((e) => [e.sequence, e.file_path])).toEqual([
        [1, 'checkpoints/run-q/cp_001_phase_complete.json'],
        [2, 'checkpoints/run-q/cp_002_phase_complete.json'],
        [3, batchKey],
        [4, batchKey],
        [5, batchKey],
      ]);
      expect((await latestOf(storage, phasedLike, run))!.sequence).toBe(5);
      // A new writer recovers the numbering from the batch file.
      const w2 = createWriter({ storage, profile: phasedLike, runId: run, clock: manualClock() });
      expect(await w2.open()).toEqual({ ok: true, lastSequence: 5 });
      // A coalesced trigger into a snapshot stored in a batch file rewrites that member.
      const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { phase: 'p4', cost: 4 } });
      expect(r.ok && [r.outcome, r.key]).toEqual(['coalesced', batchKey]);
      const again = await decodeBatchFile(storage, phasedLike, batchKey, (await storage.get(batchKey))!.bytes);
      expect(again[2]!.ok && again[2]!.snapshot.sourceDetails.map((d) => d.source)).toEqual(['manual']);
    });
  }
});
