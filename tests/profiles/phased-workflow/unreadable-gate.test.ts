/**
 * phased-workflow-github.md step_2_validate_checkpoint: `on_invalid: Log error, cannot resume,
 * start fresh`. savepoint falls back to an older valid checkpoint when `latest.json` is
 * refused, but a refused newer checkpoint that was a gate decision (or a breaker trip, an
 * escalation) must never be stepped over silently: the plan is not eligible and says why.
 */
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, planResume } from 'savepoint';
import { initialPhasedPayload, phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { newUuidV4 } from '../../../src/contract/ids.js';
import { manualClock } from '../../support/clock.js';

type Doc = Record<string, unknown> & { state_snapshot: Record<string, unknown> & { phase_outputs: Record<string, unknown> } };

function payload(phase: string, done: readonly string[]): PhasedWorkflowPayload {
  const p = initialPhasedPayload(phase, '2026-01-15T14:00:00.000Z');
  const outputs = { ...p.state_snapshot.phase_outputs } as Record<string, unknown>;
  for (const key of done) outputs[key] = { done: key };
  return {
    ...p,
    state_snapshot: { ...p.state_snapshot, phase_outputs: outputs as PhasedWorkflowPayload['state_snapshot']['phase_outputs'] },
  };
}

/** cp_001 phase_complete (phase_1), then cp_002 gate_decision (phase_2), written by a real writer. */
async function runWithGate(trigger: 'gate_decision' | 'circuit_breaker' = 'gate_decision') {
  const storage = memoryStorage();
  const runId = newUuidV4();
  const clock = manualClock();
  const writer = createWriter({ storage, profile: phasedWorkflow, runId, clock, heartbeatIntervalMs: false });
  await clock.advance(60_000);
  expect(
    (await writer.checkpoint({ source: 'phase_complete', status: 'in_progress', payload: payload('phase_1_plan', ['phase_0', 'phase_1']) }))
      .ok,
  ).toBe(true);
  await clock.advance(60_000);
  expect(
    (await writer.checkpoint({ source: trigger, status: 'in_progress', payload: payload('phase_2_build', ['phase_0', 'phase_1']) })).ok,
  ).toBe(true);
  await writer.close();
  return { storage, runId };
}

const text = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
const bytesOf = (doc: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(doc));

/** Another tool's edit of the checkpoint: savepoint's own members dropped, one field made invalid. */
const EDITS: Record<string, (d: Doc) => void> = {
  'cost_accumulated "1.25"': (d) => {
    d.state_snapshot.cost_accumulated = '1.25';
  },
  'an upper-case trigger': (d) => {
    d.trigger = String(d.trigger).toUpperCase();
  },
  'a string phase output': (d) => {
    d.state_snapshot.phase_outputs.phase_1 = 'plan written';
  },
  'an array phase output': (d) => {
    d.state_snapshot.phase_outputs.phase_1 = ['plan'];
  },
  'phase_10_…': (d) => {
    d.phase = 'phase_10_review';
  },
};

async function breakCheckpoint(storage: ReturnType<typeof memoryStorage>, runId: string, edit: (d: Doc) => void, keys: readonly string[]) {
  const latestKey = phasedWorkflow.layout.latestKey(runId);
  const doc = JSON.parse(text((await storage.get(latestKey))!.bytes)) as Doc;
  delete doc.integrity;
  delete doc.status;
  delete doc.source_details;
  edit(doc);
  for (const key of keys) await storage.put(key, bytesOf(doc));
}

describe('phasedWorkflow never resumes past a gate it cannot read', () => {
  for (const [name, edit] of Object.entries(EDITS)) {
    it(`latest.json and cp_002_gate_decision.json with ${name}: not eligible, with the reason (regression)`, async () => {
      const { storage, runId } = await runWithGate();
      const folder = `checkpoints/${runId}`;
      await breakCheckpoint(storage, runId, edit, [`${folder}/latest.json`, `${folder}/cp_002_gate_decision.json`]);
      const plan = await planResume({ storage, profile: phasedWorkflow, runId });
      expect(plan.snapshot.sequence).toBe(1);
      expect(plan).toMatchObject({ eligible: false, at: 'human_review', reason: 'newer_checkpoint_unreadable' });
      expect(plan.explanation).toContain('latest.json');
      expect(plan.warnings.map((w) => w.code)).toContain('resume_latest_invalid');
    });
  }

  it('only latest.json holds the refused gate (history and index gone): not eligible (regression)', async () => {
    const { storage, runId } = await runWithGate();
    const folder = `checkpoints/${runId}`;
    await breakCheckpoint(storage, runId, EDITS['cost_accumulated "1.25"']!, [`${folder}/latest.json`]);
    await storage.delete(`${folder}/cp_002_gate_decision.json`);
    await storage.delete(`${folder}/index.json`);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId });
    expect(plan).toMatchObject({ eligible: false, reason: 'newer_checkpoint_unreadable', snapshot: { sequence: 1 } });
  });

  it('a refused circuit_breaker checkpoint is not stepped over either', async () => {
    const { storage, runId } = await runWithGate('circuit_breaker');
    const folder = `checkpoints/${runId}`;
    await breakCheckpoint(storage, runId, EDITS['an upper-case trigger']!, [
      `${folder}/latest.json`,
      `${folder}/cp_002_circuit_breaker.json`,
    ]);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId });
    expect(plan).toMatchObject({ eligible: false, at: 'human_review', reason: 'newer_checkpoint_unreadable' });
  });

  it('a torn latest.json whose history copy is valid still resumes from that copy, eligible', async () => {
    const { storage, runId } = await runWithGate();
    await storage.put(phasedWorkflow.layout.latestKey(runId), bytesOf('{"checkpoint_id": "trunc').slice(1, 20));
    const plan = await planResume({ storage, profile: phasedWorkflow, runId });
    expect(plan).toMatchObject({ eligible: true, at: 'phase_2_build_gate', snapshot: { sequence: 2 } });
  });

  it('a refused latest that is the restored checkpoint itself (same sequence) blocks nothing', async () => {
    const { storage, runId } = await runWithGate();
    await breakCheckpoint(storage, runId, EDITS['cost_accumulated "1.25"']!, [phasedWorkflow.layout.latestKey(runId)]);
    const plan = await planResume({ storage, profile: phasedWorkflow, runId });
    expect(plan).toMatchObject({ eligible: true, at: 'phase_2_build_gate', snapshot: { sequence: 2 } });
  });
});

describe('createPhasedWorkflowProfile({ phaseNames }) names phases in its own resume rule', () => {
  it('resume after phase_complete says the named next phase, not a bare phase_3 (regression)', async () => {
    const { createPhasedWorkflowProfile } = await import('savepoint/phased-workflow');
    const profile = createPhasedWorkflowProfile({ phaseNames: { phase_2: 'design', phase_3: 'build' } });
    const storage = memoryStorage();
    const runId = newUuidV4();
    const writer = createWriter({ storage, profile, runId, heartbeatIntervalMs: false });
    const p = payload('phase_2_design', ['phase_0', 'phase_1', 'phase_2']);
    expect((await writer.checkpoint({ source: 'phase_complete', status: 'in_progress', payload: p })).ok).toBe(true);
    await writer.close();
    const plan = await planResume({ storage, profile, runId });
    expect(plan).toMatchObject({ at: 'phase_3_build', reason: 'phase_complete_next_phase', eligible: true });
    expect(plan.remaining).toContain('phase_3_build');
  });
});
