/**
 * The writer with the built-in profiles: every trigger the specs name is accepted (with the
 * spec's priority), the state written is read back unchanged, unknown triggers are refused.
 * Payloads come from spec-shaped documents in tests/fixtures/writer/.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createWriter, memoryStorage, type Profile } from 'savepoint';
import { importPhasedWorkflowDocument, phasedWorkflow } from 'savepoint/phased-workflow';
import { importPlanExecutorDocument, planExecutor } from 'savepoint/plan-executor';
import { importSnapshotLifecycleDocument, snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { readSnapshot } from 'savepoint/toolkit';
import { handoffMarkdown, parseHandoff } from 'savepoint/handoff-markdown';
import { manualClock } from '../support/clock.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/writer/${name}`, import.meta.url), 'utf8');

async function writeEach<P>(profile: Profile<P>, runId: string, payload: P, triggers: readonly string[]): Promise<void> {
  const storage = memoryStorage();
  const clock = manualClock();
  const w = createWriter({ storage, profile, runId, clock, heartbeatIntervalMs: false });
  let sequence = 0;
  for (const source of triggers) {
    const r = await w.checkpoint({ source, status: profile.statuses.active, payload });
    expect(r.ok, `${profile.name}: ${source} refused: ${r.ok ? '' : r.error.message}`).toBe(true);
    if (!r.ok) return;
    expect(r.sequence).toBe(++sequence);
    expect(r.snapshot.priority).toBe(profile.trigger(source).priority);
    const stored = await readSnapshot(storage, profile, r.key);
    expect(stored?.payload).toEqual(payload);
    expect(stored?.source).toBe(source);
    await clock.advance(5000); // past the window: the same state again is a new snapshot
  }
  const latest = await readSnapshot(storage, profile, profile.layout.latestKey(runId));
  expect(latest?.sequence).toBe(triggers.length);
  const unknown = await w.checkpoint({ source: 'not_a_trigger', status: profile.statuses.active, payload });
  expect(!unknown.ok && unknown.reasonCode).toBe('checkpoint_schema_invalid');
  await w.close();
}

describe('built-in profiles', () => {
  it('snapshotLifecycle: step_boundary, error_boundary, timer, manual', async () => {
    const { snapshot } = await importSnapshotLifecycleDocument(JSON.parse(fixture('snapshot-lifecycle.snapshot.json')));
    await writeEach(snapshotLifecycle, snapshot.runId, snapshot.payload, ['step_boundary', 'error_boundary', 'timer', 'manual']);
  });

  it('phasedWorkflow: the nine triggers with their spec priorities', async () => {
    const { snapshot } = await importPhasedWorkflowDocument(JSON.parse(fixture('phased-workflow.checkpoint.json')));
    const triggers = [
      'phase_complete',
      'gate_decision',
      'circuit_breaker',
      'escalation',
      'iteration',
      'cost_threshold',
      'expensive_op',
      'destructive_op',
      'manual',
    ];
    await writeEach(phasedWorkflow, snapshot.runId, snapshot.payload, triggers);
    expect(Object.fromEntries(triggers.map((t) => [t, phasedWorkflow.trigger(t).priority]))).toMatchObject({
      circuit_breaker: 'critical',
      phase_complete: 'high',
      gate_decision: 'high',
      escalation: 'high',
      cost_threshold: 'high',
      destructive_op: 'high',
      iteration: 'medium',
      expensive_op: 'medium',
    });
  });

  it('planExecutor: task completion (NN-CHECKPOINT.json)', async () => {
    const { snapshot } = await importPlanExecutorDocument(JSON.parse(fixture('plan-executor.spec-example.json')));
    await writeEach(planExecutor, snapshot.runId, snapshot.payload, ['task_complete', 'task_complete', 'manual']);
  });

  it('handoffMarkdown: session break and pre-compression (and the other spec triggers)', async () => {
    const {
      checkpoint: _c,
      created: _d,
      frontMatter: _f,
      ...payload
    } = parseHandoff(fixture('handoff-chk-003.md')) as ReturnType<typeof parseHandoff> & { frontMatter?: unknown };
    await writeEach(handoffMarkdown, 'session-1', payload, [
      'session_break',
      'pre_compression',
      'phase_completion',
      'major_decision',
      'context_shift',
    ]);
  });
});
