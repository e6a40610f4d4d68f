/**
 * Coalescing must never change what a resume does. Resume reads a snapshot's
 * own `source` (phased-workflow-github.md, step_4_determine_resume_point), so a trigger whose
 * `resumeAs` differs from the snapshot it would join gets its own snapshot.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, planResume } from 'savepoint';
import { initialPhasedPayload, phasedTriggers, phasedWorkflow, PHASED_TRIGGERS, type PhasedTrigger } from 'savepoint/phased-workflow';
import { manualClock } from 'savepoint/testing';
import { newUuidV4 } from '../../src/contract/ids.js';

/** The resume reason each trigger's snapshot leads to (the rule's classes). */
const reasonOf = (t: PhasedTrigger): RegExp =>
  t === 'phase_complete'
    ? /^phase_complete_/
    : t === 'gate_decision'
      ? /^gate_decision_/
      : t === 'circuit_breaker'
        ? /^circuit_breaker_/
        : /^restart_current_phase$/;

async function lastResume(triggers: readonly { t: PhasedTrigger; waitMs: number }[]) {
  const storage = memoryStorage();
  const clock = manualClock();
  const runId = newUuidV4();
  const writer = createWriter({ storage, profile: phasedWorkflow, runId, clock });
  const payload = initialPhasedPayload('phase_1_plan', new Date(clock.now()).toISOString());
  const outcomes: string[] = [];
  for (const { t, waitMs } of triggers) {
    await clock.advance(waitMs);
    const r = await writer.checkpoint(phasedTriggers.at(t, payload)); // the same state every time: only the trigger differs
    if (!r.ok) throw r.error;
    outcomes.push(r.outcome);
  }
  await writer.close();
  return { plan: await planResume({ storage, profile: phasedWorkflow, runId, clock }), outcomes };
}

describe('coalescing keeps the resume action of the newest trigger', () => {
  it('a gate_decision 1 s after a phase_complete with no state change gets its own snapshot and resumes at the gate', async () => {
    const { plan, outcomes } = await lastResume([
      { t: 'phase_complete', waitMs: 0 },
      { t: 'gate_decision', waitMs: 1000 },
    ]);
    expect(outcomes).toEqual(['written', 'written']);
    expect(plan.reason).toBe('gate_decision_reevaluate_gate');
    expect(plan.at).toBe('phase_1_plan_gate');
  });

  it('triggers that resume alike still coalesce (an iteration into an expensive_op)', async () => {
    const { plan, outcomes } = await lastResume([
      { t: 'expensive_op', waitMs: 0 },
      { t: 'iteration', waitMs: 1000 },
    ]);
    expect(outcomes).toEqual(['written', 'coalesced']);
    expect(plan.reason).toBe('restart_current_phase');
    expect(plan.snapshot.sourceDetails.map((d) => d.source)).toEqual(['iteration']);
  });

  it('property: whatever triggers fire with no state change, inside the window or not, the resume follows the newest one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ t: fc.constantFrom(...PHASED_TRIGGERS), waitMs: fc.integer({ min: 0, max: 4000 }) }), {
          minLength: 1,
          maxLength: 8,
        }),
        async (triggers) => {
          const { plan } = await lastResume(triggers);
          expect(plan.reason).toMatch(reasonOf(triggers.at(-1)!.t));
        },
      ),
      { numRuns: 150 },
    );
  });
});
