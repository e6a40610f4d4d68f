/**
 * Numbering from every name the run holds, and what a failed
 * checkpoint leaves behind: an unacknowledged history entry is a valid
 * resume point, and resume and numbering agree on it (docs/writing.md, "What a failed
 * checkpoint leaves").
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, planResume, type JsonValue, type StorageAdapter } from 'savepoint';
import { utf8Encode } from '../../src/codec/utf8.js';
import { faultyStorage } from 'savepoint/testing';
import { historyOf } from '../support/runs.js';
import { manualClock } from '../support/clock.js';
import { sequentialMemory } from '../support/storages.js';

const run = 'run-s';
const layout = defaultProfile.layout;
const garbage = utf8Encode('{"not": "a snapshot"');

async function writeRun(storage: StorageAdapter, count: number): Promise<{ key: string; id: string }[]> {
  const clock = manualClock();
  const w = createWriter<JsonValue>({ storage, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false });
  const out: { key: string; id: string }[] = [];
  for (let i = 1; i <= count; i++) {
    const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } });
    if (!r.ok) throw r.error;
    out.push({ key: r.key, id: r.snapshotId });
    await clock.advance(10_000);
  }
  await w.close();
  return out;
}

async function nextSequenceOf(storage: StorageAdapter): Promise<number> {
  const w = createWriter<JsonValue>({
    storage,
    profile: defaultProfile,
    runId: run,
    clock: manualClock(Date.parse('2025-06-01T00:00:00Z')),
    heartbeatIntervalMs: false,
  });
  const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { after: 'damage' } });
  await w.close();
  if (!r.ok) throw r.error;
  return r.sequence;
}

describe('numbering comes from every name the run holds, readable or not', () => {
  it('latest, index and the newest history entry all unreadable: the next snapshot is #6, not #5 again', async () => {
    const storage = memoryStorage();
    const written = await writeRun(storage, 5);
    await storage.put(layout.latestKey(run), garbage);
    await storage.put(layout.indexKey!(run), garbage);
    await storage.put(written[4]!.key, garbage);
    expect(await nextSequenceOf(storage)).toBe(6);
  });

  it('the two newest entries unreadable as well: #6', async () => {
    const storage = memoryStorage();
    const written = await writeRun(storage, 5);
    for (const key of [layout.latestKey(run), layout.indexKey!(run), written[3]!.key, written[4]!.key]) await storage.put(key, garbage);
    expect(await nextSequenceOf(storage)).toBe(6);
  });

  it('every file unreadable: numbering still starts after all of them', async () => {
    const storage = memoryStorage();
    const written = await writeRun(storage, 3);
    for (const key of [layout.latestKey(run), layout.indexKey!(run), ...written.map((w) => w.key)]) await storage.put(key, garbage);
    expect(await nextSequenceOf(storage)).toBe(4);
  });

  it('property: whatever subset of latest, index and history is unreadable, no stored number is used again', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 7 }), fc.array(fc.boolean(), { minLength: 9, maxLength: 9 }), async (count, damaged) => {
        const storage = memoryStorage();
        const written = await writeRun(storage, count);
        const keys = [layout.latestKey(run), layout.indexKey!(run), ...written.map((w) => w.key)];
        for (const [i, key] of keys.entries()) if (damaged[i]) await storage.put(key, garbage);
        expect(await nextSequenceOf(storage)).toBeGreaterThan(count);
      }),
      { numRuns: 60 },
    );
  }, 60_000);

  it('an old unreadable entry (older than the newest known snapshot by its id) costs no number', async () => {
    const storage = memoryStorage();
    const written = await writeRun(storage, 5);
    await storage.put(layout.indexKey!(run), garbage);
    await storage.put(written[1]!.key, garbage);
    expect(await nextSequenceOf(storage)).toBe(6);
  });
});

describe('what a failed checkpoint leaves: an unacknowledged history entry is a valid resume point', () => {
  it('the entry whose latest write failed is resumed (scan), numbered after, and is the new writer’s base', async () => {
    const inner = memoryStorage();
    const latestKey = layout.latestKey(run);
    let failLatest = false;
    const storage = faultyStorage(sequentialMemory(inner), {
      at: (op) => (failLatest && op.operation === 'put' && op.keys[0] === latestKey ? 'fail' : undefined),
    });
    const clock = manualClock();
    const w = createWriter<JsonValue>({ storage, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false, maxAttempts: 1 });
    expect((await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } })).ok).toBe(true);
    await clock.advance(10_000);
    failLatest = true;
    const failed = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2 } });
    expect(failed.ok).toBe(false);
    failLatest = false;
    await w.close();

    // The entry is there, newer than latest, though never acknowledged.
    const history = await historyOf(inner, defaultProfile, run);
    expect(history.map((s) => [s.sequence, s.payload])).toEqual([
      [1, { step: 1 }],
      [2, { step: 2 }],
    ]);
    // Resume (with a history scan) picks it, and says a continued run numbers after it.
    const plan = await planResume({ storage: inner, profile: defaultProfile, runId: run, newerCheck: 'scan', clock });
    expect([plan.snapshot.sequence, plan.payload, plan.nextSequence]).toEqual([2, { step: 2 }, 3]);
    // A new writer agrees: it takes #2 as its base (the same state coalesces into it) and numbers #3 next.
    const w2 = createWriter<JsonValue>({ storage: inner, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false });
    const same = await w2.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2 } });
    expect(same.ok && [same.outcome, same.sequence]).toEqual(['coalesced', 2]);
    const next = await w2.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 3 } });
    expect(next.ok && next.sequence).toBe(3);
    await w2.close();
  });

  it("with newerCheck 'auto' and no lock left behind, resume trusts latest (documented trade-off) but still numbers after the entry", async () => {
    const inner = memoryStorage();
    const latestKey = layout.latestKey(run);
    let failLatest = false;
    const storage = faultyStorage(sequentialMemory(inner), {
      at: (op) => (failLatest && op.operation === 'put' && op.keys[0] === latestKey ? 'fail' : undefined),
    });
    const clock = manualClock();
    const w = createWriter<JsonValue>({ storage, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false, maxAttempts: 1 });
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(10_000);
    failLatest = true;
    expect((await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2 } })).ok).toBe(false);
    await w.close();
    const plan = await planResume({ storage: inner, profile: defaultProfile, runId: run, newerCheck: 'auto', clock });
    expect(plan.snapshot.sequence).toBe(1);
    const w2 = createWriter<JsonValue>({ storage: inner, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false });
    const next = await w2.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 9 } });
    expect(next.ok && next.sequence).toBe(3);
    await w2.close();
  });
});
