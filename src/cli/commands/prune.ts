import { formatRetentionPlan, formatRetentionReport } from '../../retention/format.js';
import {
  keepDaily,
  keepHourly,
  keepLast,
  keepLatestStatus,
  keepMonthly,
  keepWeekly,
  keepWithin,
  keepYearly,
} from '../../retention/policy.js';
import { type RetentionPolicy, type RetentionRule } from '../../contract/retention-policy.js';
import { applyRetention } from '../../retention/apply.js';
import { sweepChunks } from '../../retention/chunk-sweep.js';
import { buildInventory, type RetentionInventory } from '../../retention/inventory.js';
import { planRetention, type RetentionPlan } from '../../retention/plan.js';
import { profileHint, storeLabel } from '../probe.js';
import { stringFlag, type Command, type CommandContext } from '../command.js';
import { CliError, EXIT, notFound, printJson } from '../io.js';

const COUNT_FLAGS = {
  'keep-last': (n: number) => keepLast(n),
  'keep-hourly': (n: number, tz: string) => keepHourly(n, { timeZone: tz }),
  'keep-daily': (n: number, tz: string) => keepDaily(n, { timeZone: tz }),
  'keep-weekly': (n: number, tz: string) => keepWeekly(n, { timeZone: tz }),
  'keep-monthly': (n: number, tz: string) => keepMonthly(n, { timeZone: tz }),
  'keep-yearly': (n: number, tz: string) => keepYearly(n, { timeZone: tz }),
} as const;

/** A policy from restic-style flags, or `undefined` when none is given (the profile's policy applies). */
function policyFromFlags(ctx: CommandContext): RetentionPolicy | undefined {
  const tz = stringFlag(ctx, 'tz') ?? 'UTC';
  const rules: RetentionRule[] = [];
  for (const [flag, make] of Object.entries(COUNT_FLAGS)) {
    const raw = stringFlag(ctx, flag);
    if (raw === undefined) continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new CliError(`--${flag} takes a whole number`);
    rules.push(make(n, tz));
  }
  const within = stringFlag(ctx, 'keep-within');
  if (within !== undefined) rules.push(keepWithin(within));
  const statuses = ctx.values['keep-status'];
  for (const status of Array.isArray(statuses) ? statuses : []) {
    // A typo would add a rule that keeps nothing, and the dry run would look plausible.
    if (!ctx.profile.statuses.all.includes(status)) {
      throw new CliError(
        `--keep-status "${status}" is not a status of profile ${ctx.profile.name}; valid: ${ctx.profile.statuses.all.join(', ')}`,
      );
    }
    rules.push(keepLatestStatus(status));
  }
  const compressAfter = stringFlag(ctx, 'compress-after');
  if (rules.length === 0 && compressAfter === undefined) return undefined;
  return { name: 'command-line', rules, ...(compressAfter !== undefined ? { compressAfter } : {}) };
}

/** The plan in one line, for `-q`. */
function planTotals(plan: RetentionPlan): string {
  const t = plan.totals;
  return `${plan.snapshots.length} snapshot(s) in ${plan.runs.length} run(s): keep ${t.keep}, compress ${t.compress}, summarize ${t.summarize}, delete ${t.delete}; ${plan.operations.length} operation(s)\n`;
}

/** The inventory of the runs named on the command line only (all runs when none is named). */
async function inventoryOf(ctx: CommandContext, runIds: readonly string[]): Promise<RetentionInventory> {
  for (const runId of runIds) ctx.profile.assertRunId(runId);
  const inventory = await buildInventory({ storage: ctx.storage, profile: ctx.profile });
  if (runIds.length === 0) return inventory;
  const known = new Set(inventory.runs.map((r) => r.runId));
  const missing = runIds.find((r) => !known.has(r));
  if (missing !== undefined) {
    throw notFound(
      `run "${missing}" not found in ${storeLabel(ctx.values, ctx.storage)} (profile ${ctx.profile.name}).${await profileHint(ctx.storage, ctx.profile)}`,
    );
  }
  const wanted = new Set(runIds);
  return {
    ...inventory,
    runs: inventory.runs.filter((r) => wanted.has(r.runId)),
    problems: inventory.problems.filter((p) => p.runId !== undefined && wanted.has(p.runId)),
  };
}

/** `savepoint prune [RUN…] [--keep-last N …] [--apply]` */
export const pruneCommand: Command = {
  name: 'prune',
  usage: '[RUN…] [--keep-last N] [--keep-within DUR] [--keep-daily N] … [--apply]',
  summary:
    "Apply a retention policy (the profile's, or one from flags) to every run or the runs named; a dry run with reasons unless --apply",
  options: {
    'keep-last': { type: 'string', value: 'N', description: 'Keep the last N snapshots of each run' },
    'keep-within': { type: 'string', value: 'DUR', description: 'Keep snapshots younger than DUR (e.g. 14d, 36h, 1w2d)' },
    'keep-hourly': { type: 'string', value: 'N', description: 'Keep the newest snapshot of each of the last N hours' },
    'keep-daily': { type: 'string', value: 'N', description: 'Keep the newest snapshot of each of the last N days' },
    'keep-weekly': { type: 'string', value: 'N', description: 'Keep the newest snapshot of each of the last N ISO weeks' },
    'keep-monthly': { type: 'string', value: 'N', description: 'Keep the newest snapshot of each of the last N months' },
    'keep-yearly': { type: 'string', value: 'N', description: 'Keep the newest snapshot of each of the last N years' },
    'keep-status': { type: 'string', multiple: true, value: 'S', description: 'Keep the latest snapshot with status S (repeatable)' },
    'compress-after': { type: 'string', value: 'DUR', description: 'Gzip kept history entries older than DUR' },
    tz: { type: 'string', value: 'ZONE', description: 'IANA time zone for calendar buckets (default UTC)' },
    apply: { type: 'boolean', description: 'Execute the plan (default: dry run)' },
    'allow-run-deletion': {
      type: 'boolean',
      description:
        "Allow a plan to delete every snapshot of an archived run, keeping only its summary (a policy whose run tiers say archiveKeeps: 'summary', as phasedWorkflow's spec tiers do, deletes them without this flag)",
    },
    'delete-unreadable': { type: 'boolean', description: 'Also delete files that fail validation (default: kept and reported)' },
  },
  async run(ctx) {
    const flagPolicy = policyFromFlags(ctx);
    if (!flagPolicy && !ctx.profile.retention) {
      throw new CliError(`profile "${ctx.profile.name}" has no default retention policy; pass --keep-* flags`);
    }
    const apply = ctx.values.apply === true;
    const inventory = await inventoryOf(ctx, [...new Set(ctx.positionals)]);
    const plan = planRetention(inventory, flagPolicy ?? ctx.profile.retention!, ctx.clock.now(), {
      allowRunDeletion: ctx.values['allow-run-deletion'] === true,
      deleteUnreadable: ctx.values['delete-unreadable'] === true,
    });
    const quiet = ctx.values.quiet === true;
    if (!ctx.json) ctx.io.stdout.write(quiet ? planTotals(plan) : formatRetentionPlan(plan));
    if (apply && ctx.io.stderr.isTTY === true && !quiet) ctx.io.stderr.write(`applying ${plan.operations.length} operations…\r`);
    const report = await applyRetention({ storage: ctx.storage, profile: ctx.profile, plan, clock: ctx.clock, dryRun: !apply });
    if (apply && ctx.io.stderr.isTTY === true && !quiet) ctx.io.stderr.write(`${' '.repeat(40)}\r`);
    // Content chunks that no document references any more are freed by the sweep (docs/storage.md, "Content chunks").
    const chunks = apply ? await sweepChunks(ctx.storage, { clock: ctx.clock }) : undefined;
    if (ctx.json) {
      printJson(ctx.io, { profile: ctx.profile.name, dryRun: !apply, plan, ...(apply ? { report, chunks } : {}) });
      return EXIT.ok;
    }
    // -q: the totals above were the whole answer; otherwise the report, ending its last line.
    if (apply && !quiet) ctx.io.stdout.write(`\n${formatRetentionReport(report)}\n`);
    else if (apply) ctx.io.stdout.write(`${report.totals.done} operation(s) done, ${report.totals.skipped} skipped\n`);
    else if (!quiet) ctx.io.stdout.write('\nDry run: nothing was changed. Run again with --apply to execute this plan.\n');
    if (apply && !quiet && chunks && chunks.hidden.length + chunks.deleted.length + chunks.restored.length > 0)
      ctx.io.stdout.write(
        `Chunks: ${chunks.hidden.length} unreferenced hidden, ${chunks.deleted.length} hidden past the grace period deleted, ${chunks.restored.length} put back.\n`,
      );
    return EXIT.ok;
  },
};
