/**
 * phased-workflow-github.md gives `circuit_breaker` priority critical. Below the rate floor
 * githubStorage holds a writer's batches (holdBelowFloor) for up to maxHoldMs; a critical
 * trigger's checkpoint must not wait there: it is sent at once (an urgent batch), pushing what
 * was held before it.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, type CheckpointResult } from 'savepoint';
import { initialPhasedPayload, phasedTriggers, phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { envPerTest } from '../../support/github.js';

const env = envPerTest();

const ok = (r: CheckpointResult<PhasedWorkflowPayload>): PhasedWorkflowPayload => {
  if (!r.ok) throw r.error;
  return r.snapshot.payload;
};

describe('phasedWorkflow on GitHub: critical triggers skip the hold below the rate floor', () => {
  it('a circuit_breaker checkpoint is on GitHub when acknowledged, not queued (regression: held up to maxHoldMs)', async () => {
    const e = await env();
    const runId = newUuidV4();
    const w = createWriter({ storage: e.storage, profile: phasedWorkflow, runId, clock: e.clock, heartbeatIntervalMs: false });
    let state = ok(
      await w.checkpoint(
        phasedTriggers.phaseComplete(initialPhasedPayload('phase_0_intake', new Date(e.clock.now()).toISOString()), 'phase_0', { n: 0 }),
      ),
    );
    e.gh.rateLimit.set({ remaining: 90 });
    await e.storage.get('probe'); // the adapter learns the budget from this answer
    expect(e.storage.rateBudget().low).toBe(true);
    // An ordinary checkpoint below the floor is held…
    const held = await w.checkpoint(
      phasedTriggers.at('expensive_op', { ...state, state_snapshot: { ...state.state_snapshot, cost_accumulated: 1 } }),
    );
    expect(held.ok && held.outcome).toBe('queued');
    state = ok(held);
    // …a critical one is not: acknowledged as written, and on GitHub with what was held before it.
    const tripped = await w.checkpoint(phasedTriggers.circuitBreakerTrip(state, 'api', { failures: 5 }));
    expect(tripped.ok && tripped.outcome).not.toBe('queued');
    if (!tripped.ok) throw tripped.error;
    expect(e.gh.state.readFile(tripped.key)).toBeDefined();
    const latest = JSON.parse(new TextDecoder().decode(e.gh.state.readFile(`checkpoints/${runId}/latest.json`)!)) as {
      sequence_number: number;
    };
    expect(latest.sequence_number).toBe(tripped.sequence);
    await w.close();
  });
});
