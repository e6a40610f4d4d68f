/**
 * Crash and resume, for real: this script starts itself again as a child process that
 * checkpoints a phased workflow (phased-workflow-github.md) into a temp directory with
 * the writer and fsStorage, kills that child with SIGKILL in the middle of its run, then
 * finds the incomplete run, resumes it with planResume, and finishes the workflow.
 *
 *   npx tsx examples/crash-and-resume.ts
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  createPhasedWorkflowResumeRule,
  emptyPhaseOutputs,
  nextPhaseKey,
  phasedWorkflow,
  PHASE_KEYS,
  type PhaseKey,
  type PhasedWorkflowPayload,
} from 'savepoint/phased-workflow';
import { createWriter, findIncompleteRuns, planResume } from 'savepoint';
import { fsStorage } from 'savepoint/fs';

const RUN_ID = '5f2b8c1e-9d4a-4e7b-a3c6-0b1d2e3f4a5b';
const NAMES: Record<PhaseKey, string> = {
  phase_0: 'intake',
  phase_0_5: 'research',
  phase_1: 'plan',
  phase_2: 'design',
  phase_3: 'build',
  phase_4: 'test',
  phase_5: 'review',
  phase_6: 'docs',
  phase_7: 'release',
  phase_8: 'retro',
};

/** The workflow state after `key` completed, given the outputs so far. */
function stateAfter(key: PhaseKey, outputs: PhasedWorkflowPayload['state_snapshot']['phase_outputs'], cost: number): PhasedWorkflowPayload {
  const phase = `${key}_${NAMES[key]}`;
  return {
    phase,
    state_snapshot: {
      phase_outputs: { ...outputs, [key]: { summary: `${NAMES[key]} done` } },
      current_phase_state: { phase, started_at: new Date().toISOString(), progress: { percent: 100 }, partial_output: null },
      gate_history: [],
      circuit_breaker_state: { github_api: 'closed' },
      cost_accumulated: cost,
      health_history: [],
      errors_encountered: [],
      active_lessons: ['L-7: verify every write'],
    },
    context_fields: { api_metrics: {}, fallback_flags: {}, iteration_counts: {}, warnings: [] },
  };
}

/** Child: run the workflow from the start, one phase_complete checkpoint per phase. */
async function child(dir: string): Promise<void> {
  const writer = createWriter({ storage: fsStorage({ dir }), profile: phasedWorkflow, runId: RUN_ID });
  let outputs = emptyPhaseOutputs();
  for (const [i, key] of PHASE_KEYS.entries()) {
    const payload = stateAfter(key, outputs, (i + 1) * 1.25);
    outputs = payload.state_snapshot.phase_outputs;
    const result = await writer.checkpoint({ source: 'phase_complete', status: 'in_progress', payload });
    if (result.ok) console.log(`checkpoint ${result.sequence}: ${payload.phase} complete (${result.key})`);
  }
  await writer.close();
}

async function parent(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'savepoint-crash-example-'));
  try {
    console.log(`1. A child process runs the workflow, checkpointing into ${dir}`);
    const self = fileURLToPath(import.meta.url);
    const proc = spawn(process.execPath, [...process.execArgv, self, 'child', dir], { stdio: ['ignore', 'pipe', 'inherit'] });
    let acknowledged = 0;
    createInterface({ input: proc.stdout }).on('line', (line) => {
      console.log(`   child: ${line}`);
      if (line.startsWith('checkpoint ') && ++acknowledged === 3) {
        console.log('2. Killing the child with SIGKILL in the middle of its run');
        proc.kill('SIGKILL');
      }
    });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => proc.once('exit', (_code, sig) => resolve(sig)));
    console.log(`   child exited by ${signal ?? 'itself'}`);

    const storage = fsStorage({ dir });
    console.log('3. On startup, look for runs that did not finish');
    const incomplete = await findIncompleteRuns({ storage, profile: phasedWorkflow });
    for (const run of incomplete) console.log(`   run ${run.runId}: status ${run.status} at checkpoint ${run.sequence} (${run.source})`);

    console.log('4. Resume it');
    // The rule names phases `<key>_<name>` (phase_2_design) instead of bare number keys (phase_2).
    const rule = createPhasedWorkflowResumeRule({ phaseNames: NAMES });
    const plan = await planResume({ storage, profile: phasedWorkflow, runId: RUN_ID, rule, currentLessons: ['L-7: verify every write'] });
    for (const line of plan.message!.split('\n')) console.log(`   ${line}`);
    console.log(`   found in ${plan.source.key} (${plan.source.origin}); why: ${plan.explanation}`);
    console.log(`   warnings: ${plan.warnings.map((w) => w.code).join(', ') || 'none'}`);

    console.log('5. Continue the workflow from the resume point');
    const writer = createWriter({ storage, profile: phasedWorkflow, runId: RUN_ID });
    let outputs = plan.payload.state_snapshot.phase_outputs;
    let cost = plan.payload.state_snapshot.cost_accumulated;
    let key = (plan.restored?.current_phase_key as PhaseKey | undefined) ?? 'phase_0';
    for (let next = nextPhaseKey(key); next !== undefined; key = next, next = nextPhaseKey(next)) {
      cost += 1.25;
      const payload = stateAfter(next, outputs, cost);
      outputs = payload.state_snapshot.phase_outputs;
      const last = nextPhaseKey(next) === undefined;
      const result = await writer.checkpoint({ source: 'phase_complete', status: last ? 'completed' : 'in_progress', payload });
      if (!result.ok) throw result.error;
      console.log(`   checkpoint ${result.sequence}: ${payload.phase} complete`);
    }
    await writer.close();

    console.log('6. Resume again: nothing is left to do');
    const done = await planResume({ storage, profile: phasedWorkflow, runId: RUN_ID, rule });
    console.log(`   at ${done.at}, eligible ${done.eligible}: ${done.explanation}`);
    console.log(`   incomplete runs now: ${(await findIncompleteRuns({ storage, profile: phasedWorkflow })).length}`);
    await storage.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'child') await child(process.argv[3]!);
else await parent();
