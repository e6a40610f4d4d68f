import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  createWriter,
  defaultProfile,
  memoryStorage,
  type CheckpointResult,
  type JsonValue,
  type Snapshot,
} from 'savepoint';
import { coalescedTriggers, readSnapshot } from 'savepoint/toolkit';
import { faultyStorage, type FaultAction } from 'savepoint/testing';
import { historyOf, latestOf, triggersOf } from '../support/runs.js';
import { instantTimerClock, manualClock, T0 } from '../support/clock.js';
import { putLog, sequentialMemory } from '../support/storages.js';

const run = 'run-p';
const SOURCES = ['step_boundary', 'error_boundary', 'timer', 'manual'] as const;
const WINDOW = 3000;

type Call = { source: (typeof SOURCES)[number]; state: number; status: 'in_progress' | 'paused' };
type Op = { kind: 'advance'; ms: number } | { kind: 'calls'; calls: Call[] };

const call = fc.record({
  source: fc.constantFrom(...SOURCES),
  state: fc.integer({ min: 0, max: 2 }),
  status: fc.constantFrom('in_progress' as const, 'paused' as const),
});
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 4000 }), fc.constantFrom(2999, 3000, 3001)),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('calls' as const), calls: fc.array(call, { minLength: 1, maxLength: 4 }) }) },
);

/** The spec's rule as a reference model: a call coalesces iff the newest snapshot has the same material state and began ≤ 3 s ago. */
function model(ops: Op[]): { outcomes: string[]; snapshots: { sources: string[]; at: number; material: string }[] } {
  let now = 0;
  const snapshots: { sources: string[]; at: number; material: string }[] = [];
  const outcomes: string[] = [];
  for (const o of ops) {
    if (o.kind === 'advance') {
      now += o.ms;
      continue;
    }
    for (const c of o.calls) {
      const material = canonicalJson({ s: c.status, v: c.state });
      const last = snapshots.at(-1);
      if (last && last.material === material && now - last.at <= WINDOW) {
        last.sources.push(c.source);
        outcomes.push(`coalesced#${snapshots.length}`);
      } else {
        snapshots.push({ sources: [c.source], at: now, material });
        outcomes.push(`written#${snapshots.length}`);
      }
    }
  }
  return { outcomes, snapshots };
}

/** Invariant 2 on immutable history: every history key was put with one content only, ever. */
function expectHistoryNeverRewritten(puts: Map<string, Uint8Array[]>): number {
  let entries = 0;
  for (const [key, values] of puts) {
    if (defaultProfile.layout.classify(key)?.kind !== 'history') continue;
    entries++;
    for (const v of values) expect(Buffer.from(v).equals(Buffer.from(values[0]!)), `${key} rewritten`).toBe(true);
  }
  return entries;
}

describe('property: random schedules of triggers, state changes and clock advances', () => {
  it('invariant 4 holds, every material change yields exactly one snapshot, every trigger is in latest or history, and no history file is ever rewritten', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), fc.boolean(), async (ops, atomic) => {
        const storage = putLog(atomic ? memoryStorage() : sequentialMemory());
        const clock = manualClock();
        const w = createWriter({ storage, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false });
        const outcomes: string[] = [];
        for (const o of ops) {
          if (o.kind === 'advance') {
            await clock.advance(o.ms);
            continue;
          }
          // A group of calls made without awaiting: they go through one group commit.
          const rs: CheckpointResult<JsonValue>[] = await Promise.all(
            o.calls.map((c) => w.checkpoint({ source: c.source, status: c.status, payload: { v: c.state } })),
          );
          for (const r of rs) outcomes.push(r.ok ? `${r.outcome}#${r.sequence}` : r.reasonCode);
        }
        const expected = model(ops);
        expect(outcomes).toEqual(expected.outcomes);
        const history = await historyOf(storage, defaultProfile, run);
        const latest = await latestOf(storage, defaultProfile, run);
        // Every trigger, coalesced or not, is recorded in latest or history, with the snapshot it joined.
        expect(
          history.map((s) => [
            s.sequence,
            [s.source, ...triggersOf(history, latest, s.id).map((d) => d.source)],
            Date.parse(s.createdAt) - T0,
          ]),
        ).toEqual(expected.snapshots.map((s, i) => [i + 1, s.sources, s.at]));
        expect(expectHistoryNeverRewritten(storage.puts)).toBe(history.length);
        // savepoint/toolkit's coalescedTriggers gathers the same records (what `savepoint ls` shows).
        const gathered = coalescedTriggers(history, latest);
        for (const h of history) expect(gathered.get(h.id)).toEqual(triggersOf(history, latest, h.id));
        // Invariant 4 on what is stored: consecutive snapshots inside one window differ materially.
        for (let i = 1; i < history.length; i++) {
          const a = history[i - 1]!;
          const b = history[i]!;
          if (Date.parse(b.createdAt) - Date.parse(a.createdAt) <= WINDOW) {
            expect(canonicalJson({ s: b.status, p: b.payload })).not.toBe(canonicalJson({ s: a.status, p: a.payload }));
          }
        }
        // Invariant 2: latest is the newest history snapshot; its source_details extend history's (coalesced since).
        if (history.length > 0) {
          const h = history.at(-1)!;
          expect({ ...latest, sourceDetails: [], integrity: null }).toEqual({ ...h, sourceDetails: [], integrity: null });
          expect(latest!.sourceDetails.slice(0, h.sourceDetails.length)).toEqual(h.sourceDetails);
        }
      }),
      { numRuns: 150 },
    );
  });
});

const ACTIONS: FaultAction[] = ['fail', 'fail-after', 'crash', 'crash-after'];

type Step = { advance: number; calls: { state: number; source: (typeof SOURCES)[number] }[] };

/** Runs `steps` through a writer on faulty storage, then checks invariants 1 and 2 and a reopened writer's numbering. */
async function runWithFault(
  steps: Step[],
  plan: { at: number; action: FaultAction; count: 'all' | 'writes' },
  atomic: boolean,
  maxAttempts: number,
): Promise<number> {
  const inner = memoryStorage();
  const base = putLog(atomic ? inner : sequentialMemory(inner));
  const storage = faultyStorage(base, plan);
  const clock = instantTimerClock();
  const w = createWriter({ storage, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false, maxAttempts, retryBaseMs: 1 });
  const acked: Snapshot<JsonValue>[] = [];
  for (const step of steps) {
    clock.advanceBy(step.advance);
    const rs = await Promise.all(step.calls.map((c) => w.checkpoint({ source: c.source, status: 'in_progress', payload: { v: c.state } })));
    for (const r of rs) if (r.ok) acked.push(r.snapshot);
  }

  const history = await historyOf(inner, defaultProfile, run);
  const latest = await latestOf(inner, defaultProfile, run);
  const byId = new Map(history.map((s) => [s.id, s]));
  // Invariant 1: every acknowledged snapshot is in history, and every acknowledged coalesced trigger in latest or history.
  for (const a of acked) {
    const h = byId.get(a.id);
    expect(h, `acknowledged snapshot ${a.sequence} missing`).toBeDefined();
    expect([h!.sequence, h!.payload, h!.status]).toEqual([a.sequence, a.payload, a.status]);
    const own = a.sourceDetails.filter((d) => d.coalesced_into === undefined);
    expect(triggersOf(history, latest, a.id).slice(0, own.length)).toEqual(own);
  }
  // Invariant 2: latest is valid, is a history snapshot, never older than an acknowledged one; its
  // source_details extend that entry's (triggers coalesced since); no history file was ever rewritten.
  expectHistoryNeverRewritten(base.puts);
  if (acked.length > 0) expect(latest).toBeDefined();
  if (latest) {
    const h = byId.get(latest.id);
    expect(h).toBeDefined();
    expect([h!.sequence, h!.payload, h!.status, h!.createdAt]).toEqual([latest.sequence, latest.payload, latest.status, latest.createdAt]);
    expect(latest.sourceDetails.slice(0, h!.sourceDetails.length)).toEqual(h!.sourceDetails);
    expect(latest.sequence).toBeGreaterThanOrEqual(Math.max(0, ...acked.map((a) => a.sequence)));
  }
  // A reopened writer continues: no reused number, no gap.
  const w2 = createWriter({ storage: inner, profile: defaultProfile, runId: run, clock, heartbeatIntervalMs: false });
  const opened = await w2.open();
  const maxStored = Math.max(0, ...history.map((s) => s.sequence));
  expect(opened).toEqual({ ok: true, lastSequence: maxStored });
  clock.advanceBy(10_000);
  const next = await w2.checkpoint({ source: 'manual', status: 'in_progress', payload: { v: 'after' } });
  expect(next.ok && next.sequence).toBe(maxStored + 1);
  const all = await historyOf(inner, defaultProfile, run);
  expect(all.map((s) => s.sequence)).toEqual(Array.from({ length: maxStored + 1 }, (_, i) => i + 1));
  expect(await readSnapshot(inner, defaultProfile, defaultProfile.layout.latestKey(run))).toEqual(all.at(-1));
  return storage.count;
}

describe('a failed or crashed storage call at every operation index', () => {
  // A fixed scenario with new snapshots, a burst (group commit) and coalesced rewrites.
  const scenario: Step[] = [
    { advance: 0, calls: [{ state: 0, source: 'step_boundary' }] },
    { advance: 1000, calls: [{ state: 0, source: 'error_boundary' }] },
    {
      advance: 500,
      calls: [
        { state: 1, source: 'step_boundary' },
        { state: 1, source: 'manual' },
        { state: 2, source: 'step_boundary' },
      ],
    },
    { advance: 3500, calls: [{ state: 2, source: 'timer' }] },
    { advance: 100, calls: [{ state: 2, source: 'manual' }] },
  ];

  for (const atomic of [true, false]) {
    for (const count of ['all', 'writes'] as const) {
      it(`keeps invariants 1 and 2 for every index and action (${atomic ? 'atomic batch' : 'sequential puts'}, counting ${count})`, async () => {
        const total = await runWithFault(scenario, { at: -1, action: 'fail', count }, atomic, 3);
        expect(total).toBeGreaterThanOrEqual(5);
        for (let at = 0; at <= total; at++) {
          for (const action of ACTIONS) await runWithFault(scenario, { at, action, count }, atomic, at % 3 === 0 ? 1 : 3);
        }
      });
    }
  }
});

describe('a failed storage call in a burst of unchanged states', () => {
  // Found by the property below (seed 1091222097): two triggers of one burst are the same record
  // (same source, same millisecond); after a failed write, reading the run again took the one in
  // history for both, and the next snapshot did not carry the one only latest held.
  it('keeps every acknowledged trigger when the third write fails (counterexample of the property below)', async () => {
    const burst = (state: number, n: number): Step => ({
      advance: 0,
      calls: Array.from({ length: n }, () => ({ state, source: 'step_boundary' as const })),
    });
    await runWithFault([burst(2, 2), burst(2, 1), burst(0, 1), burst(0, 1)], { at: 2, action: 'fail', count: 'writes' }, true, 1);
  });
});

describe('property: a failed or crashed storage call at a random operation index of a random schedule', () => {
  it('keeps invariants 1 and 2, and a reopened writer continues the sequence without gaps', async () => {
    const scenario = fc.array(
      fc.record({
        advance: fc.constantFrom(0, 1000, 3500),
        calls: fc.array(fc.record({ state: fc.integer({ min: 0, max: 2 }), source: fc.constantFrom(...SOURCES) }), {
          minLength: 1,
          maxLength: 3,
        }),
      }),
      { minLength: 1, maxLength: 6 },
    );
    await fc.assert(
      fc.asyncProperty(
        scenario,
        fc.integer({ min: 0, max: 45 }),
        fc.constantFrom(...ACTIONS),
        fc.constantFrom('all' as const, 'writes' as const),
        fc.boolean(),
        fc.integer({ min: 1, max: 3 }),
        async (steps, at, action, count, atomic, maxAttempts) => {
          await runWithFault(steps, { at, action, count }, atomic, maxAttempts);
        },
      ),
      { numRuns: Number(process.env.FAULT_RUNS ?? 300), timeout: 5000 },
    );
  });
});
