import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, defineProfile, memoryStorage, planResume, type CheckpointResult, type JsonValue } from 'savepoint';
import { utf8Decode } from '../../src/codec/utf8.js';
import { historyOf, latestOf } from '../support/runs.js';
import { manualClock, T0 } from '../support/clock.js';
import { phasedLike } from '../support/profiles.js';
import { putLog, sequentialMemory } from '../support/storages.js';

const run = 'run-c';

/** The default profile, but storing the state again on every beat as snapshot-lifecycle.md's heartbeat does. */
const { name: _n, description: _d, isTerminal: _t, trigger: _tr, ...defaultBase } = defaultProfile;
const beatingProfile = defineProfile({
  ...defaultBase,
  name: 'beating',
  heartbeat: { source: 'timer', intervalMs: 120_000, whenUnchanged: 'write' },
});
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
      // Immutable history: #1's entry stays as first written; #2's entry carries what only latest held of #1.
      expect(history[0]!.sourceDetails).toEqual([]);
      const into = history[0]!.id;
      expect(history[1]!.sourceDetails).toEqual([
        { source: 'error_boundary', at: at(0), coalesced_into: into },
        { source: 'manual', at: at(2999), coalesced_into: into },
        { source: 'timer', at: at(3000), coalesced_into: into },
      ]);
      expect(await latestOf(storage, defaultProfile, run)).toEqual(history[1]);
    });
  }

  for (const [label, make] of [
    ['atomic batch', () => memoryStorage()],
    ['sequential puts', () => sequentialMemory()],
  ] as const) {
    it(`a coalesced trigger goes to latest only: the history file keeps its first bytes, the next entry carries the record (${label})`, async () => {
      const storage = putLog(make());
      const clock = manualClock();
      const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
      const a = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 1 });
      const historyKey = a.ok ? a.key : '';
      const first = (await storage.get(historyKey))!.bytes;
      await clock.advance(1000);
      const b = await w.checkpoint({ source: 'manual', status: 'in_progress', payload: 1 });
      expect(b.ok && b.outcome).toBe('coalesced');
      expect(b.ok && a.ok && b.snapshotId).toBe(a.ok && a.snapshotId);
      expect(b.ok && b.key).toBe(defaultProfile.layout.latestKey(run));
      expect(b.ok && b.snapshot.sourceDetails).toEqual([{ source: 'manual', at: at(1000) }]);
      expect(storage.puts.get(historyKey)).toHaveLength(1);
      expect(Buffer.from((await storage.get(historyKey))!.bytes).equals(Buffer.from(first))).toBe(true);
      const latest = JSON.parse(utf8Decode((await storage.get(defaultProfile.layout.latestKey(run)))!.bytes));
      expect(latest.snapshot_id).toBe(a.ok && a.snapshotId);
      expect(latest.source_details).toEqual([{ source: 'manual', at: at(1000) }]);
      expect(JSON.parse(utf8Decode(first)).source_details).toEqual([]);
      // The next snapshot's history entry records it, tagged with the snapshot it joined.
      await clock.advance(500);
      const c = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: 2 });
      expect(c.ok && c.snapshot.sourceDetails).toEqual([{ source: 'manual', at: at(1000), coalesced_into: a.ok && a.snapshotId }]);
      expect(storage.puts.get(historyKey)).toHaveLength(1);
      const history = await historyOf(storage, defaultProfile, run);
      expect(history.map((s) => s.sourceDetails.length)).toEqual([0, 1]);
      await w.close();
    });
  }

  it('a split snapshot coalesced in the group that writes the next one leaves no part file nothing references', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock, maxSnapshotBytes: 1024 });
    const big = (n: number): JsonValue => ({ n, a: 'a'.repeat(600), b: 'b'.repeat(600), c: 'c'.repeat(600) });
    const first = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: big(1) });
    expect(first.ok ? first.outcome : first.reasonCode).toBe('written');
    await clock.advance(1000);
    const rs = await Promise.all([
      w.checkpoint({ source: 'manual', status: 'in_progress', payload: big(1) }),
      w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: big(2) }),
    ]);
    expect(rs.map((r) => r.ok && r.outcome)).toEqual(['coalesced', 'written']);
    await w.close();
    const texts: string[] = [];
    const parts: string[] = [];
    for await (const e of storage.list('checkpoints/')) {
      if (e.key.includes('/parts/')) parts.push(e.key);
      else texts.push(utf8Decode((await storage.get(e.key))!.bytes));
    }
    expect(parts.length).toBeGreaterThan(0);
    for (const key of parts)
      expect(
        texts.some((t) => t.includes(JSON.stringify(key))),
        `${key} unreferenced`,
      ).toBe(true);
  });

  it('a writer that opens a run whose latest holds coalesced triggers carries them into its first history entry', async () => {
    const storage = sequentialMemory();
    const clock = manualClock();
    const w1 = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    const a = await w1.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 1 } });
    await w1.checkpoint({ source: 'error_boundary', status: 'in_progress', payload: { n: 1 } });
    await clock.advance(1000);
    await Promise.all([
      w1.checkpoint({ source: 'manual', status: 'in_progress', payload: { n: 1 } }),
      w1.checkpoint({ source: 'timer', status: 'in_progress', payload: { n: 1 } }),
    ]);
    await w1.close();
    const id = a.ok ? a.snapshotId : '';
    // A resume reads latest: it reports the coalesced triggers.
    const plan = await planResume({ storage, profile: defaultProfile, runId: run, clock });
    expect(plan.snapshot.id).toBe(id);
    expect(plan.snapshot.sourceDetails.map((d) => d.source)).toEqual(['error_boundary', 'manual', 'timer']);
    // So does a resume that scans history for newer entries (after a crash): the same snapshot, latest's copy.
    const scanned = await planResume({ storage, profile: defaultProfile, runId: run, clock, newerCheck: 'scan' });
    expect(scanned.snapshot.sourceDetails.map((d) => d.source)).toEqual(['error_boundary', 'manual', 'timer']);
    const w2 = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    await clock.advance(5000);
    const next = await w2.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 2 } });
    expect(next.ok && next.snapshot.sourceDetails).toEqual([
      { source: 'error_boundary', at: at(0), coalesced_into: id },
      { source: 'manual', at: at(1000), coalesced_into: id },
      { source: 'timer', at: at(1000), coalesced_into: id },
    ]);
    const history = await historyOf(storage, defaultProfile, run);
    expect(history[0]!.sourceDetails).toEqual([]);
    await w2.close();
  });

  it('a profile without immutable history rewrites the still-open entry in history and latest alike', async () => {
    const storage = sequentialMemory();
    const clock = manualClock();
    const w = createWriter({ storage, profile: phasedLike, runId: run, clock });
    const payload = { phase: 'phase_1_a', cost: 1, updated_at: 'x' };
    const a = await w.checkpoint({ source: 'iteration', status: 'in_progress', payload });
    await clock.advance(1000);
    const b = await w.checkpoint({ source: 'expensive_op', status: 'in_progress', payload });
    expect(b.ok && b.outcome).toBe('coalesced');
    const historyBytes = (await storage.get(a.ok ? a.key : ''))!.bytes;
    const latestBytes = (await storage.get(phasedLike.layout.latestKey(run)))!.bytes;
    expect(utf8Decode(latestBytes)).toBe(utf8Decode(historyBytes));
    expect(JSON.parse(utf8Decode(latestBytes)).source_details).toEqual([{ source: 'expensive_op', at: at(1000), priority: 'medium' }]);
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
    const r1 = await w.checkpoint({
      source: 'iteration',
      status: 'in_progress',
      payload: { phase: 'phase_1_a', cost: 1, updated_at: 'x' },
    });
    await clock.advance(500);
    const r2 = await w.checkpoint({
      source: 'expensive_op',
      status: 'in_progress',
      payload: { phase: 'phase_1_a', cost: 1, updated_at: 'y' },
    });
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
    const counting = {
      ...storage,
      batch: (ops: Parameters<NonNullable<typeof storage.batch>>[0]) => (writes++, storage.batch!(ops)),
      put: (...a: Parameters<typeof storage.put>) => (writes++, storage.put(...a)),
    };
    const w = createWriter({ storage: counting, profile: defaultProfile, runId: run, clock: manualClock() });
    const results = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        w.checkpoint({ source: i % 2 ? 'manual' : 'step_boundary', status: 'in_progress', payload: { same: true } }),
      ),
    );
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
    expect(JSON.parse(events[0]!)).toMatchObject({
      runId: run,
      sequence: 1,
      source: 'manual',
      outcome: 'written',
      groupSize: 1,
      mode: 'batch',
    });
    expect(JSON.parse(events[1]!)).toMatchObject({ runId: run, sequence: 1, source: 'step_boundary', recorded: 1 });
    for (const e of events) expect(e).not.toContain('TOP-SECRET');
  });
});

describe('heartbeat (every 120 s while in_progress)', () => {
  it('the default profile stores no copy of an unchanged state: a day idle in_progress is 720 heartbeat events and no snapshot', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: defaultProfile, runId: run, clock });
    let beats = 0;
    w.on('heartbeat', () => beats++);
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    for (let i = 0; i < 720; i++) await clock.advance(120_000);
    await w.flush();
    expect(beats).toBe(720);
    expect((await historyOf(storage, defaultProfile, run)).map((s) => s.source)).toEqual(['step_boundary']);
    // A state that changed is stored by the checkpoint that brings it; the beats after it store nothing again.
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2 } });
    for (let i = 0; i < 10; i++) await clock.advance(120_000);
    await w.flush();
    expect((await historyOf(storage, defaultProfile, run)).map((s) => s.payload)).toEqual([{ step: 1 }, { step: 2 }]);
    expect(clock.pending).toBeGreaterThan(0); // still beating
    await w.close();
  });

  it('property: on the default profile no timer snapshot repeats the snapshot before it; on a write-on-beat profile every 120 s idle adds one', async () => {
    const step = fc.oneof(
      fc.record({ kind: fc.constant('checkpoint' as const), state: fc.integer({ min: 0, max: 2 }) }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 1, max: 400_000 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
        for (const profile of [defaultProfile, beatingProfile]) {
          const storage = memoryStorage();
          const clock = manualClock();
          const w = createWriter({ storage, profile, runId: run, clock });
          let beats = 0;
          w.on('heartbeat', () => beats++);
          await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { s: -1 } });
          for (const st of steps) {
            if (st.kind === 'checkpoint') await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { s: st.state } });
            else await clock.advance(st.ms);
          }
          await w.flush();
          const history = await historyOf(storage, defaultProfile, run);
          const timers = history.filter((h) => h.source === 'timer').length;
          if (profile === defaultProfile) {
            history.forEach((h, i) => {
              if (h.source === 'timer') expect(h.payload).not.toEqual(history[i - 1]!.payload);
            });
            expect(timers).toBe(0); // every state given was stored by its own checkpoint
          } else expect(timers).toBe(beats);
          await w.close();
        }
      }),
      { numRuns: 60 },
    );
  });

  it("heartbeatPayload's settled hook gets each beat's result once; a hook that throws is reported, and the beats go on", async () => {
    const clock = manualClock();
    const results: string[] = [];
    let throwing = true;
    const beat = Object.assign((last: JsonValue): JsonValue => ({ ...(last as object), beat: clock.now() - T0 }), {
      settled: (r: CheckpointResult<JsonValue>, payload: JsonValue) => {
        results.push(r.ok ? `${r.outcome}#${r.sequence}:${(payload as { beat: number }).beat}` : r.reasonCode);
        if (throwing) throw new Error('hook failed');
      },
    });
    const w = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: run, clock, heartbeatPayload: beat });
    const errors: string[] = [];
    w.on('error', (e) => errors.push(`${e.during}:${e.reasonCode}`));
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 1 } });
    await clock.advance(120_000);
    throwing = false;
    await clock.advance(120_000);
    expect(results).toEqual(['written#2:120000', 'written#3:240000']);
    expect(errors).toEqual(['heartbeat:checkpoint_config_invalid']);
    await w.close();
  });

  it('after a failed write the next beat stores the state (it is news to the store)', async () => {
    const inner = memoryStorage();
    let failNext = false;
    const flaky = {
      ...inner,
      capabilities: inner.capabilities,
      get: inner.get,
      list: inner.list,
      put: inner.put,
      delete: inner.delete,
      batch: async (ops: Parameters<NonNullable<typeof inner.batch>>[0]) => {
        if (failNext) {
          failNext = false;
          throw new Error('disk hiccup');
        }
        return inner.batch!(ops);
      },
    };
    const clock = manualClock();
    const w = createWriter({ storage: flaky, profile: defaultProfile, runId: run, clock, maxAttempts: 1 });
    w.on('error', () => undefined);
    await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    failNext = true;
    expect((await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 2 } })).ok).toBe(false);
    await clock.advance(120_000);
    await w.flush();
    const history = await historyOf(inner, defaultProfile, run);
    expect(history.map((s) => [s.source, s.payload])).toEqual([
      ['step_boundary', { step: 1 }],
      ['timer', { step: 2 }],
    ]);
    await w.close();
  });

  it("a profile whose heartbeat is 'write' (snapshot-lifecycle.md's) fires a timer snapshot after 120 s without snapshots, and keeps the cadence", async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const w = createWriter({ storage, profile: beatingProfile, runId: run, clock });
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
    const w = createWriter({
      storage,
      profile: defaultProfile,
      runId: run,
      clock,
      heartbeatPayload: (last) => ({ ...(last as object), beat_at: clock.now() - T0 }),
    });
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
    const w = createWriter({ storage, profile: beatingProfile, runId: run, clock, heartbeatIntervalMs: 10_000 });
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
