/**
 * A writer opening a long run without automatic retention, on a store that commits each
 * checkpoint in one atomic batch and has a linked read (the packed fs layout here, PostgreSQL in
 * tests/storage/postgres/writer-open.process.test.ts), learns the run from `latest` alone: the
 * index and the run's listing are read before the index's next rewrite. Whatever the sessions
 * before it did (closed, or abandoned mid-run), it numbers as a full recovery would, and the index
 * a closed run leaves lists every snapshot. With automatic retention it reads the index with
 * `latest` (a prune needs the run's history), and prunes as a writer reading every file does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type CheckpointResult, type JsonValue, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { decodeRunIndex, indexDeferral } from '../../src/codec/run-index.js';
import { utf8Encode } from '../../src/codec/utf8.js';
import { recoverRun } from '../../src/writer/sequence-recovery.js';
import { manualClock } from '../support/clock.js';
import { askedLinks, countingReads } from '../support/counting-storage.js';
import { historyOf } from '../support/runs.js';

const base = mkdtempSync(join(tmpdir(), 'savepoint-open-latest-'));
const stores: ReturnType<typeof fsStorage>[] = [];
afterAll(async () => {
  // An open store applies its journal to files in the background, writing into its folder: closed first.
  await Promise.all(stores.map((s) => s.close()));
  rmSync(base, { recursive: true, force: true });
});
let dirs = 0;
const packed = (): ReturnType<typeof fsStorage> => {
  const storage = fsStorage({ dir: join(base, `s-${dirs++}`), layout: 'packed' });
  stores.push(storage);
  return storage;
};

const writerOf = (storage: StorageAdapter, clock = manualClock()) =>
  createWriter<JsonValue>({
    storage,
    profile: defaultProfile,
    runId: 'run',
    clock,
    heartbeatIntervalMs: false,
    autoRetention: false,
    takeover: 'force',
  });

async function indexedSequences(storage: StorageAdapter): Promise<number[]> {
  const obj = await storage.get(defaultProfile.layout.indexKey!('run'));
  return obj ? decodeRunIndex(obj.bytes, 'index.json').checkpoints.map((e) => e.sequence) : [];
}

/** History entries the index does not list, and how many the writer may hold back (indexDeferral). */
async function indexLag(storage: StorageAdapter): Promise<{ readonly unindexed: number; readonly allowed: number }> {
  const listed = new Set(await indexedSequences(storage));
  const history = (await historyOf(storage, defaultProfile, 'run')).map((h) => h.sequence);
  const newest = Math.max(0, ...history);
  return { unindexed: history.filter((n) => !listed.has(n)).length, allowed: indexDeferral(listed.size, newest) };
}

async function fill(storage: StorageAdapter, count: number): Promise<void> {
  const clock = manualClock();
  const w = writerOf(storage, clock);
  for (let i = 1; i <= count; i++) {
    const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } });
    if (!r.ok) throw r.error;
    await clock.advance(1_000);
  }
  await w.close();
}

describe('a writer opening a run from latest alone', () => {
  it('property: after any sessions, closed or abandoned, it numbers as a full recovery does, the index lacks no more than one writer holds back, and a closed run is fully indexed', async () => {
    const session = fc.record({
      // Often fewer than the index's cadence: writers abandoned before their first index rewrite.
      checkpoints: fc.oneof(fc.nat(6), fc.nat(40)),
      // Every `repeat`-th call repeats the state: coalesced into the head, which only latest holds then.
      repeat: fc.integer({ min: 2, max: 5 }),
      close: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 120 }), fc.array(session, { minLength: 1, maxLength: 5 }), async (start, sessions) => {
        const storage = packed();
        try {
          await fill(storage, start);
          let last = start;
          const clock = manualClock();
          for (const s of sessions) {
            const expected = (await recoverRun(storage, defaultProfile, 'run')).lastSequence;
            const w = writerOf(storage, clock);
            const opened = await w.open();
            if (!opened.ok) throw opened.error;
            expect(opened.lastSequence).toBe(expected);
            expect(opened.lastSequence).toBe(last);
            for (let i = 0; i < s.checkpoints; i++) {
              // The clock moves before each checkpoint, not after: a lease renewal it sets off is then
              // written before that checkpoint, never still in flight when the session is abandoned and
              // the next writer takes the lease over (it would lose that race, as it should).
              await clock.advance(1_000);
              const step = i % s.repeat === s.repeat - 1 ? last : last + 1;
              const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step } });
              if (!r.ok) throw r.error;
              if (r.outcome === 'written') expect(r.sequence).toBe(++last);
            }
            if (s.close) await w.close(); // else abandoned: the next writer takes its lease over
            // Abandoned writers' held-back entries never add up: the next one recovers in full.
            const lag = await indexLag(storage);
            expect(lag.unindexed).toBeLessThanOrEqual(lag.allowed);
          }
          await writerOf(storage, clock).close(); // opens, writes nothing: the index as the sessions left it
          const closer = writerOf(storage, clock);
          const r = await closer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: last + 1 } });
          if (!r.ok) throw r.error;
          expect(r.sequence).toBe(++last);
          await closer.close();
          const history = (await historyOf(storage, defaultProfile, 'run')).map((h) => h.sequence).sort((a, b) => a - b);
          expect(history).toEqual(Array.from({ length: last }, (_, i) => i + 1));
          expect(await indexedSequences(storage)).toEqual(history);
        } finally {
          await storage.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('a run 100 long: open reads latest alone, the index is read and rewritten at its cadence (every 100/16 = 6), a closed run fully indexed', async () => {
    const storage = packed();
    await fill(storage, 100);
    const counted = countingReads(storage);
    const w = writerOf(counted.store);
    expect(await w.open()).toMatchObject({ ok: true, lastSequence: 100 });
    expect(counted.reads()).toBe(0); // the full recovery reads the index with a get on this layout
    for (let i = 1; i <= 5; i++)
      expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({
        ok: true,
        sequence: 100 + i,
      });
    expect(counted.reads()).toBe(0);
    expect(await indexedSequences(storage)).toHaveLength(100);
    expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 6 } })).toMatchObject({
      ok: true,
      sequence: 106,
    });
    // The run recovered in full before the rewrite: one read, the index; the five documents it
    // lacks are this writer's, whose entries it holds, and are not read again.
    expect(counted.reads()).toBe(1);
    expect(await indexedSequences(storage)).toEqual(Array.from({ length: 106 }, (_, i) => i + 1));
    expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 7 } })).toMatchObject({
      ok: true,
      sequence: 107,
    });
    expect(counted.reads()).toBe(1);
    await w.close();
    expect(await indexedSequences(storage)).toEqual(Array.from({ length: 107 }, (_, i) => i + 1));
  });

  it('writers abandoned one after another before their index rewrite: each next one takes the lease over and recovers in full, so the index lags by one deferral at most', async () => {
    const storage = packed();
    await fill(storage, 64); // the index is rewritten every 64/16 = 4 checkpoints
    const clock = manualClock();
    for (let session = 1; session <= 3; session++) {
      const counted = countingReads(storage);
      const w = writerOf(counted.store, clock);
      expect(await w.open()).toMatchObject({ ok: true });
      // The first writer found the lock free; the ones after take over an abandoned writer's.
      if (session === 1) expect(counted.reads()).toBe(0);
      else expect(counted.reads()).toBeGreaterThan(0);
      for (let i = 0; i < 3; i++) {
        await clock.advance(1_000);
        expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { session, i } })).toMatchObject({ ok: true });
      }
      const lag = await indexLag(storage);
      expect(lag.unindexed).toBeLessThanOrEqual(lag.allowed);
    }
  });

  it('closing after checkpoints the index still held back: the index is read and completed', async () => {
    const storage = packed();
    await fill(storage, 200);
    const w = writerOf(storage);
    for (let i = 1; i <= 3; i++)
      expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({ ok: true });
    expect(await indexedSequences(storage)).toHaveLength(200);
    await w.close();
    expect(await indexedSequences(storage)).toEqual(Array.from({ length: 203 }, (_, i) => i + 1));
  });

  it('recovers in full where latest alone does not suffice: latest gone or unreadable, a short run, openFromLatest: false', async () => {
    for (const change of ['gone', 'garbage', 'short', 'option'] as const) {
      const storage = packed();
      await fill(storage, change === 'short' ? 20 : 60);
      const latestKey = defaultProfile.layout.latestKey('run');
      if (change === 'gone') await storage.delete(latestKey);
      if (change === 'garbage') await storage.put(latestKey, utf8Encode('{"not": "a snapshot"'));
      const counted = countingReads(storage);
      const options = {
        storage: counted.store,
        profile: defaultProfile,
        runId: 'run',
        heartbeatIntervalMs: false,
        takeover: 'force',
      } as const;
      const w =
        change === 'option'
          ? createWriter<JsonValue>({ ...options, autoRetention: false, openFromLatest: false })
          : writerOf(counted.store);
      const opened = await w.open();
      expect(opened, change).toMatchObject({ ok: true, lastSequence: change === 'short' ? 20 : 60 });
      expect(counted.reads(), change).toBeGreaterThan(0);
      await w.close();
      await storage.close();
    }
  });

  it('history another program stored past latest: found before the index rewrite, that group fails with checkpoint_conflict, the next is numbered after it', async () => {
    const storage = packed();
    await fill(storage, 100);
    const latestKey = defaultProfile.layout.latestKey('run');
    const old = await storage.get(latestKey);
    // Ten entries stored, then latest put back as it was: what no crash of the writer leaves here.
    const other = createWriter<JsonValue>({
      storage,
      profile: defaultProfile,
      runId: 'run',
      heartbeatIntervalMs: false,
      autoRetention: false,
      openFromLatest: false,
    });
    for (let i = 1; i <= 10; i++)
      expect(await other.checkpoint({ source: 'manual', status: 'in_progress', payload: { other: i } })).toMatchObject({
        ok: true,
        sequence: 100 + i,
      });
    await other.close();
    await storage.put(latestKey, old!.bytes);
    const w = writerOf(storage);
    expect(await w.open()).toMatchObject({ ok: true, lastSequence: 100 });
    for (let i = 1; i <= 5; i++)
      expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({
        ok: true,
        sequence: 100 + i,
      });
    expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 6 } })).toMatchObject({
      ok: false,
      reasonCode: 'checkpoint_conflict',
    });
    expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i: 7 } })).toMatchObject({
      ok: true,
      sequence: 111,
    });
    await w.close();
    const history = (await historyOf(storage, defaultProfile, 'run')).map((h) => h.sequence);
    expect(Math.max(...history)).toBe(111);
    expect(history).toHaveLength(116); // 101-105 twice: the numbers latest could not tell
  });

  it('openFromLatest must be a boolean', () => {
    const storage = packed();
    const make = () =>
      createWriter<JsonValue>({ storage, profile: defaultProfile, runId: 'run', openFromLatest: 'yes' as unknown as boolean });
    expect(make).toThrow(
      expect.objectContaining({ reasonCode: 'checkpoint_config_invalid', message: expect.stringContaining('openFromLatest') }),
    );
  });
});

/** Keep-last 3 and the newest `failed`: prunes within a few checkpoints (bound 3 + slack 4). */
const keepThree: typeof defaultProfile = {
  ...defaultProfile,
  retention: {
    rules: [
      { rule: 'keep-last', count: 3 },
      { rule: 'keep-latest-status', status: 'failed' },
    ],
  },
};

const retainingWriter = (storage: StorageAdapter, clock: ReturnType<typeof manualClock>, openFromLatest: boolean) =>
  createWriter<JsonValue>({
    storage,
    profile: keepThree,
    runId: 'run',
    clock,
    heartbeatIntervalMs: false,
    takeover: 'force',
    openFromLatest,
  });

const outcomeOf = (r: CheckpointResult<JsonValue>) => (r.ok ? { outcome: r.outcome, sequence: r.sequence } : { reasonCode: r.reasonCode });

describe('a writer with automatic retention opening a run from latest and its index', () => {
  it('property: after any sessions, closed or abandoned, it numbers, prunes and indexes as a writer reading every file does, and after a closed session reads no listing', async () => {
    const session = fc.record({
      checkpoints: fc.oneof(fc.nat(6), fc.nat(30)),
      repeat: fc.integer({ min: 2, max: 5 }),
      // Every `failed`-th checkpoint fails: the newest failed one is kept past the bound.
      failed: fc.integer({ min: 3, max: 40 }),
      close: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 30 }), fc.array(session, { minLength: 1, maxLength: 5 }), async (start, sessions) => {
        const fromLatest = askedLinks(packed());
        const inFull = packed();
        const clock = manualClock();
        try {
          for (const storage of [fromLatest.store, inFull]) {
            const w = retainingWriter(storage, clock, storage !== inFull);
            for (let i = 1; i <= start; i++)
              expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } })).toMatchObject({
                ok: true,
              });
            await w.close();
          }
          let last = start;
          let closedBefore = true;
          for (const s of sessions) {
            const writers = [retainingWriter(fromLatest.store, clock, true), retainingWriter(inFull, clock, false)] as const;
            fromLatest.asked.length = 0;
            const opened = await Promise.all(writers.map((w) => w.open()));
            expect(opened[0]).toEqual(opened[1]);
            // A run the writer before closed is learned from latest and its index alone.
            if (closedBefore) expect(fromLatest.asked.filter((links) => links.entries !== undefined)).toEqual([]);
            for (let i = 0; i < s.checkpoints; i++) {
              await clock.advance(1_000);
              const step = i % s.repeat === s.repeat - 1 ? last : last + 1;
              const status = i % s.failed === s.failed - 1 ? 'failed' : 'in_progress';
              const results = await Promise.all(
                writers.map((w) => w.checkpoint({ source: 'step_boundary', status, payload: { step, status } })),
              );
              const [own, reference] = results as [CheckpointResult<JsonValue>, CheckpointResult<JsonValue>];
              // Ids are random: the same outcome and number.
              expect(outcomeOf(own)).toEqual(outcomeOf(reference));
              if (own.ok && own.outcome === 'written') last = own.sequence;
            }
            if (s.close) await Promise.all(writers.map((w) => w.close()));
            closedBefore = s.close;
            const [own, reference] = await Promise.all([fromLatest.store, inFull].map((st) => historyOf(st, keepThree, 'run')));
            expect(own!.map((h) => h.sequence).sort((a, b) => a - b)).toEqual(reference!.map((h) => h.sequence).sort((a, b) => a - b));
            expect(await indexedSequences(fromLatest.store)).toEqual(await indexedSequences(inFull));
          }
        } finally {
          await fromLatest.store.close();
          await inFull.close();
        }
      }),
      { numRuns: 30 },
    );
  });

  it('a run 60 long: open reads latest and the index, no listing; the run is kept within its bound from the first checkpoint', async () => {
    const storage = packed();
    const clock = manualClock();
    const first = retainingWriter(storage, clock, true);
    for (let i = 1; i <= 60; i++)
      expect(await first.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({ ok: true });
    await first.close();
    // Keep 3, slack 4: a group prunes to the newest 3 when the run holds more than 7 before it.
    expect(await indexedSequences(storage)).toEqual([56, 57, 58, 59, 60]);
    const counted = countingReads(storage);
    const spied = askedLinks(counted.store);
    const w = retainingWriter(spied.store, clock, true);
    expect(await w.open()).toMatchObject({ ok: true, lastSequence: 60 });
    expect(spied.asked).toEqual([{ keysIfAbsent: 'checkpoints/run/', first: { prefix: 'checkpoints/run/index.json', count: 1 } }]);
    expect(counted.reads()).toBe(1); // the packed layout leaves the index to a plain read
    const pruned: number[][] = [];
    w.on('pruned', (e) => pruned.push([...e.sequences]));
    for (let i = 61; i <= 64; i++)
      expect(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({
        ok: true,
        sequence: i,
      });
    expect(pruned).toEqual([[56, 57, 58, 59, 60]]); // before 64: 56-63 is 8 entries, the oldest 5 go
    expect(spied.asked).toHaveLength(1);
    expect(counted.reads()).toBe(2); // and the preserved runs list, read before a prune
    await w.close();
    expect(await indexedSequences(storage)).toEqual([61, 62, 63, 64]);
  });

  it("recovers in full when the index lacks latest's number (a close whose index write failed)", async () => {
    const storage = packed();
    const clock = manualClock();
    const indexKey = keepThree.layout.indexKey!('run');
    const first = retainingWriter(storage, clock, true);
    for (let i = 1; i <= 40; i++)
      expect(await first.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({ ok: true });
    await first.close();
    const before = await storage.get(indexKey);
    const second = retainingWriter(storage, clock, true);
    for (let i = 41; i <= 42; i++)
      expect(await second.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { i } })).toMatchObject({ ok: true });
    await second.close();
    await storage.put(indexKey, before!.bytes); // the index as it was before the second session
    const spied = askedLinks(storage);
    const third = retainingWriter(spied.store, clock, true);
    expect(await third.open()).toMatchObject({ ok: true, lastSequence: 42 });
    expect(spied.asked.map((links) => links.entries)).toEqual([undefined, 'checkpoints/run/']);
    await third.close();
    expect(await indexedSequences(storage)).toEqual(
      (await historyOf(storage, keepThree, 'run')).map((h) => h.sequence).sort((a, b) => a - b),
    );
  });
});
