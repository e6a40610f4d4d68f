import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type CheckpointResult, type JsonValue } from 'savepoint';
import { utf8Decode } from '../../src/codec/utf8.js';
import { historyOf, latestOf, manualClock, phasedLike, sequentialMemory, T0 } from './helpers.js';

const run = 'run-c';
const at = (ms: number): string => new Date(T0 + ms).toISOString();

describe('coalescing (snapshot-lifecycle.md: 3 s, no material change → one snapshot + source_details)', () => {
  for (const [label, make] of [
    ['atomic batch', () => memoryStorage()],
    ['sequential puts', () => sequentialMemory()],
  ] as const) {
    it(`window edges: +0, +2999, +3000 coalesce; +3001 is a new snapshot (${label})`, async () => {
      const storage = make();
      const clock = manualClock();
      const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
      const state = { step: 'a' };
      const outcomes: string[] = [];
      const push = (r: CheckpointResult<JsonValue>): void => {
        outcomes.push(r.ok ? `${r.outcome}#${r.sequence}` : r.reasonCode);
      };
      push(await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state }));
      push(await w.checkpoint({ source: 'error_boundary', status: 'in_progress', payload: state }));
      await clock.advance(2999);
      push(await w.checkpoint({ source: 'manual', status: 'in_progress', payload: state }));
      await clock.advance(1);
      push(await w.checkpoint({ source: 'timer', status: 'in_progress', payload: state }));
      await clock.advance(1);
      push(await w.checkpoint({ source: 'manual', status: 'in_progress', payload: state }));
      expect(outcomes).toEqual(['written#1', 'coalesced#1', 'coalesced#1', 'coalesced#1', 'written#2']);
      const history = await historyOf(storage, defaultProfile, run);
      expect(history.map((s) => s.sequence)).toEqual([1, 2]);
      expect(history[0]!.source).toBe('step_boundary');
      expect(history[0]!.sourceDetails).toEqual([
        { source: 'error_boundary', at: at(0) },
        { source: 'manual', at: at(2999) },
        { source: 'timer', at: at(3000) },
      ]);
      expect(history[1]!.sourceDetails).toEqual([]);
      expect(await latestOf(storage, defaultProfile, run)).toEqual(history[1]);
    });
  }

  it('the coalesced record is in history and latest alike (stored document has source_details)', async () => {
    const storage = sequentialMemory();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const a = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 1 });
    await clock.advance(1000);
    const b = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(b.ok && b.outcome).toBe('coalesced');
    expect(b.ok && a.ok && b.snapshotId).toBe(a.ok && a.snapshotId);
    const historyBytes = (await storage.get(a.ok ? a.key : ''))!.bytes;
    const latestBytes = (await storage.get(defaultProfile.layout.latestKey(run)))!.bytes;
    expect(utf8Decode(latestBytes)).toBe(utf8Decode(historyBytes));
    expect(JSON.parse(utf8Decode(latestBytes)).source_details).toEqual([{ source: 'manual', at: at(1000) }]);
  });

  it('a material change, or a status change, inside the window makes a new snapshot', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const r1 = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 1 } });
    const r2 = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 2 } });
    const r3 = await w.checkpoint({ source: 'step_boundary', status: 'paused', payload: { n: 2 } });
    const r4 = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 1 } });
    expect([r1, r2, r3, r4].map((r) => r.ok && `${r.outcome}#${r.sequence}`)).toEqual(['written#1', 'written#2', 'written#3', 'written#4']);
  });

  it('volatile fields left out by the profile materialView do not count as a change', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: phasedLike, runId: run, clock });
    const r1 = await w.checkpoint({ source: 'iteration', status: 'in_progress', payload: { phase: 'phase_1_a', cost: 1, updated_at: 'x' } });
    await clock.advance(500);
    const r2 = await w.checkpoint({ source: 'expensive_op', status: 'in_progress', payload: { phase: 'phase_1_a', cost: 1, updated_at: 'y' } });
    expect(r2.ok && r2.outcome).toBe('coalesced');
    expect(r2.ok && r2.snapshot.sourceDetails).toEqual([{ source: 'expensive_op', at: at(500), priority: 'medium' }]);
    expect(r1.ok && r1.snapshot.payload.updated_at).toBe('x');
    expect(r2.ok && r2.snapshot.priority).toBe('medium');
  });

  it('a configurable window (coalesceWindowMs) and 0 for "never coalesce across time"', async () => {
    const clock = manualClock();
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock, coalesceWindowMs: 10_000 });
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    await clock.advance(9000);
    const r = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(r.ok && r.outcome).toBe('coalesced');
    const w0 = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock, coalesceWindowMs: 0 });
    await w0.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    const same = await w0.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(same.ok && same.outcome).toBe('coalesced'); // same instant: still "within 0 ms"
    await clock.advance(1);
    const later = await w0.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
    expect(later.ok && later.outcome).toBe('written');
  });

  it('a burst of 1,000 identical triggers inside the window makes exactly one write', async () => {
    const storage = memoryStorage();
    let writes = 0;
    const counting = { ...storage, batch: (ops: Parameters<NonNullable<typeof storage.batch>>[0]) => (writes++, storage.batch!(ops)), put: (...a: Parameters<typeof storage.put>) => (writes++, storage.put(...a)) };
    const w = createWriter({ storage: counting, profile: defaultProfile, runId: run, clock: manualClock() });
    const results = await Promise.all(Array.from({ length: 1000 }, (_, i) => w.checkpoint({ source: i % 2 ? 'manual' : 'step_boundary', status: 'in_progress', payload: { same: true } })));
    expect(writes).toBe(1);
    expect(results.filter((r) => r.ok && r.outcome === 'written').length).toBe(1);
    expect(results.filter((r) => r.ok && r.outcome === 'coalesced').length).toBe(999);
    const history = await historyOf(storage, defaultProfile, run);
    expect(history.length).toBe(1);
    expect(history[0]!.sourceDetails.length).toBe(999);
  });

  it('emits written and coalesced events without payload contents', async () => {
    const clock = manualClock();
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock });
    const events: string[] = [];
    w.on('written', (e) => events.push(JSON.stringify(e)));
    w.on('coalesced', (e) => events.push(JSON.stringify(e)));
    await w.checkpoint({ source: 'manual', status: 'in_progress', payload: { secret: 'TOP-SECRET-123' } });
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { secret: 'TOP-SECRET-123' } });
    expect(events.length).toBe(2);
    expect(JSON.parse(events[0]!)).toMatchObject({ runId: run, sequence: 1, source: 'manual', outcome: 'written', groupSize: 1, mode: 'batch' });
    expect(JSON.parse(events[1]!)).toMatchObject({ runId: run, sequence: 1, source: 'step_boundary', recorded: 1 });
    for (const e of events) expect(e).not.toContain('TOP-SECRET');
  });
});

describe('heartbeat (every 120 s while in_progress)', () => {
  it('fires a timer snapshot after 120 s without snapshots, and keeps the cadence', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const beats: number[] = [];
    w.on('heartbeat', (e) => beats.push(e.at - T0));
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(119_999);
    await w.flush();
    expect((await historyOf(storage, defaultProfile, run)).length).toBe(1);
    await clock.advance(1);
    await w.flush();
    await clock.advance(120_000);
    await w.flush();
    const history = await historyOf(storage, defaultProfile, run);
    expect(history.map((s) => [s.sequence, s.source, Date.parse(s.createdAt) - T0])).toEqual([
      [1, 'step_boundary', 0],
      [2, 'timer', 120_000],
      [3, 'timer', 240_000],
    ]);
    expect(beats).toEqual([120_000, 240_000]);
    expect(history[2]!.payload).toEqual({ step: 1 });
    await w.close();
  });

  it('a new snapshot re-arms the timer; heartbeatPayload refreshes volatile state', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock, heartbeatPayload: (last) => ({ ...(last as object), beat_at: clock.now() - T0 }) });
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(60_000);
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2 } });
    await clock.advance(119_000);
    await w.flush();
    expect((await historyOf(storage, defaultProfile, run)).length).toBe(2);
    await clock.advance(1000);
    await w.flush();
    const history = await historyOf(storage, defaultProfile, run);
    expect(history.map((s) => [s.source, Date.parse(s.createdAt) - T0])).toEqual([
      ['step_boundary', 0],
      ['step_boundary', 60_000],
      ['timer', 180_000],
    ]);
    expect(history[2]!.payload).toEqual({ step: 2, beat_at: 180_000 });
    await w.close();
  });

  for (const status of ['completed', 'failed', 'paused'] as const) {
    it(`stops on status ${status} (terminal or not active)`, async () => {
      const storage = memoryStorage();
      const clock = manualClock();
      const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
      await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 1 });
      await clock.advance(100_000);
      await w.checkpoint({ source: 'step_boundary', status, payload: 1 });
      await clock.advance(1_000_000);
      await w.flush();
      expect((await historyOf(storage, defaultProfile, run)).map((s) => s.status)).toEqual(['in_progress', status]);
      expect(clock.pending).toBe(0);
    });
  }

  it('stops on close() and honours heartbeatIntervalMs / false', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: 10_000 });
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 1 });
    await clock.advance(10_000);
    await w.flush();
    expect((await historyOf(storage, defaultProfile, run)).length).toBe(2);
    await w.close();
    expect(clock.pending).toBe(0);
    await clock.advance(100_000);
    expect((await historyOf(storage, defaultProfile, run)).length).toBe(2);

    const off = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false });
    await off.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 1 });
    expect(clock.pending).toBe(0);
  });
});
