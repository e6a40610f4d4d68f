/**
 * After `phase_complete`, phased-workflow-github.md resumes at
 * `next_phase(checkpoint.phase)`. A checkpoint names only its own phase in full
 * (`phase_2_design`) and keys `phase_outputs` by number, so without the caller's phase names
 * the rule used to answer a bare `phase_3` even when the run's own history named it
 * (`phase_3_build`, before a gate sent the run back). The rule now names it from the run's
 * earlier snapshots, which `planResume` reads for it, and says so when nobody named it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, planResume, type Snapshot } from 'savepoint';
import {
  PHASE_KEYS,
  initialPhasedPayload,
  phasedWorkflow,
  phasedWorkflowResumeRule,
  type PhasedWorkflowPayload,
} from 'savepoint/phased-workflow';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { manualClock } from '../../support/clock.js';

/** The payload of a run in `phase` with the outputs of `done` filled in. */
function inPhase(phase: string, done: readonly string[]): PhasedWorkflowPayload {
  const p = initialPhasedPayload(phase, '2026-01-15T14:00:00.000Z');
  const outputs = { ...p.state_snapshot.phase_outputs } as Record<string, unknown>;
  for (const key of done) outputs[key] = { done: key };
  return {
    ...p,
    state_snapshot: { ...p.state_snapshot, phase_outputs: outputs as PhasedWorkflowPayload['state_snapshot']['phase_outputs'] },
  };
}

/** Writes a run through a real writer: each step is a checkpoint `[trigger, phase, completed keys]`. */
async function writeRun(
  steps: readonly (readonly [string, string, readonly string[]])[],
): Promise<{ storage: ReturnType<typeof memoryStorage>; runId: string }> {
  const storage = memoryStorage();
  const runId = newUuidV4();
  const clock = manualClock();
  const writer = createWriter({ storage, profile: phasedWorkflow, runId, clock });
  for (const [source, phase, done] of steps) {
    await clock.advance(60_000); // past the coalescing window: every step is its own snapshot
    const r = await writer.checkpoint({ source: source as 'manual', status: 'in_progress', payload: inPhase(phase, done) });
    expect(r.ok).toBe(true);
  }
  await writer.close();
  return { storage, runId };
}

describe('phasedWorkflow resume after phase_complete names the next phase from the run', () => {
  it('a run that was in phase_3_build before its gate sent it back resumes at phase_3_build, not a bare phase_3 (regression)', async () => {
    const { storage, runId } = await writeRun([
      ['phase_complete', 'phase_2_design', ['phase_0', 'phase_1', 'phase_2']],
      ['expensive_op', 'phase_3_build', ['phase_0', 'phase_1', 'phase_2']],
      ['gate_decision', 'phase_3_build', ['phase_0', 'phase_1', 'phase_2']],
      ['iteration', 'phase_2_design', ['phase_0', 'phase_1']],
      ['phase_complete', 'phase_2_design', ['phase_0', 'phase_1', 'phase_2']],
    ]);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId });
    expect(plan).toMatchObject({ at: 'phase_3_build', reason: 'phase_complete_next_phase', eligible: true });
    expect(plan.explanation).toContain('resume at the next phase, phase_3_build');
    expect(plan.message).toContain('Resume point: phase_3_build');
  });

  it('when the run never named the next phase, the bare key is returned and the explanation says its name is unknown', async () => {
    const { storage, runId } = await writeRun([
      ['phase_complete', 'phase_1_plan', ['phase_0', 'phase_1']],
      ['phase_complete', 'phase_2_design', ['phase_0', 'phase_1', 'phase_2']],
    ]);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId });
    expect(plan.at).toBe('phase_3');
    expect(plan.explanation).toMatch(/full name is unknown: the run's snapshots never named phase_3/);
  });

  it('reads the run history only when the rule asks (phase_complete without the caller giving the order)', () => {
    const snap = { source: 'phase_complete' } as Snapshot<PhasedWorkflowPayload>;
    expect(typeof phasedWorkflowResumeRule.readsHistory?.({ ...snap, payload: inPhase('phase_2_design', []) })).toBe('function');
    expect(phasedWorkflowResumeRule.readsHistory?.({ ...snap, source: 'gate_decision', payload: inPhase('phase_2_design', []) })).toBe(
      false,
    );
    expect(phasedWorkflowResumeRule.readsHistory?.({ ...snap, payload: inPhase('phase_8_ship', []) })).toBe(false);
  });

  // Keys in workflow order, without phase_8 (it has no next phase).
  const keys = PHASE_KEYS.slice(0, -1);
  const nameArb = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
  it('property: for any history naming phases, resume after phase_complete names the next phase as the newest history entry does (else its key)', () => {
    fc.assert(
      fc.property(
        fc.nat(keys.length - 1),
        nameArb,
        // Earlier snapshots, newest first: each is in some phase with some name.
        fc.array(fc.tuple(fc.constantFrom(...PHASE_KEYS), nameArb), { maxLength: 8 }),
        (at, currentName, history) => {
          const key = keys[at]!;
          const nextKey = PHASE_KEYS[PHASE_KEYS.indexOf(key) + 1]!;
          const done = PHASE_KEYS.slice(0, at + 1);
          const snapshotOf = (phase: string, sequence: number): Snapshot<PhasedWorkflowPayload> => ({
            id: `id-${sequence}`,
            runId: 'run',
            sequence,
            createdAt: '2026-01-15T14:00:00.000Z',
            source: 'manual',
            sourceDetails: [],
            status: 'in_progress',
            payload: inPhase(phase, done),
            integrity: { format_version: '1.0', algorithm: 'sha256', checksum: '0'.repeat(64) },
          });
          const current = { ...snapshotOf(`${key}_${currentName}`, 100), source: 'phase_complete' };
          const earlier = history.map(([k, n], i) => snapshotOf(`${k}_${n}`, 99 - i));
          const point = phasedWorkflowResumeRule(current, { now: 0, history: earlier });
          const named = history.find(([k]) => k === nextKey);
          expect(point.at).toBe(named ? `${nextKey}_${named[1]}` : nextKey);
          expect(point.reason).toBe('phase_complete_next_phase');
        },
      ),
      { numRuns: 100 },
    );
  });
});
