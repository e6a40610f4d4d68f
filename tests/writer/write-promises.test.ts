/**
 * What a steady small checkpoint costs in promises (each is an allocation and a microtask turn
 * on the event loop every writer of a process shares), counted with an async hook: the run
 * lease's fence adds one promise to a write fenced by a batch check, and a plan with nothing
 * to store as chunks is written without an asynchronous step around it. And the lease's rule
 * with that direct write: a renewal falling due while the write is in flight waits for it.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type StorageAdapter } from 'savepoint';
import { utf8Encode } from '../../src/codec/utf8.js';
import { executeWrite } from '../../src/writer/ordered-write.js';
import { manualClock, tick } from '../support/clock.js';
import { promisesMadeBy } from '../support/promises.js';

const payload = (i: number) => ({ step: i, note: 'x'.repeat(1000) });
const STEADY = 40;
// writeBatch's own promise and its awaits, and the caller's await: nothing around them
const MADE_LIMIT = 4;

/** Promises per steady 1 KB checkpoint of a writer on memoryStorage, with the run lease (fenced by a batch check) or without. */
async function perCheckpoint(lock: boolean): Promise<number> {
  const writer = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'r', lock, heartbeatIntervalMs: false });
  for (let i = 0; i < 80; i++)
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload(i) })).ok).toBe(true);
  const made = await promisesMadeBy(async () => {
    for (let i = 80; i < 80 + STEADY; i++) await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: payload(i) });
  });
  await writer.close();
  return made / STEADY;
}

describe('promises per checkpoint', () => {
  it('the run lease adds at most one promise to a checkpoint fenced by a batch check', async () => {
    const leased = await perCheckpoint(true);
    const unleased = await perCheckpoint(false);
    expect(leased - unleased).toBeLessThan(1.5);
  });

  it('a plan with nothing to store as chunks is written with the batch path’s own promises only', async () => {
    // A store whose batch answers with one promise made in advance: what is counted is executeWrite's own.
    const done = Promise.resolve([{ type: 'put' as const, key: 'a/latest.json', version: '1' }]);
    const storage: StorageAdapter = {
      ...memoryStorage(),
      batch: () => done,
    };
    const plan = { creates: [], replaces: [], latest: { key: 'a/latest.json', bytes: utf8Encode('{}') } };
    const made = await promisesMadeBy(async () => {
      for (let i = 0; i < 10; i++) await executeWrite(storage, 'a', plan, {}, () => '2026-01-01T00:00:00Z', true);
    });
    expect(made / 10).toBeLessThanOrEqual(MADE_LIMIT);
  });
});

describe('the lease with a direct write', () => {
  it('a renewal falling due while a fenced write is in flight waits for it, and the write is acknowledged', async () => {
    const inner = memoryStorage();
    const clock = manualClock();
    const calls: string[] = [];
    let release: (() => void) | undefined;
    let holdNext = false;
    const storage: StorageAdapter = {
      ...inner,
      name: 'held',
      put: (key, bytes, options) => {
        calls.push(`put ${key}`);
        return inner.put(key, bytes, options);
      },
      batch: async (ops, options) => {
        calls.push('batch');
        if (holdNext) {
          holdNext = false;
          await new Promise<void>((r) => (release = r));
        }
        const out = await inner.batch!(ops, options);
        calls.push('batch done');
        return out;
      },
    };
    const lease = 30_000;
    const writer = createWriter({
      storage,
      profile: defaultProfile,
      runId: 'r',
      clock,
      lock: true,
      lockLeaseMs: lease,
      heartbeatIntervalMs: false,
    });
    expect((await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 })).ok).toBe(true);
    holdNext = true;
    calls.length = 0;
    const pending = writer.checkpoint({ source: 'manual', status: 'in_progress', payload: 2 });
    while (release === undefined) await tick();
    await clock.advance(lease / 3 + 1); // the renewal timer fires while the batch is held
    for (let i = 0; i < 5; i++) await tick();
    expect(calls).toEqual(['batch']);
    release();
    const result = await pending;
    expect(result.ok).toBe(true);
    for (let i = 0; i < 5; i++) await tick();
    expect(calls).toEqual(['batch', 'batch done', 'put checkpoints/r/.savepoint-lock.json']);
    await writer.close();
  });
});
