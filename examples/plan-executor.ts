/**
 * A plan executor that checkpoints after each task, times out, and is resumed.
 *
 *   npx tsx examples/plan-executor.ts
 *
 * Uses the planExecutor profile (plan-executor.md): `plans/{NN}-CHECKPOINT.json` with
 * exactly the spec's fields plus one `integrity` object. Storage is in memory.
 */
import { createWriter, findIncompleteRuns, memoryStorage, planResume, type CheckpointResult } from 'savepoint';
import {
  importPlanExecutorDocument,
  planExecutor,
  planExecutorTriggers,
  planResumeFields,
  planStatusSummary,
  type PlanExecutorPayload,
} from 'savepoint/plan-executor';

const storage = memoryStorage();
const tasks = ['Task 1: Setup', 'Task 2: Models', 'Task 3: Add API routes', 'Task 4: Tests'];

function show(label: string, result: CheckpointResult<PlanExecutorPayload>): PlanExecutorPayload {
  if (!result.ok) throw result.error;
  console.log(
    `${label.padEnd(22)} → ${result.outcome} #${result.sequence} (${result.snapshot.source}, ${result.snapshot.status}) at ${result.key}`,
  );
  return result.snapshot.payload;
}

// 1. The executor starts plan 02 and writes a checkpoint after each task completion.
const writer = createWriter({ storage, profile: planExecutor, runId: '02' });
let state = show('plan start', await writer.checkpoint(planExecutorTriggers.start('02', tasks)));
state = show(
  'task 1 done',
  await writer.checkpoint(planExecutorTriggers.taskCompleted(state, { commit: 'abc123', files: ['package.json'] })),
);
state = show(
  'task 2 done',
  await writer.checkpoint(planExecutorTriggers.taskCompleted(state, { commit: 'def456', files: ['src/models.ts'] })),
);

// 2. The orchestrator's time limit hits during task 3, after one partial commit.
show('timeout', await writer.checkpoint(planExecutorTriggers.timedOut(state, { partialCommits: ['0a1b2c3'], files: ['src/api.ts'] })));
await writer.close();

const stored = await storage.get(planExecutor.layout.latestKey('02'));
console.log(`\n${planExecutor.layout.latestKey('02')}:\n${JSON.stringify(JSON.parse(new TextDecoder().decode(stored!.bytes)), null, 2)}\n`);

// 3. On startup, the orchestrator looks for plans to resume: timeout is not terminal.
const incomplete = await findIncompleteRuns({ storage, profile: planExecutor });
console.log('incomplete plans:', incomplete.map((r) => `${r.runId} (${r.status})`).join(', '));

// 4. timeout-handling.md's status display, and spawn-plan-executor.md's resume fields.
const plan = await planResume({ storage, profile: planExecutor, runId: '02' });
console.log(`\n${planStatusSummary(plan.snapshot).lines.join('\n')}`);
console.log('\nresume fields:', JSON.stringify(planResumeFields(plan.snapshot)));
console.log(`\nresume at task index ${plan.at} (${plan.reason}), eligible: ${plan.eligible}`);
for (const w of plan.warnings) console.log(`warning ${w.code}: ${w.message}`);
console.log(`continuation prompt:\n${plan.continuationPrompt ?? ''}\n`);

// 5. The resumed executor continues the same plan; numbering continues after the timeout.
const resumed = createWriter({ storage, profile: planExecutor, runId: '02' });
state = show(
  'task 3 done (resumed)',
  await resumed.checkpoint(planExecutorTriggers.taskCompleted(plan.payload, { commit: '789abc', files: ['src/api.ts'] })),
);
show(
  'task 4 done',
  await resumed.checkpoint(planExecutorTriggers.taskCompleted(state, { commit: 'fed987', files: ['tests/api.test.ts'] })),
);
await resumed.close();
console.log('incomplete plans now:', (await findIncompleteRuns({ storage, profile: planExecutor })).length);

// 6. A checkpoint written by another executor (the spec's own example) is imported and sealed.
const example = {
  plan_number: '03',
  current_task_index: 2,
  current_task: 'Task 3: Add API routes',
  completed_tasks: [
    { name: 'Task 1: Setup', commit: 'abc123' },
    { name: 'Task 2: Models', commit: 'def456' },
  ],
  remaining_tasks: [{ name: 'Task 4: Tests' }],
  last_activity: '2026-01-15T14:30:00Z',
  status: 'in_progress',
  error: null,
  total_tasks: 4,
  task_commits: { '1': 'abc123', '2': 'def456' },
  files_modified: ['src/api.ts', 'src/models.ts'],
  partial_commits: [],
};
const imported = await importPlanExecutorDocument(example);
await storage.put(planExecutor.layout.latestKey('03'), imported.bytes);
const foreign = await planResume({ storage, profile: planExecutor, runId: '03' });
console.log(
  `\nimported plan 03 (snapshot ${imported.snapshot.id}): resume at task index ${foreign.at}, ${foreign.remaining.length} tasks remain`,
);
