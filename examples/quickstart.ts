/**
 * Quickstart: an agent saves its state at every step boundary in the embedded store,
 * crashes in the middle of a checkpoint write, and a fresh writer resumes exactly
 * where it stopped.
 *
 *   npm run example
 */
import { createWriter, defaultProfile, memoryStorage, planResume } from 'savepoint';
import { faultyStorage } from 'savepoint/testing';

const plan = ['fetch issue', 'read code', 'write fix', 'run tests', 'open pull request'];
const runId = 'agent-run-1';

// The embedded store. In production use fsStorage({ dir }) from 'savepoint/fs', or githubStorage.
const store = memoryStorage();

// --- First process: works through the plan, and dies in the middle of a checkpoint. ---
// faultyStorage simulates the crash: the process dies just as it writes its 4th checkpoint.
// (memoryStorage commits a checkpoint's history entry, latest and index as one atomic batch,
// so the 4th checkpoint is the 4th write.)
const crashing = faultyStorage(store, { at: 3, action: 'crash', count: 'writes' });
const writer = createWriter({ storage: crashing, profile: defaultProfile, runId, heartbeatIntervalMs: false });

const done: string[] = [];
for (const step of plan) {
  done.push(step);
  const result = await writer.checkpoint({
    source: 'step_boundary',
    status: 'in_progress',
    payload: { done: [...done], next: plan[done.length] ?? null },
  });
  if (!result.ok) {
    console.log(`✗ checkpoint after "${step}" failed: ${result.reasonCode} — the process dies here`);
    break;
  }
  console.log(`✓ checkpoint #${result.sequence} after "${step}" is durable`);
}
// No close(): a crashed process does not clean up. (Its run lock is taken over below.)

// --- Second process: finds the newest valid snapshot and resumes. ---
const resume = await planResume({ storage: store, profile: defaultProfile, runId, warnExternalState: false });
const state = resume.payload as { done: string[]; next: string | null };
console.log(`\nresuming ${runId} from snapshot #${resume.snapshot.sequence} (found via ${resume.source.origin})`);
console.log(`  done so far: ${state.done.join(' → ')}`);
console.log(`  next step:   ${state.next}`);

const next = createWriter({ storage: store, profile: defaultProfile, runId, heartbeatIntervalMs: false });
const remaining = plan.slice(state.done.length);
for (const [i, step] of remaining.entries()) {
  state.done.push(step);
  const last = i === remaining.length - 1;
  const result = await next.checkpoint({
    source: 'step_boundary',
    status: last ? 'completed' : 'in_progress',
    payload: { done: [...state.done], next: plan[state.done.length] ?? null },
  });
  console.log(result.ok ? `✓ checkpoint #${result.sequence} after "${step}"${last ? ' — run completed' : ''}` : `✗ ${result.reasonCode}`);
}
await next.close();
