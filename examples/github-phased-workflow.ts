/**
 * A phased workflow checkpointed into a GitHub repository, the phased-workflow-github.md
 * way: cp_NNN_trigger.json + latest.json + index.json in one commit per checkpoint,
 * batch files when the rate budget is low, the emergency queue when it is exhausted,
 * a concurrent writer, and resume from a fresh process.
 *
 *   npx tsx examples/github-phased-workflow.ts
 *
 * Without configuration it runs against the local GitHub emulator (no network, no
 * token). To use a real (throwaway!) repository:
 *
 *   GITHUB_TOKEN=github_pat_... SAVEPOINT_GITHUB_REPO=me/agent-checkpoints npx tsx examples/github-phased-workflow.ts
 */
import { createWriter, planResume, type CheckpointResult } from 'savepoint';
import { decodeRunIndex } from 'savepoint/toolkit';
import { initialPhasedPayload, phasedTriggers, phasedWorkflow, type PhasedWorkflowPayload } from 'savepoint/phased-workflow';
import { githubStorage, type GitHubStorageEvent } from 'savepoint/github';
import { startGitHubEmulator, type GitHubEmulator } from 'savepoint/testing';

const token = process.env.GITHUB_TOKEN;
const target = process.env.SAVEPOINT_GITHUB_REPO;
const live = Boolean(token && target);

let gh: GitHubEmulator | undefined;
let owner: string;
let repo: string;
if (live) {
  [owner, repo] = target!.split('/') as [string, string];
  console.log(`using the real repository ${owner}/${repo}`);
} else {
  // The emulator's rate-limit window is 2 s here so the emergency-queue demo does not wait an hour.
  gh = await startGitHubEmulator({ token: 'emulator-token', rateLimit: { windowMs: 2000 } });
  ({ owner, repo } = gh);
  console.log(`using the GitHub emulator at ${gh.url} (set GITHUB_TOKEN and SAVEPOINT_GITHUB_REPO for a real repository)`);
}

const events: GitHubStorageEvent[] = [];
const open = () =>
  githubStorage({
    owner,
    repo,
    token: token ?? 'emulator-token',
    // On github.com keep the defaults: 1 s between writes, waits of up to 5 min for a limit to
    // reset. Here any wait over 1 s sends writes to the emergency queue instead.
    ...(gh ? { baseUrl: gh.url, minWriteIntervalMs: 0, maxRateLimitWaitMs: 1000 } : {}),
    onEvent: (e) => {
      events.push(e);
      if (e.level === 'warn') console.log(`  ⚠ ${e.type}${'message' in e ? `: ${e.message}` : ''}`);
    },
  });
const storage = open();

const show = (r: CheckpointResult<PhasedWorkflowPayload>): PhasedWorkflowPayload => {
  if (!r.ok) throw r.error;
  console.log(`  ${r.outcome} #${r.sequence} ${r.snapshot.source} → ${r.key}`);
  return r.snapshot.payload;
};
// The state of a run entering its first phase: no outputs, no cost, empty histories.
const initial = initialPhasedPayload('phase_0_intake', new Date().toISOString());

// 1. A run: each checkpoint is one commit holding its history entry, latest.json and index.json.
const runId = crypto.randomUUID();
console.log(`\nrun ${runId}`);
const writer = createWriter({ storage, profile: phasedWorkflow, runId });
let state = show(await writer.checkpoint(phasedTriggers.phaseComplete(initial, 'phase_0', { request: 'add write-then-verify' })));
const before = storage.stats().requests;
state = show(
  await writer.checkpoint(phasedTriggers.gateDecision(state, { gate_id: 'gate_0', decision: 'pass', score: 0.91, iteration: 1 })),
);
state = show(await writer.checkpoint(phasedTriggers.at('expensive_op', { ...state, phase: 'phase_1_plan' })));
console.log(`  ${(storage.stats().requests - before) / 2} GitHub requests per checkpoint (tree, commit, ref update, read-back)`);

if (gh) {
  // 2. Another process commits to the branch between our read and our write: rebuilt and retried.
  gh.faults.add({ operation: 'git/update-ref', fault: { kind: 'move-head', path: 'elsewhere/other-process.txt' } });
  state = show(
    await writer.checkpoint(
      phasedTriggers.at('iteration', { ...state, state_snapshot: { ...state.state_snapshot, cost_accumulated: 0.5 } }),
    ),
  );
  console.log(`  lost the race ${events.filter((e) => e.type === 'conflict_retry').length}× to another writer, rebuilt on its commit`);

  // 3. Fewer than 100 requests left: the writer batches queued checkpoints into batch_{first}_{last}.json.
  gh.rateLimit.set({ remaining: 90 });
  await storage.get(`checkpoints/${runId}/latest.json`); // the budget is learned from every answer
  console.log(`\nrate budget: ${storage.rateBudget().remaining} left, low=${storage.rateBudget().low}`);
  const burst = await Promise.all(
    [1, 2, 3, 4].map((i) =>
      writer.checkpoint(phasedTriggers.at('expensive_op', { ...state, state_snapshot: { ...state.state_snapshot, cost_accumulated: i } })),
    ),
  );
  burst.forEach(show);

  // 4. The limit is exhausted: the checkpoint is queued locally, the workflow goes on, and it is pushed after the reset.
  gh.faults.add({ fault: { kind: 'primary-rate-limit' } });
  console.log('\nrate limit exhausted:');
  const trip = await writer.checkpoint(phasedTriggers.circuitBreakerTrip(state, 'github_api', { state: 'open', failures: 5 }));
  show(trip);
  console.log(`  held in the emergency queue: ${storage.pendingWrites().length} write(s); reads already see it:`);
  const latest = await storage.get(phasedWorkflow.layout.latestKey(runId));
  const onGitHub = trip.ok && gh.state.readFile(trip.key) !== undefined;
  console.log(
    `  latest.json (from the queue) is checkpoint #${(JSON.parse(new TextDecoder().decode(latest!.bytes)) as { sequence_number: number }).sequence_number}; on GitHub yet: ${onGitHub}`,
  );
  console.log('  close() pushes it once the limit resets…');
}
await writer.close(); // flushes the emergency queue first
console.log(`  queued writes after close: ${storage.pendingWrites().length}`);
await storage.close(); // in Node the queue lived in .savepoint/github-queue/ (fsync'd files); close() removes its empty folder

// 5. Resume from a fresh process: latest.json → index.json → history.
const fresh = open();
const plan = await planResume({ storage: fresh, profile: phasedWorkflow, runId });
console.log(`\nresume at ${plan.at} from #${plan.snapshot.sequence} (${plan.snapshot.source}): ${plan.explanation}`);
const index = decodeRunIndex((await fresh.get(phasedWorkflow.layout.indexKey!(runId)))!.bytes);
console.log(
  `index.json lists ${index.checkpoint_count} checkpoints: ${index.checkpoints.map((c) => c.file_path.slice(c.file_path.lastIndexOf('/') + 1)).join(', ')}`,
);
console.log(
  `requests: ${storage.stats().requests + fresh.stats().requests} in total; rate budget left ${fresh.rateBudget().remaining}/${fresh.rateBudget().limit}`,
);
if (gh) {
  console.log(`emulator: ${gh.state.log().length} commits, ${gh.schemaViolations.length} schema violations`);
  await gh.close();
}
