/**
 * Where a group's durable write is made under the default `writes: 'adaptive'`: a lone call's on
 * the event loop (no thread-pool round trip for a thread checkpointing alone), calls made together
 * on the pool; a lone write that fails acknowledges nothing and the store goes on; and the sync a
 * store makes where the platform has no `O_DSYNC`.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { storeContents } from '../../support/store-contents.js';
import { LONE_WRITE_MAX_BYTES } from '../../../src/storage/fs-packed/commit.js';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { syncOf } from '../../../src/storage/fs-packed/open.js';
import {
  LONE_PROBE_EVERY,
  LONE_PROBE_EVERY_MAX,
  LONE_PROBE_RUN,
  LOOP_WRITE_MAX_MS,
  LOOP_WRITE_STALL_MS,
  lonePlace,
  noteLoneWrite,
  SLOW_LOOP_PROBE_EVERY,
  untimedLoneWrites,
} from '../../../src/storage/fs-packed/lone.js';
import { MAGIC } from '../../../src/storage/fs-packed/record.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('fs-packed-lone');
let n = 0;
const encoder = new TextEncoder();

/** Whether `bytes` begin with a record (not the zeros written ahead of the records). */
const isRecords = (bytes: Uint8Array): boolean =>
  bytes.length >= 4 && Buffer.from(bytes.buffer, bytes.byteOffset, 4).readUInt32LE(0) === MAGIC;

/**
 * The real calls, the writes of records counted by where they are made: on the pool (`writeAt`) or
 * on the event loop (`writeAtSync`); and a clock that each write moves on by `loopMs` or `poolMs`,
 * so that lone writes are timed as the test chooses.
 */
function countingIo(
  loopMs = 0.1,
  poolMs = 0.2,
): { io: PackedIo; now: () => number; counts: { pool: number; loop: number }; failNextLoopWrite: () => void } {
  const counts = { pool: 0, loop: 0 };
  let clock = 0;
  let fail = false;
  const io: PackedIo = {
    ...realPackedIo,
    writeAt(fd, bytes, position) {
      if (isRecords(bytes)) counts.pool++;
      clock += poolMs;
      return realPackedIo.writeAt(fd, bytes, position);
    },
    writeAtSync(fd, bytes, position) {
      if (isRecords(bytes)) counts.loop++;
      clock += loopMs;
      if (!fail) return realPackedIo.writeAtSync(fd, bytes, position);
      fail = false;
      // Half the bytes land, then the write fails: a torn group the store must cut before appending.
      realPackedIo.writeAtSync(fd, bytes.subarray(0, bytes.length >> 1), position);
      throw Object.assign(new Error('injected fault in writeAtSync'), { code: 'EIO', syscall: 'write' });
    },
  };
  return { io, now: () => clock, counts, failNextLoopWrite: () => (fail = true) };
}

/** A store over `counting`'s calls and clock, in a new directory. */
const countedStore = (label: string, counting: ReturnType<typeof countingIo>): ReturnType<typeof createPackedFsStorage> =>
  createPackedFsStorage({ dir: join(base, `${label}-${n++}`) }, { io: counting.io, now: counting.now });

/** `count` lone supersteps (a batch, then a put, each awaited). */
async function loneSteps(store: ReturnType<typeof createPackedFsStorage>, count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    await store.batch([{ type: 'put', key: `writes/${i}`, bytes: encoder.encode(`w${i}`) }]);
    await store.put(`checkpoint/${i}`, encoder.encode(`c${i}`));
  }
}

describe('packed fs store: where a group is written (default options)', () => {
  it('a thread writing alone makes its writes on the event loop where they return sooner: on the pool only its first group, a run to time it, and a probe run after 64', async () => {
    const counting = countingIo(0.1, 0.2);
    const store = countedStore('lone', counting);
    await loneSteps(store, 40);
    // The first group follows none (the pool); then a run on the loop and one on the pool time each place; then the loop, but for a run on the pool after 64.
    expect(counting.counts).toEqual({ pool: 1 + 2 * LONE_PROBE_RUN, loop: 79 - 2 * LONE_PROBE_RUN });
    expect(store.stats()).toMatchObject({ writes: 80, loopWrites: 79 - 2 * LONE_PROBE_RUN });
    await store.close();
  });

  it('where lone writes on the loop return later than on the pool (a loaded machine), lone groups go to the pool, the loop tried in a run every 64', async () => {
    const counting = countingIo(2, 0.2);
    const store = countedStore('contended', counting);
    await loneSteps(store, 40);
    expect(counting.counts).toEqual({ pool: 80 - 2 * LONE_PROBE_RUN, loop: 2 * LONE_PROBE_RUN });
    await store.close();
  });

  it('calls made together go to the pool as one group, and so does the lone call right after them', async () => {
    const counting = countingIo();
    const store = countedStore('together', counting);
    await loneSteps(store, 2);
    const loopBefore = counting.counts.loop;
    const poolBefore = counting.counts.pool;
    await Promise.all([0, 1, 2, 3].map((i) => store.put(`t${i}`, encoder.encode(`${i}`))));
    await store.put('after', encoder.encode('x'));
    expect(counting.counts.loop - loopBefore).toBe(0);
    expect(counting.counts.pool - poolBefore).toBe(2);
    // Lone again: back on the loop.
    await store.put('later', encoder.encode('y'));
    expect(counting.counts.loop - loopBefore).toBe(1);
    await store.close();
  });

  it(`a lone group larger than ${LONE_WRITE_MAX_BYTES} bytes is written on the pool (the loop is not held through a large write)`, async () => {
    const counting = countingIo();
    const store = countedStore('large', counting);
    await loneSteps(store, 2);
    const before = { ...counting.counts };
    await store.put('large', new Uint8Array(LONE_WRITE_MAX_BYTES).fill(1));
    expect(counting.counts).toEqual({ pool: before.pool + 1, loop: before.loop });
    expect((await store.get('large'))?.bytes.length).toBe(LONE_WRITE_MAX_BYTES);
    await store.close();
  });

  it('a lone write on the loop that fails (half its bytes landed): its call fails, the store cuts the torn bytes and goes on; reopened, every acknowledged write is there and the failed one is not', async () => {
    // A lone write goes to the loop but in the pool's first run (the first group follows none; then a run times the loop, one the pool).
    const onLoop = fc.oneof(fc.integer({ min: 1, max: LONE_PROBE_RUN }), fc.integer({ min: 1 + 2 * LONE_PROBE_RUN, max: 14 }));
    await fc.assert(
      fc.asyncProperty(onLoop, fc.integer({ min: 1, max: 4 }), async (failAfter, later) => {
        const dir = join(base, `fail-${n++}`);
        const counting = countingIo();
        const store = createPackedFsStorage({ dir }, { io: counting.io, now: counting.now });
        const acknowledged = new Map<string, string>();
        for (let i = 0; i < failAfter; i++) acknowledged.set(`k${i}`, (await store.put(`k${i}`, encoder.encode(`v${i}`))).version);
        const loopBefore = counting.counts.loop;
        counting.failNextLoopWrite();
        await expect(store.put('failed', encoder.encode('never acknowledged'))).rejects.toMatchObject({
          reasonCode: 'checkpoint_atomic_write_failed',
        });
        expect(counting.counts.loop).toBe(loopBefore + 1);
        for (let i = 0; i < later; i++) acknowledged.set(`after${i}`, (await store.put(`after${i}`, encoder.encode(`a${i}`))).version);
        await store.close();
        const again = createPackedFsStorage({ dir });
        const found = await storeContents(again);
        await again.close();
        expect(new Map([...found].map(([k, v]) => [k, v.version]))).toEqual(acknowledged);
        rmSync(dir, { recursive: true, force: true });
      }),
      { numRuns: 10 },
    );
  });
});

describe('packed fs store: where a lone group goes (the choice alone)', () => {
  /** The places chosen for `times.length` lone writes, the i-th taking `times[i](place)` ms. */
  function places(times: readonly ((place: 'loop' | 'pool') => number)[]): ('loop' | 'pool')[] {
    const state = untimedLoneWrites();
    return times.map((time) => {
      const place = lonePlace(state);
      noteLoneWrite(state, place, time(place));
      return place;
    });
  }

  it('where one place is always faster, all lone writes but a probe run every 64 go there, and the other is still tried', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 400 }),
        fc.double({ min: 0.01, max: 50, noNaN: true }),
        fc.double({ min: 1.01, max: 100, noNaN: true }),
        fc.boolean(),
        (count, fast, factor, loopFaster) => {
          // A loop slower than LOOP_WRITE_MAX_MS is never chosen for speed (the next test): here it is within it.
          if (loopFaster) fast = Math.min(fast, LOOP_WRITE_MAX_MS / factor);
          const slow = fast * factor;
          const chosen = places(
            Array.from({ length: count }, () => (place: 'loop' | 'pool') => ((place === 'loop') === loopFaster ? fast : slow)),
          );
          const slower = loopFaster ? 'pool' : 'loop';
          const toSlower = chosen.filter((p) => p === slower).length;
          // A run times each place first; then a run of LONE_PROBE_RUN after LONE_PROBE_EVERY, and rarer after.
          expect(toSlower).toBeLessThanOrEqual(LONE_PROBE_RUN * (1 + Math.ceil(count / LONE_PROBE_EVERY)));
          if (count >= 2 * LONE_PROBE_RUN + LONE_PROBE_EVERY + LONE_PROBE_RUN && (loopFaster || slow <= LOOP_WRITE_MAX_MS))
            expect(toSlower).toBeGreaterThanOrEqual(2 * LONE_PROBE_RUN);
        },
      ),
    );
  });

  it('after the times change, lone writes follow the faster place: within a few writes when the chosen place became slower, after the next probe run when the other became faster', () => {
    // The loop fast for 3,000 lone writes (probes now at their rarest), then slower than the pool (a loaded machine), then fast again.
    const loopTime = (i: number): number => (i >= 3000 && i < 6000 ? 1.5 : 0.1);
    const chosen = places(Array.from({ length: 9000 }, (_, i) => (place: 'loop' | 'pool') => (place === 'loop' ? loopTime(i) : 0.2)));
    const share = (from: number, to: number): number => chosen.slice(from, to).filter((p) => p === 'loop').length / (to - from);
    expect(share(10, 3000)).toBeGreaterThan(0.99);
    expect(chosen.slice(3010, 3000 + LONE_PROBE_EVERY)).not.toContain('loop');
    // Only the probe runs of the loop, one every LONE_PROBE_EVERY.
    expect(share(3010, 6000)).toBeLessThan(LONE_PROBE_RUN / (LONE_PROBE_EVERY + LONE_PROBE_RUN) + 0.01);
    // The loop is tried again after LONE_PROBE_EVERY lone groups on the pool, and taken.
    expect(share(6000 + LONE_PROBE_EVERY + 2 * LONE_PROBE_RUN, 9000)).toBeGreaterThan(0.99);
  });

  it('probe runs of the pool grow rarer while they confirm the loop (the interval doubled up to LONE_PROBE_EVERY_MAX), and a run that changes the choice brings back the first interval', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 1.5, noNaN: true }), fc.double({ min: 1.2, max: 100, noNaN: true }), (loop, factor) => {
        // The pool slower for 6,000 lone writes, then faster from the next probe run on.
        let flipAt = Infinity;
        const runs: number[] = [];
        const state = untimedLoneWrites();
        for (let i = 0; i < 9000; i++) {
          const place = lonePlace(state);
          if (state.probe?.left === LONE_PROBE_RUN && state.probe.from !== undefined) runs.push(i);
          if (i >= 6000 && flipAt === Infinity && place === 'pool') flipAt = i;
          noteLoneWrite(state, place, place === 'loop' ? loop : i >= 6000 ? loop / factor : loop * factor);
        }
        const gaps = runs.slice(1).map((at, k) => at - runs[k]! - LONE_PROBE_RUN);
        const doubling = [128, 256, 512, 1024].map((g) => Math.min(g, LONE_PROBE_EVERY_MAX));
        expect(runs[0]).toBe(2 * LONE_PROBE_RUN + LONE_PROBE_EVERY);
        expect(gaps.slice(0, doubling.length)).toEqual(doubling);
        const steady = gaps.filter((_, k) => runs[k + 1]! < 6000).slice(doubling.length);
        for (const gap of steady) expect(gap).toBe(LONE_PROBE_EVERY_MAX);
        // After the run that moved lone writes to the pool, the loop is probed again after the first interval.
        expect(flipAt).toBeLessThan(6000 + LONE_PROBE_EVERY_MAX + LONE_PROBE_RUN);
        const next = runs.find((at) => at > flipAt);
        expect(next).toBe(flipAt + LONE_PROBE_RUN + LONE_PROBE_EVERY);
      }),
      { numRuns: 30 },
    );
  });

  it('while the pool is faster, the loop is tried every LONE_PROBE_EVERY lone groups (its runs do not grow rarer: the loop is found faster again only by one)', () => {
    fc.assert(
      fc.property(fc.double({ min: 0.01, max: 1, noNaN: true }), fc.double({ min: 1.2, max: 100, noNaN: true }), (pool, factor) => {
        const loop = Math.min(pool * factor, LOOP_WRITE_MAX_MS);
        const runs: number[] = [];
        const state = untimedLoneWrites();
        for (let i = 0; i < 3000; i++) {
          const place = lonePlace(state);
          if (state.probe?.left === LONE_PROBE_RUN && state.probe.from !== undefined) runs.push(i);
          noteLoneWrite(state, place, place === 'loop' ? loop : pool);
        }
        const gaps = runs.slice(1).map((at, k) => at - runs[k]! - LONE_PROBE_RUN);
        expect(gaps.length).toBeGreaterThan(10);
        for (const gap of gaps) expect(gap).toBe(LONE_PROBE_EVERY);
      }),
      { numRuns: 30 },
    );
  });

  it('the first write at each place (a cold file, code not yet compiled) does not decide: the run it starts does', () => {
    fc.assert(
      // A cold loop write over LOOP_WRITE_MAX_MS ends the loop's run at once: the next test.
      fc.property(
        fc.double({ min: 1, max: LOOP_WRITE_MAX_MS / 0.12, noNaN: true }),
        fc.double({ min: 1, max: 1000, noNaN: true }),
        (coldLoop, coldPool) => {
          let firstLoop = true;
          let firstPool = true;
          const time = (place: 'loop' | 'pool'): number => {
            const cold = place === 'loop' ? firstLoop : firstPool;
            if (place === 'loop') firstLoop = false;
            else firstPool = false;
            return (place === 'loop' ? 0.12 : 0.2) * (cold ? (place === 'loop' ? coldLoop : coldPool) : 1);
          };
          const chosen = places(Array.from({ length: 60 }, () => time));
          expect(chosen.slice(0, 2 * LONE_PROBE_RUN)).toEqual([
            ...Array(LONE_PROBE_RUN).fill('loop'),
            ...Array(LONE_PROBE_RUN).fill('pool'),
          ]);
          expect(chosen.slice(2 * LONE_PROBE_RUN)).not.toContain('pool');
        },
      ),
    );
  });

  it('a loop write over LOOP_WRITE_MAX_MS in a run (its first too) ends the run at once: a first run is tried again after LONE_PROBE_EVERY, a probe run after SLOW_LOOP_PROBE_EVERY', () => {
    fc.assert(
      fc.property(fc.double({ min: LOOP_WRITE_MAX_MS * 1.01, max: 1000, noNaN: true }), (cold) => {
        // The loop's first write is slow (a cold file, a slow disk), the rest fast.
        let first = true;
        const chosen = places(
          Array.from({ length: 400 }, () => (place: 'loop' | 'pool') => {
            if (place === 'pool') return 0.2;
            const time = first ? cold : 0.12;
            first = false;
            return time;
          }),
        );
        expect(chosen.slice(0, 1 + LONE_PROBE_RUN)).toEqual(['loop', ...Array(LONE_PROBE_RUN).fill('pool')]);
        const retried = 1 + LONE_PROBE_RUN + LONE_PROBE_EVERY;
        expect(chosen.slice(1, retried)).not.toContain('loop');
        expect(chosen.slice(retried, retried + LONE_PROBE_RUN)).toEqual(Array(LONE_PROBE_RUN).fill('loop'));
        expect(chosen.slice(retried + LONE_PROBE_RUN, retried + LONE_PROBE_RUN + LONE_PROBE_EVERY)).not.toContain('pool');
      }),
    );
    // A probe run to the loop whose first write is slow: that write only, then the pool until SLOW_LOOP_PROBE_EVERY.
    const chosen = places(
      Array.from({ length: 3000 }, (_, i) => (place: 'loop' | 'pool') => (place === 'pool' ? 0.2 : i < 1000 ? 0.5 : 5)),
    );
    const loopAfter = chosen.map((p, i) => (p === 'loop' && i >= 1000 ? i : -1)).filter((i) => i >= 0);
    expect(loopAfter.length).toBeGreaterThan(0);
    expect(loopAfter.length).toBeLessThanOrEqual(1 + Math.ceil(2000 / SLOW_LOOP_PROBE_EVERY));
    for (let k = 1; k < loopAfter.length; k++) expect(loopAfter[k]! - loopAfter[k - 1]!).toBeGreaterThan(SLOW_LOOP_PROBE_EVERY);
  });

  it('one loop write over LOOP_WRITE_STALL_MS leaves the loop at once, however fast its writes were (a disk that stalls now and then)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 100, max: 2000 }),
        fc.double({ min: LOOP_WRITE_STALL_MS * 1.01, max: 5000, noNaN: true }),
        (at, stall) => {
          let stalled = false;
          const chosen = places(
            Array.from({ length: at + SLOW_LOOP_PROBE_EVERY }, (_, i) => (place: 'loop' | 'pool') => {
              if (place === 'pool') return 0.2;
              if (i >= at && !stalled) {
                stalled = true;
                return stall;
              }
              return 0.1;
            }),
          );
          const stalledAt = chosen.findIndex((p, i) => i >= at && p === 'loop');
          expect(chosen.slice(stalledAt + 1, stalledAt + 1 + SLOW_LOOP_PROBE_EVERY - LONE_PROBE_RUN)).not.toContain('loop');
        },
      ),
    );
  });

  it('a disk that becomes slow (both places over LOOP_WRITE_MAX_MS) is left to the pool within a few lone writes, and tried again rarely', () => {
    fc.assert(
      fc.property(fc.double({ min: 2.5, max: 100, noNaN: true }), fc.integer({ min: 100, max: 2000 }), (slow, from) => {
        const chosen = places(
          Array.from(
            { length: from + 2 * SLOW_LOOP_PROBE_EVERY },
            (_, i) => (place: 'loop' | 'pool') => (i >= from ? slow : place === 'loop' ? 0.12 : 0.2),
          ),
        );
        const after = chosen.slice(from);
        // The loop's average passes LOOP_WRITE_MAX_MS within a dozen writes (four at 10 ms a write), then only the probe runs.
        expect(after.slice(0, SLOW_LOOP_PROBE_EVERY - LONE_PROBE_RUN).filter((p) => p === 'loop').length).toBeLessThanOrEqual(12);
        expect(after.filter((p) => p === 'loop').length).toBeLessThanOrEqual(12 + 2 * LONE_PROBE_RUN);
      }),
    );
  });

  it('a loop whose writes average over LOOP_WRITE_MAX_MS (a slow disk) is left for the pool, even when the pool is slower, and timed again rarely', () => {
    const count = SLOW_LOOP_PROBE_EVERY * 2;
    const chosen = places(Array.from({ length: count }, () => (place: 'loop' | 'pool') => (place === 'loop' ? 10 : 12)));
    const onLoop = chosen.filter((p) => p === 'loop').length;
    // Each try of the loop is one write (its run ended by it): the first, again after LONE_PROBE_EVERY, then every SLOW_LOOP_PROBE_EVERY.
    expect(onLoop).toBeLessThanOrEqual(2 + Math.ceil(count / SLOW_LOOP_PROBE_EVERY));
    chosen.forEach((p, i) => p === 'loop' && expect(chosen[i + 1] ?? 'pool').toBe('pool'));
    const second = chosen.indexOf('loop', 1);
    expect(chosen.slice(second + 1, second + SLOW_LOOP_PROBE_EVERY)).not.toContain('loop');
  });
});

describe('packed fs store: the sync it makes', () => {
  it('dsync where the platform has no O_DSYNC is a write then an fdatasync; every other choice stays', () => {
    expect(syncOf('dsync', false)).toBe('fdatasync');
    expect(syncOf('dsync', true)).toBe('dsync');
    expect(syncOf('fdatasync', false)).toBe('fdatasync');
    expect(syncOf('none', false)).toBe('none');
  });
});
