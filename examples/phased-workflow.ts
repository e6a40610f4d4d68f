/**
 * A phased workflow checkpointed the phased-workflow-github.md way: prioritized triggers,
 * cp_NNN_trigger.json + latest.json + index.json, the cost-threshold and circuit-breaker
 * triggers, size management over 10 MB, cross-run retention tiers, and resume.
 *
 *   npx tsx examples/phased-workflow.ts
 *
 * Storage is in memory here; `examples/github-phased-workflow.ts` shows the same against a GitHub repository.
 */
import { cleanupAfterRunCompletion, createWriter, listAll, memoryStorage, planResume, preserveRun, type CheckpointResult } from 'savepoint';
import {
  createCostThresholdTrigger,
  initialPhasedPayload,
  phasedTriggers,
  phasedWorkflow,
  type PhasedWorkflowPayload,
} from 'savepoint/phased-workflow';
import { decodeRunIndex } from 'savepoint/toolkit';

const storage = memoryStorage();
let clockMs = Date.UTC(2025, 11, 5, 10, 0, 0);
const clock = {
  now: () => clockMs,
  setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
  clearTimeout: (h: unknown) => clearTimeout(h as NodeJS.Timeout),
};
const later = (minutes: number): void => void (clockMs += minutes * 60_000);

function show(r: CheckpointResult<PhasedWorkflowPayload>, quiet = false): PhasedWorkflowPayload {
  if (!r.ok) throw r.error;
  if (!quiet) console.log(`  ${r.outcome} #${r.sequence} ${r.snapshot.source} (${r.snapshot.priority}, ${r.snapshot.status}) → ${r.key}`);
  return r.snapshot.payload;
}

// The state of a run entering its first phase (no outputs, no cost), plus what this orchestrator tracks.
const empty = initialPhasedPayload('phase_0_intake', new Date(clockMs).toISOString());
const initial: PhasedWorkflowPayload = {
  ...empty,
  state_snapshot: {
    ...empty.state_snapshot,
    circuit_breaker_state: { github_api: { state: 'closed', failures: 0 } },
    active_lessons: ['L-014: verify after every GitHub PUT'],
  },
};
const at = (p: PhasedWorkflowPayload, phase: string, cost: number): PhasedWorkflowPayload => ({
  ...p,
  phase,
  state_snapshot: {
    ...p.state_snapshot,
    cost_accumulated: cost,
    current_phase_state: { ...p.state_snapshot.current_phase_state, phase, started_at: new Date(clockMs).toISOString() },
  },
});

// 1. One run through three phases, a gate, the 80% cost threshold and a circuit-breaker trip.
const runId = crypto.randomUUID();
console.log(`run ${runId}`);
const writer = createWriter({ storage, profile: phasedWorkflow, runId, clock });
const cost = createCostThresholdTrigger({ budgetUsd: 10 });
let state = show(await writer.checkpoint(phasedTriggers.phaseComplete(initial, 'phase_0', { request: 'add write-then-verify' })));
later(5);
state = show(
  await writer.checkpoint(phasedTriggers.gateDecision(state, { gate_id: 'gate_0', decision: 'pass', score: 0.91, iteration: 1 })),
);
later(20);
state = at(state, 'phase_0_5_research', 6.2);
state = show(await writer.checkpoint(phasedTriggers.phaseComplete(state, 'phase_0_5', { findings: 12 })));
later(30);
state = at(state, 'phase_1_plan', 8.4);
const threshold = cost.check(state);
if (threshold) state = show(await writer.checkpoint(threshold));
console.log(`  cost check again at $9.10: ${cost.check(at(state, 'phase_1_plan', 9.1)) ? 'fired' : 'already fired, nothing'}`);
later(2);
show(await writer.checkpoint(phasedTriggers.circuitBreakerTrip(state, 'github_api', { state: 'open', failures: 5 })));
await writer.close();

const files = await listAll(storage, `checkpoints/${runId}/`);
console.log(`files:\n${files.map((f) => `  ${f.key.slice(`checkpoints/${runId}/`.length)} (${f.size} bytes)`).join('\n')}`);
const index = decodeRunIndex((await storage.get(phasedWorkflow.layout.indexKey!(runId)))!.bytes);
console.log(`index.json: ${index.checkpoint_count} checkpoints, last ${index.checkpoints.at(-1)?.file_path}`);

// 2. Resume: a tripped breaker needs a human (step_4_determine_resume_point).
const plan = await planResume({ storage, profile: phasedWorkflow, runId, clock });
console.log(`\nresume at ${plan.at} (eligible ${plan.eligible}): ${plan.explanation}\n${plan.message ?? ''}`);

// 3. Size management: a 12 MB phase output (12 288 build-log lines) goes to part files the checkpoint references.
const big = createWriter({ storage, profile: phasedWorkflow, runId: crypto.randomUUID(), clock });
const huge = show(
  await big.checkpoint(
    phasedTriggers.phaseComplete(at(initial, 'phase_2_build', 1), 'phase_2', {
      log: Array.from({ length: 12 * 1024 }, (_, i) => `line ${i} `.padEnd(1024, '.')),
    }),
  ),
  true,
);
const parts = await listAll(storage, `checkpoints/${big.runId}/parts/`);
console.log(
  `\n12 MB phase output: main checkpoint ${(await storage.get(phasedWorkflow.layout.latestKey(big.runId)))!.bytes.length} bytes + ${parts.length} part file(s)`,
);
const back = await planResume({ storage, profile: phasedWorkflow, runId: big.runId, clock });
console.log(
  `read back whole: ${JSON.stringify(back.payload.state_snapshot.phase_outputs.phase_2).length === JSON.stringify(huge.state_snapshot.phase_outputs.phase_2).length}`,
);
await big.close();

// 4. Retention after a successful run: the 10 newest runs keep everything, older ones their final checkpoint.
await preserveRun({ storage, profile: phasedWorkflow, runId, reason: 'interesting breaker trip', clock });
const runs: string[] = [];
for (let r = 0; r < 12; r++) {
  later(60);
  const id = crypto.randomUUID();
  runs.push(id);
  const w = createWriter({ storage, profile: phasedWorkflow, runId: id, clock });
  let s = show(await w.checkpoint(phasedTriggers.phaseComplete(initial, 'phase_0', { r })), true);
  later(10);
  s = show(await w.checkpoint(phasedTriggers.gateDecision(s, { gate_id: 'gate_0', decision: 'pass', score: 0.8, iteration: 1 })), true);
  later(10);
  show(await w.checkpoint(phasedTriggers.at('phase_complete', s, 'completed')), true);
  await w.close();
}
const cleanup = await cleanupAfterRunCompletion({ storage, profile: phasedWorkflow, runId: runs.at(-1)!, clock });
if (cleanup.ran) console.log(`\nretention after run completion: ${cleanup.report.totals.filesDeleted} files deleted`);
for (const [label, id] of [
  ['newest run', runs.at(-1)!],
  ['11th newest', runs[1]!],
  ['preserved run', runId],
] as const) {
  const n = (await listAll(storage, `checkpoints/${id}/`)).filter((f) => /cp_\d+|latest/.test(f.key)).length;
  console.log(`  ${label}: ${n} checkpoint files`);
}
