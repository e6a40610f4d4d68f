/**
 * An agent session checkpointed the snapshot-lifecycle.md way: step and error
 * boundaries, coalescing within 3 s, the 120 s heartbeat, command outcomes since the
 * previous snapshot, 50-per-run retention with gzip after 24 h, and resume.
 *
 *   npx tsx examples/snapshot-lifecycle.ts
 *
 * Storage is in memory; time is a hand-driven clock so two days pass in an instant.
 */
import {
  checkpointWithOutcomes,
  createCommandOutcomeRecorder,
  heartbeatWithOutcomes,
  lifecycleTriggers,
  snapshotLifecycle,
  type SnapshotLifecyclePayload,
} from 'savepoint/snapshot-lifecycle';
import { createWriter, listAll, memoryStorage, planResume, runRetention, type CheckpointResult, type Clock } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';

// A clock the example moves by hand (the writer's heartbeat runs on it).
let now = Date.UTC(2026, 0, 15, 9, 0, 0);
const timers = new Set<{ at: number; fn: () => void }>();
const clock: Clock = {
  now: () => now,
  setTimeout: (fn, ms) => {
    const t = { at: now + ms, fn };
    timers.add(t);
    return t;
  },
  clearTimeout: (t) => void timers.delete(t as { at: number; fn: () => void }),
};
/** Moves time forward, firing due timers in order and letting the writer finish what each one started. */
async function advance(ms: number): Promise<void> {
  const end = now + ms;
  for (;;) {
    await writer.flush();
    const due = [...timers].filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
    if (!due) break;
    timers.delete(due);
    now = due.at;
    due.fn();
  }
  now = end;
}

const storage = memoryStorage();
const runId = 'session-2026-01-15';
const outcomes = createCommandOutcomeRecorder({ now: clock.now });
const writer = createWriter({ storage, profile: snapshotLifecycle, runId, clock, heartbeatPayload: heartbeatWithOutcomes(outcomes) });
writer.on('coalesced', (e) => console.log(`  coalesced ${e.source} into #${e.sequence} (source_details now ${e.recorded})`));

function show(label: string, r: CheckpointResult<SnapshotLifecyclePayload>, quiet = false): SnapshotLifecyclePayload {
  if (!r.ok) throw r.error;
  if (quiet) return r.snapshot.payload;
  const n = r.snapshot.payload.command_outcomes.length;
  console.log(`${label.padEnd(28)} → ${r.outcome} #${r.sequence} ${r.snapshot.source}/${r.snapshot.status}, ${n} command outcome(s)`);
  return r.snapshot.payload;
}

let state: SnapshotLifecyclePayload = {
  step_state: {
    plan_path: 'plans/epic-19.md',
    step_id: '19.1',
    step_ordinal: 1,
    step_status: 'pending',
    todo_compliance: { result: 'PASS', violations: [], checked_at: new Date(now).toISOString() },
    resume_hints: { eligible: true, reason_code: 'step_in_progress', next_actions: ['write the snapshot schema'] },
  },
  context_digest: { window_pressure: 'low', protected_artifacts: ['plans/epic-19.md'], dropped_items: 0, policy_profile: 'balanced' },
  command_outcomes: [],
};

// Step boundary: the step enters in_progress.
state = show(
  'step 19.1 in_progress',
  await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.stepEntered(state, { step_id: '19.1', step_ordinal: 1 })),
);
// A manual /checkpoint 1 s later with nothing changed is coalesced (recorded in source_details).
await advance(1000);
await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.manual(state));

// The agent runs commands; the recorder collects them for the next snapshot.
await outcomes.track(
  'shell',
  'npm test',
  async () => {
    await advance(4000);
    return 38;
  },
  { summary: (n) => `${n} tests passed` },
);
outcomes.record({ kind: 'tool_use', name: 'edit_file', result: 'PASS', duration_ms: 12, summary: 'src/contract/snapshot.ts' });
state = show('step 19.1 done', await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.stepFinished(state, 'done')));

// A recoverable error at step 19.2, then two heartbeats while the plan stays in_progress.
await advance(10_000);
state = show(
  'step 19.2 in_progress',
  await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.stepEntered(state, { step_id: '19.2', step_ordinal: 2 })),
);
outcomes.record({
  kind: 'shell',
  name: 'npm run build',
  result: 'FAIL',
  duration_ms: 2300,
  reason_code: 'tsc_error',
  summary: '1 type error',
});
state = show(
  'recoverable error',
  await checkpointWithOutcomes(
    writer,
    outcomes,
    lifecycleTriggers.recoverableError(state, { reason_code: 'tsc_error', next_actions: ['fix src/writer/index.ts:12'] }),
  ),
);
await advance(240_000);
const latest = await readSnapshot(storage, snapshotLifecycle, snapshotLifecycle.layout.latestKey(runId));
console.log(`4 minutes without a trigger: latest is #${latest?.sequence} (${latest?.source}), the second 120 s heartbeat`);

// Five more days of work: a step every 2 hours, the agent paused in between (no heartbeat while paused).
for (let i = 3; i <= 62; i++) {
  const entered = await checkpointWithOutcomes(
    writer,
    outcomes,
    lifecycleTriggers.stepEntered(state, { step_id: `19.${i}`, step_ordinal: i }),
  );
  state = show(i === 3 ? 'steps 19.3 … 19.62' : '', entered, i !== 3);
  await advance(60_000);
  state = show('', await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.stepFinished(state, 'done')), true);
  state = show('', await checkpointWithOutcomes(writer, outcomes, lifecycleTriggers.manual(state, 'paused')), true);
  await advance(119 * 60_000);
}
const stop = await checkpointWithOutcomes(
  writer,
  outcomes,
  lifecycleTriggers.forcedStop(state, { reason_code: 'disk_full', next_actions: ['free disk space', 'resume'] }),
);
show('forced stop', stop);
await writer.close();

const before = (await listAll(storage, `checkpoints/${runId}/history/`)).length;
const { report } = await runRetention({ storage, profile: snapshotLifecycle, clock });
const after = await listAll(storage, `checkpoints/${runId}/history/`);
console.log(
  `\nretention (${snapshotLifecycle.retention?.name}): history ${before} → ${after.length} files, ${after.filter((e) => e.key.endsWith('.gz')).length} gzipped; ${report.totals.filesDeleted} deleted, ${report.totals.compressed} compressed`,
);

// Resume: the run failed at a forced stop, so the hints say a human decides.
const plan = await planResume({ storage, profile: snapshotLifecycle, runId, clock });
console.log(`resume: at ${plan.at}, eligible ${plan.eligible}, reason ${plan.reason}`);
console.log(`  ${plan.explanation}`);
console.log(`  next: ${plan.remaining.join('; ')}`);
