/**
 * Unit-testing agent state with savepoint, in-process: memoryStorage is the test double,
 * a manual clock drives coalescing and heartbeats, faultyStorage simulates a crash.
 *
 *   npx vitest run examples/unit-testing.test.ts
 */
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  defaultProfile,
  listAll,
  memoryStorage,
  planResume,
  type Clock,
  type JsonValue,
  type StorageAdapter,
} from 'savepoint';
// manualClock: a clock the test moves by hand, so there is no real waiting and no flaky timing.
import { faultyStorage, manualClock } from 'savepoint/testing';

// --- The code under test: a tiny agent that checkpoints after every task. ---------------
interface AgentState {
  done: string[];
  remaining: string[];
}

async function runAgent(storage: StorageAdapter, runId: string, state: AgentState, clock?: Clock): Promise<AgentState> {
  const writer = createWriter({ storage, profile: defaultProfile, runId, ...(clock ? { clock } : {}) });
  try {
    while (state.remaining.length > 0) {
      const [task, ...rest] = state.remaining;
      state = { done: [...state.done, task!], remaining: rest };
      const status = rest.length === 0 ? 'completed' : 'in_progress';
      const result = await writer.checkpoint({ source: 'step_boundary', status, payload: state as unknown as JsonValue });
      if (!result.ok) throw result.error; // this agent stops on a failed checkpoint; fail-forward agents would go on
    }
    return state;
  } finally {
    await writer.close();
  }
}

// --- The tests. ---------------------------------------------------------------------------
describe('my agent', () => {
  it('saves one snapshot per task and finishes completed', async () => {
    const storage = memoryStorage();
    await runAgent(storage, 'run-1', { done: [], remaining: ['plan', 'code', 'test'] });

    const history = await listAll(storage, 'checkpoints/run-1/history/');
    expect(history).toHaveLength(3);
    const resume = await planResume({ storage, profile: defaultProfile, runId: 'run-1' });
    expect(resume.snapshot.status).toBe('completed');
    expect(resume.payload).toEqual({ done: ['plan', 'code', 'test'], remaining: [] });
  });

  it('coalesces a repeated trigger with no state change inside the 3 s window', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-2', clock });
    const first = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(2_000);
    const again = await writer.checkpoint({ source: 'manual', status: 'in_progress', payload: { step: 1 } });
    await writer.close();

    expect(first.ok && first.outcome).toBe('written');
    expect(again.ok && again.outcome).toBe('coalesced');
    const resume = await planResume({ storage, profile: defaultProfile, runId: 'run-2', clock });
    expect(resume.snapshot.sequence).toBe(1);
    expect(resume.snapshot.sourceDetails.map((d) => d.source)).toEqual(['manual']);
  });

  it('beats every 120 s of silence while in_progress without storing an unchanged state, and stops once completed', async () => {
    const storage = memoryStorage();
    const clock = manualClock();
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-hb', clock });
    let beats = 0;
    writer.on('heartbeat', () => beats++);
    await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await clock.advance(120_000);
    await writer.flush();
    expect(beats).toBe(1);
    // The default profile stores no copy of a state it already has (snapshotLifecycle would: its spec asks for one).
    const latest = await planResume({ storage, profile: defaultProfile, runId: 'run-hb', clock });
    expect(latest.snapshot.source).toBe('step_boundary');

    await writer.checkpoint({ source: 'step_boundary', status: 'completed', payload: { step: 2 } });
    await clock.advance(600_000);
    await writer.close();
    expect(beats).toBe(1);
    expect(await listAll(storage, 'checkpoints/run-hb/history/')).toHaveLength(2);
    expect(clock.pending).toBe(0);
  });

  it('resumes where it stopped after a crash in the middle of a checkpoint write', async () => {
    const disk = memoryStorage();
    // The process "dies" at its 3rd storage write (memoryStorage writes one atomic batch per checkpoint).
    const crashing = faultyStorage(disk, { at: 2, action: 'crash', count: 'writes' });
    await expect(runAgent(crashing, 'run-3', { done: [], remaining: ['a', 'b', 'c', 'd'] })).rejects.toThrow();

    const resume = await planResume({ storage: disk, profile: defaultProfile, runId: 'run-3' });
    expect(resume.payload).toEqual({ done: ['a', 'b'], remaining: ['c', 'd'] });
    const finished = await runAgent(disk, 'run-3', resume.payload as unknown as AgentState);
    expect(finished.done).toEqual(['a', 'b', 'c', 'd']);
    expect((await planResume({ storage: disk, profile: defaultProfile, runId: 'run-3' })).snapshot.sequence).toBe(4);
  });
});
