/**
 * The automatic chunk sweep (writer/auto-sweep.ts): the writer's per-run bound deletes old
 * snapshots, and the chunks only they referenced are freed by sweeps it starts in the
 * background. No chunk a kept checkpoint references is ever deleted (DESIGN invariant 10) under
 * random checkpoints, random times and sweeps of another process at random points; the store's
 * chunks stay bounded over a long run; a failing sweep never fails a checkpoint; on a store shared
 * by processes, one sweeps at a time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  defaultProfile,
  defineProfile,
  keepLast,
  listAll,
  memoryStorage,
  sweepChunks,
  type CheckpointWriter,
  type JsonValue,
  type StorageAdapter,
} from 'savepoint';
import { readSnapshot, type WriterEventMap } from 'savepoint/toolkit';
import { faultyStorage, manualClock, type ManualClock, type OperationInfo } from 'savepoint/testing';
import { CHUNK_PREFIX } from '../../src/codec/chunking.js';
import { forgetWritten } from '../../src/snapshot-io/chunk-cut.js';
import { forgetChunks, HIDDEN_INFIX, KNOWN_CHUNK_TTL_MS } from '../../src/snapshot-io/chunk-store.js';
import { sweepSettled, SWEEP_LOCK_KEY } from '../../src/writer/auto-sweep.js';
import { createRunLock } from '../../src/writer/run-lock.js';
import { systemClock } from '../../src/contract/clock.js';
import { fsStorage } from 'savepoint/fs';
import { scratchDirs } from '../support/scratch.js';
import { prose } from '../support/prose.js';

const GRACE = 60 * 60 * 1000;
const newDir = scratchDirs('auto-sweep');

const { name: _n, description: _d, isTerminal: _t, trigger: _tr, ...defaultBase } = defaultProfile;
/** The default profile keeping 3 snapshots per run: the bound prunes every few checkpoints. */
const keepThree = defineProfile({ ...defaultBase, name: 'keep-three', retention: { name: 'keep-three', rules: [keepLast(3)] } });

/** A conversation's state after `n` turns: ten ~2 KB messages, message n % 10 replaced by turn n's (each state has chunks of its own). */
function conversation(seeds: readonly number[]): JsonValue {
  return { messages: seeds.map((s) => prose(s, 2000)) };
}

/** One conversation turn by turn: `turn(n)` is its state after turn n (see {@link conversation}). */
function conversationTurns(): (n: number) => JsonValue {
  const seeds = Array.from({ length: 10 }, (_, i) => 1000 + i);
  return (n) => {
    seeds[n % 10] = n;
    return conversation(seeds);
  };
}

/** Writers of two runs on one store, and what every snapshot they acknowledged holds. */
class World {
  readonly written = new Map<string, JsonValue>();
  readonly writers = new Map<string, CheckpointWriter>();
  readonly seeds = new Map<string, number[]>();
  readonly swept: WriterEventMap['swept'][] = [];
  readonly errors: WriterEventMap['error'][] = [];
  /** Reads go through another adapter over the same data: its own chunk cache, the writers' knowledge left alone. */
  readonly reader: StorageAdapter;
  /** Simulated time since the writers' knowledge of chunks was last dropped (it lasts KNOWN_CHUNK_TTL_MS of real time). */
  sinceForget = 0;
  constructor(
    readonly storage: StorageAdapter,
    readonly clock: ManualClock,
    readonly sweep: { afterDeleted: number; minIntervalMs: number },
  ) {
    this.reader = { ...storage };
  }
  writer(run: string): CheckpointWriter {
    let w = this.writers.get(run);
    if (!w) {
      w = createWriter({
        storage: this.storage,
        profile: keepThree,
        runId: run,
        clock: this.clock,
        heartbeatIntervalMs: false,
        sweepChunks: { ...this.sweep, graceMs: GRACE },
      });
      w.on('swept', (e) => this.swept.push(e));
      w.on('error', (e) => this.errors.push(e));
      this.writers.set(run, w);
    }
    return w;
  }
  async write(run: string, seed: number, again?: JsonValue): Promise<void> {
    const seeds = this.seeds.get(run) ?? Array.from({ length: 10 }, (_, i) => 1000 + i);
    seeds[Math.abs(seed) % seeds.length] = seed;
    this.seeds.set(run, seeds);
    const payload = again ?? conversation(seeds);
    const r = await this.writer(run).checkpoint({ source: 'step_boundary', status: 'in_progress', payload });
    if (!r.ok) throw r.error;
    this.written.set(r.key, payload);
    this.written.set(`checkpoints/${run}/latest.json`, payload);
  }
  async advance(ms: number): Promise<void> {
    await this.clock.advance(ms);
    this.sinceForget += ms;
    // A manual clock that moves past the writers' trust in what they know stands for that much real time.
    if (this.sinceForget >= KNOWN_CHUNK_TTL_MS) {
      forgetChunks(this.storage);
      forgetWritten(this.storage);
      this.sinceForget = 0;
    }
  }
  /** Every snapshot still stored reads back as it was written (while a sweep may be running). */
  async check(): Promise<number> {
    forgetChunks(this.reader);
    let read = 0;
    for (const entry of await listAll(this.reader, 'checkpoints/')) {
      const expected = this.written.get(entry.key);
      if (expected === undefined) continue;
      expect((await readSnapshot(this.reader, keepThree, entry.key))?.payload, entry.key).toEqual(expected);
      read++;
    }
    return read;
  }
  async close(): Promise<void> {
    for (const w of this.writers.values()) await w.close();
  }
}

type Step =
  | { kind: 'write'; run: number; seed: number }
  | { kind: 'again'; pick: number }
  | { kind: 'advance'; ms: number }
  | { kind: 'foreign-sweep'; beside: boolean; seed: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('write' as const), run: fc.nat({ max: 1 }), seed: fc.integer({ min: 1 }) }) },
  // A state written before, written again (a fork, a copy): its chunks may be hidden by now.
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('again' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 2 * GRACE }) }) },
  // A sweep of another process (runRetention, savepoint prune) at a random point, maybe beside a write.
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('foreign-sweep' as const), beside: fc.boolean(), seed: fc.integer({ min: 1 }) }),
  },
);

/** A storage operation of a sweep: deletes, or a batch, of chunk keys alone. */
const sweepsChunks = (op: OperationInfo): boolean =>
  (op.operation === 'delete' || op.operation === 'batch') && op.keys.length > 0 && op.keys.every((k) => k.startsWith(CHUNK_PREFIX));

describe('automatic chunk sweep', () => {
  it('never deletes a chunk a kept checkpoint references: random checkpoints, times and sweeps, the automatic bound on', async () => {
    let sweptTotal = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 10, maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom(0, 60_000, GRACE),
        async (steps, afterDeleted, minIntervalMs) => {
          const storage = memoryStorage();
          const clock = manualClock(0);
          const world = new World(storage, clock, { afterDeleted, minIntervalMs });
          const foreign: StorageAdapter = { ...storage }; // another process: its own knowledge of chunks
          const states: JsonValue[] = [];
          for (const s of steps) {
            if (s.kind === 'write') {
              await world.write(`r${s.run}`, s.seed);
              states.push(world.written.get(`checkpoints/r${s.run}/latest.json`)!);
            } else if (s.kind === 'again') {
              if (states.length > 0) await world.write('r1', 1, states[s.pick % states.length]);
            } else if (s.kind === 'advance') await world.advance(s.ms);
            else {
              const sweep = sweepChunks(foreign, { clock, graceMs: GRACE });
              if (s.beside) await Promise.all([sweep, world.write('r0', s.seed)]);
              else await sweep;
            }
            await world.check();
          }
          // Then checkpoints a grace period apart: their sweeps free what earlier ones found (where nothing is hidden, only a later sweep deletes).
          for (let round = 0; round < 3; round++) {
            await world.advance(GRACE);
            for (let j = 0; j < afterDeleted + 8; j++) await world.write('r0', 7000 + 100 * round + j);
            await sweepSettled(storage);
            await world.check();
          }
          await world.close();
          await world.check();
          expect(world.errors).toEqual([]);
          sweptTotal += world.swept.reduce((n, e) => n + e.hidden + e.deleted, 0);
        },
      ),
      { numRuns: 40 },
    );
    // The property is not vacuous: the writers' sweeps did hide and delete chunks.
    expect(sweptTotal).toBeGreaterThan(0);
  }, 180_000);

  it('a chunk another process hid, which a writer still trusts, is not deleted by the automatic sweep within the grace period', async () => {
    const storage = memoryStorage();
    const clock = manualClock(0);
    // The bound deletes 5 snapshots every 5 checkpoints (from the 9th): a sweep starts at every second prune.
    const world = new World(storage, clock, { afterDeleted: 8, minIntervalMs: 0 });
    const first = conversation(Array.from({ length: 10 }, (_, i) => 1000 + i));
    await world.write('r0', 1, first);
    for (let n = 2; n <= 9; n++) await world.write('r0', n);
    // Another process hides what the pruned snapshots alone referenced; this process's writer still trusts those chunks.
    expect((await sweepChunks({ ...storage }, { clock, graceMs: GRACE })).hidden.length).toBeGreaterThan(0);
    await world.advance(60_000);
    for (let n = 10; n <= 14; n++) await world.write('r0', n);
    await sweepSettled(storage);
    expect(world.swept.length).toBeGreaterThan(0);
    // Written again by a writer that trusts its chunks: its document references hidden ones, which must still be there.
    await world.write('r0', 15, first);
    await world.check();
    await world.close();
    await world.check();
  });

  it('a long run with the automatic bound keeps the store bounded: its chunks stop growing (without the sweep they grow with the run)', async () => {
    async function chunksOver(sweepChunksOption: boolean): Promise<number[]> {
      const storage = memoryStorage();
      const clock = manualClock(0);
      const writer = createWriter({
        storage,
        profile: defaultProfile,
        runId: 'long',
        clock,
        heartbeatIntervalMs: false,
        sweepChunks: sweepChunksOption,
      });
      const turn = conversationTurns();
      const counts: number[] = [];
      for (let n = 1; n <= 600; n++) {
        const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: turn(n) });
        if (!r.ok) throw r.error;
        // A checkpoint every 30 s: the default grace period (1 hour) passes every 120 checkpoints.
        await clock.advance(30_000);
        if (n % 100 === 0) counts.push((await listAll(storage, CHUNK_PREFIX)).length);
      }
      await writer.close();
      return counts;
    }
    const swept = await chunksOver(true);
    const unswept = await chunksOver(false);
    // Without the sweep each checkpoint leaves its own chunks behind; with it the count levels off.
    expect(unswept.at(-1)!).toBeGreaterThan(2.5 * unswept[1]!);
    expect(Math.max(...swept.slice(2))).toBeLessThanOrEqual(1.4 * swept[1]!);
    expect(swept.at(-1)!).toBeLessThan(unswept.at(-1)! / 2);
  }, 120_000);

  it('a failing sweep is an error event during retention, never a failed checkpoint, and the next sweep frees the chunks', async () => {
    const inner = memoryStorage();
    const clock = manualClock(0);
    // Every delete, or batch, of chunk keys alone fails (a sweep's; a writer's batches hold documents too).
    let failing = true;
    const storage = faultyStorage(inner, {
      at: (op) => (failing && sweepsChunks(op) ? 'fail' : undefined),
    });
    const writer = createWriter({
      storage,
      profile: keepThree,
      runId: 'r',
      clock,
      heartbeatIntervalMs: false,
      sweepChunks: { afterDeleted: 1, minIntervalMs: 0, graceMs: 0 },
    });
    const errors: WriterEventMap['error'][] = [];
    const swept: WriterEventMap['swept'][] = [];
    writer.on('error', (e) => errors.push(e));
    writer.on('swept', (e) => swept.push(e));
    const turn = conversationTurns();
    for (let n = 1; n <= 30; n++) {
      const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: turn(n) });
      expect(r.ok).toBe(true);
      await sweepSettled(storage);
    }
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.every((e) => e.during === 'retention')).toBe(true);
    failing = false;
    for (let n = 31; n <= 40; n++) {
      expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: turn(n) })).ok).toBe(true);
      await sweepSettled(storage);
    }
    await writer.close();
    expect(swept.some((e) => e.deleted > 0)).toBe(true);
    const hiddenLeft = (await listAll(inner, CHUNK_PREFIX)).filter((e) => e.key.includes(HIDDEN_INFIX));
    expect(hiddenLeft.length).toBeLessThan(40);
  });

  it.each([
    ['memoryStorage', (): StorageAdapter => memoryStorage()],
    ['fsStorage', (): StorageAdapter => fsStorage({ dir: newDir() })],
  ] as const)('on %s the automatic sweep frees chunks without ever hiding one, and every kept snapshot reads back', async (_name, make) => {
    const storage = make();
    const clock = manualClock(0);
    const writer = createWriter({
      storage,
      profile: keepThree,
      runId: 'r',
      clock,
      heartbeatIntervalMs: false,
      sweepChunks: { afterDeleted: 1, minIntervalMs: 0, graceMs: GRACE },
    });
    const swept: WriterEventMap['swept'][] = [];
    writer.on('swept', (e) => swept.push(e));
    const turn = conversationTurns();
    for (let n = 1; n <= 24; n++) {
      expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: turn(n) })).ok).toBe(true);
      await sweepSettled(storage);
      expect((await listAll(storage, CHUNK_PREFIX)).filter((e) => e.key.includes(HIDDEN_INFIX))).toEqual([]);
      await clock.advance(GRACE / 8);
    }
    await writer.close();
    expect(swept.every((e) => e.hidden === 0)).toBe(true);
    expect(swept.some((e) => e.deleted > 0)).toBe(true);
    for (const entry of await listAll(storage, 'checkpoints/r/history/'))
      expect(await readSnapshot(storage, defaultProfile, entry.key), entry.key).toBeDefined();
    await storage.close();
  });

  it('sweepChunks: false, autoRetention: false or dedup: false start no sweep; a bad option is checkpoint_config_invalid', async () => {
    for (const options of [{ sweepChunks: false }, { autoRetention: false }, { dedup: false }] as const) {
      const storage = memoryStorage();
      const writer = createWriter({ storage, profile: keepThree, runId: 'r', heartbeatIntervalMs: false, ...options });
      let swept = 0;
      writer.on('swept', () => swept++);
      const turn = conversationTurns();
      for (let n = 1; n <= 20; n++) {
        expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: turn(n) })).ok).toBe(true);
      }
      await writer.close();
      expect(swept, JSON.stringify(options)).toBe(0);
      expect((await listAll(storage, CHUNK_PREFIX)).filter((e) => e.key.includes(HIDDEN_INFIX))).toEqual([]);
    }
    for (const bad of ['yes', 0, { afterDeleted: 0 }, { afterDeleted: 1.5 }, { minIntervalMs: -1 }, { graceMs: Number.NaN }, null]) {
      expect(
        () => createWriter({ storage: memoryStorage(), profile: keepThree, runId: 'r', sweepChunks: bad as never }),
        String(bad),
      ).toThrow(expect.objectContaining({ reasonCode: 'checkpoint_config_invalid' }));
    }
  });

  it('on fs, a sweep takes the store-wide sweep lease: while another process holds it, no sweep runs; after, sweeps go on', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir });
    const other = fsStorage({ dir }); // another process's adapter over the same directory
    const held = createRunLock({
      storage: other,
      key: SWEEP_LOCK_KEY,
      runId: 'chunk-sweep',
      owner: 'other-process',
      identity: { pid: process.pid, hostname: 'here' },
      leaseMs: 60 * 60 * 1000,
      clock: systemClock,
      isProcessAlive: () => true,
      takeover: 'stale',
      atomic: false,
    });
    await held.acquire();
    const writer = createWriter({
      storage,
      profile: keepThree,
      runId: 'r',
      heartbeatIntervalMs: false,
      sweepChunks: { afterDeleted: 1, minIntervalMs: 0, graceMs: 0 },
    });
    const swept: WriterEventMap['swept'][] = [];
    const errors: WriterEventMap['error'][] = [];
    writer.on('swept', (e) => swept.push(e));
    writer.on('error', (e) => errors.push(e));
    const turn = conversationTurns();
    const write = async (n: number): Promise<void> => {
      expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: turn(n) })).ok).toBe(true);
      await sweepSettled(storage);
    };
    for (let n = 1; n <= 20; n++) await write(n);
    expect(swept).toEqual([]);
    expect((await listAll(storage, CHUNK_PREFIX)).filter((e) => e.key.includes(HIDDEN_INFIX))).toEqual([]);
    await held.release();
    for (let n = 21; n <= 30; n++) await write(n);
    await writer.close();
    expect(errors).toEqual([]);
    expect(swept.some((e) => e.hidden + e.deleted > 0)).toBe(true); // sweeps went on: the automatic sweep frees without hiding on fs
    expect(await storage.get(SWEEP_LOCK_KEY)).toBeUndefined(); // released after each sweep
    await storage.close();
    await other.close();
  });
});
