/**
 * Regression: an agent that keeps working on the payload object a checkpoint
 * result gave back must never have a stale state stored (the writer used to remember the
 * canonical JSON of that object by identity).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, createWriter, defaultProfile, memoryStorage, type JsonValue } from 'savepoint';
import { latestOf } from '../support/runs.js';
import { manualClock } from '../support/clock.js';

type State = { items: number[]; note: string };

describe('mutating the payload a result returned', () => {
  it('inside the coalescing window: the new state is written, not coalesced into the old one', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'lost-1', clock, heartbeatIntervalMs: false });
    const first = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { items: [1], note: 'a' } });
    if (!first.ok) throw first.error;
    const state = first.snapshot.payload as State;
    state.items.push(2);
    await clock.advance(500);
    const second = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state as unknown as JsonValue });
    await writer.close();
    expect(second.ok && second.outcome).toBe('written');
    expect((await latestOf(storage, defaultProfile, 'lost-1'))?.payload).toEqual({ items: [1, 2], note: 'a' });
  });

  it('outside the window: the second snapshot holds the mutated state', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'lost-2', clock, heartbeatIntervalMs: false });
    const first = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { items: [1], note: 'a' } });
    if (!first.ok) throw first.error;
    const state = first.snapshot.payload as State;
    state.note = 'b';
    await clock.advance(10_000);
    const second = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state as unknown as JsonValue });
    await writer.close();
    expect(second.ok && second.sequence).toBe(2);
    expect((await latestOf(storage, defaultProfile, 'lost-2'))?.payload).toEqual({ items: [1], note: 'b' });
  });

  it('canonicalJson of the mutated object is its current text', async () => {
    const writer = createWriter({ storage: memoryStorage(), profile: defaultProfile, runId: 'lost-3', heartbeatIntervalMs: false });
    const r = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { items: [1], note: 'a' } });
    await writer.close();
    if (!r.ok) throw r.error;
    const state = r.snapshot.payload as State;
    expect(canonicalJson(state)).toBe('{"items":[1],"note":"a"}');
    state.items.push(7);
    expect(canonicalJson(state)).toBe('{"items":[1,7],"note":"a"}');
  });

  it('mutating a coalesced result cannot change what a later rewrite of the open snapshot stores', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'lost-4', clock, heartbeatIntervalMs: false });
    const first = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { items: [1], note: 'a' } });
    if (!first.ok) throw first.error;
    (first.snapshot.payload as State).note = 'mutated behind the writer';
    await clock.advance(100);
    const again = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { items: [1], note: 'a' } });
    await writer.close();
    expect(again.ok && again.outcome).toBe('coalesced');
    const latest = await latestOf(storage, defaultProfile, 'lost-4');
    expect(latest?.payload).toEqual({ items: [1], note: 'a' });
    expect(latest?.sourceDetails).toHaveLength(1);
  });

  it('property: after any sequence of mutations of returned payloads, latest holds the last state passed', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 4000 })), { minLength: 1, maxLength: 12 }),
        async (steps) => {
          const storage = memoryStorage();
          const clock = manualClock();
          const writer = createWriter({ storage, profile: defaultProfile, runId: 'lost-p', clock, heartbeatIntervalMs: false });
          let state: State = { items: [], note: '' };
          let expected = '';
          for (const [value, advance] of steps) {
            state.items.push(value);
            expected = JSON.stringify(state); // not canonicalJson: the old code returned stale text for these objects
            const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state as unknown as JsonValue });
            if (!r.ok) throw r.error;
            state = r.snapshot.payload as State;
            await clock.advance(advance);
          }
          await writer.close();
          expect(JSON.stringify((await latestOf(storage, defaultProfile, 'lost-p'))?.payload)).toBe(expected);
        },
      ),
      { numRuns: 40 },
    );
  });
});
