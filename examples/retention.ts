/**
 * Retention: run with `npx tsx examples/retention.ts`.
 *
 * Builds an in-memory store with four runs written by a CheckpointWriter over three weeks,
 * preserves one of them, prints the dry-run plan of snapshot-lifecycle.md's default
 * policy (50 per run, latest failed/completed, 14 days, gzip after 24 h), applies it and
 * prints the report, then shows a "keep 7 daily + 4 weekly" policy on what is left.
 */
import {
  createWriter,
  defaultProfile,
  formatRetentionPlan,
  formatRetentionReport,
  keepDaily,
  keepLatestStatus,
  keepWeekly,
  listAll,
  memoryStorage,
  preserveRun,
  runRetention,
  type Clock,
  type JsonValue,
} from 'savepoint';
import { snapshotLifecycleRetention } from 'savepoint/snapshot-lifecycle';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse('2025-06-21T09:00:00Z');

// A clock we set by hand, so the runs can be spread over three weeks without waiting.
let now = NOW - 21 * DAY;
const clock: Clock = {
  now: () => now,
  setTimeout: (cb, ms) => globalThis.setTimeout(cb, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as ReturnType<typeof setTimeout>),
};

const storage = memoryStorage();

/** Writes `steps` checkpoints `every` ms apart starting at `start`; the last one gets `final`. */
async function run(runId: string, start: number, steps: number, every: number, final: string, failAt?: number): Promise<void> {
  now = start;
  const writer = createWriter<JsonValue>({ storage, profile: defaultProfile, runId, clock, heartbeatIntervalMs: false });
  for (let step = 1; step <= steps; step++) {
    const status = step === steps ? final : step === failAt ? 'failed' : 'in_progress';
    const r = await writer.checkpoint({
      source: step === failAt ? 'error_boundary' : 'step_boundary',
      status,
      payload: { step, of: steps },
    });
    if (!r.ok) throw new Error(`checkpoint failed: ${r.reasonCode}`);
    now += every;
  }
  await writer.close();
}

await run('nightly-0601', NOW - 20 * DAY, 6, HOUR, 'completed');
await run('nightly-0603', NOW - 18 * DAY, 5, HOUR, 'failed');
await run('agent-0615', NOW - 6 * DAY, 60, 2 * HOUR, 'in_progress', 12);
await run('agent-0621', NOW - 3 * HOUR, 3, HOUR, 'in_progress');
now = NOW;

// Keep the failed nightly run for its post-mortem (phased-workflow-github.md manual_override).
await preserveRun({ storage, profile: defaultProfile, runId: 'nightly-0603', reason: 'flaky network post-mortem', clock });

console.log(`store: ${(await listAll(storage, 'checkpoints/')).length} files\n`);

const dry = await runRetention({ storage, profile: defaultProfile, policy: snapshotLifecycleRetention, clock, dryRun: true });
console.log(formatRetentionPlan(dry.plan, { maxRows: 20, showKept: false }));
console.log();
console.log(formatRetentionReport(dry.report));

console.log('\n--- apply ---');
const applied = await runRetention({ storage, profile: defaultProfile, policy: snapshotLifecycleRetention, clock });
console.log(formatRetentionReport(applied.report));
console.log(
  `store: ${(await listAll(storage, 'checkpoints/')).length} files; compressed history entries: ${(await listAll(storage, 'checkpoints/')).filter((e) => e.key.endsWith('.json.gz')).length}`,
);

console.log('\n--- "keep 7 daily + 4 weekly" (Europe/Berlin), dry run ---');
const calendar = await runRetention({
  storage,
  profile: defaultProfile,
  policy: {
    name: '7-daily-4-weekly',
    rules: [
      keepDaily(7, { timeZone: 'Europe/Berlin' }),
      keepWeekly(4, { timeZone: 'Europe/Berlin' }),
      keepLatestStatus('failed'),
      keepLatestStatus('completed'),
    ],
  },
  clock,
  dryRun: true,
});
console.log(formatRetentionPlan(calendar.plan, { maxRows: 12, showKept: true }));

const again = await runRetention({ storage, profile: defaultProfile, policy: snapshotLifecycleRetention, clock, dryRun: true });
console.log(`\nplanning the default policy again: ${again.plan.operations.length} operation(s) — retention is idempotent`);
