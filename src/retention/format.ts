import type { RetentionReport } from './apply.js';
import type { RetentionPlan } from './plan.js';
import { assertArrayArgument, assertObjectArgument, assertOptionsArgument } from '../contract/arguments.js';

/** Options of {@link formatRetentionPlan}. */
export interface FormatRetentionPlanOptions {
  /**
   * Most snapshot rows printed; the rest are counted in a last line.
   * @default 200
   */
  readonly maxRows?: number;
  /** Print kept snapshots too, not only those that change. @default true */
  readonly showKept?: boolean;
}

/**
 * What the safety reasons (kept whatever the policy's rules and ages say) mean: a row whose
 * only reason is one of these would otherwise survive a prune with no rule to explain it.
 */
const SAFETY_REASONS: Readonly<Record<string, string>> = {
  latest: "a run's latest snapshot (latest.json) is never deleted, whatever its age: resume reads it",
  newest: "a run's highest sequence is never deleted, whatever its age (history ahead of latest.json after a crash)",
  'preserved-run': 'the run is listed in preserved_runs.json',
  'preserved-runs-unreadable': 'preserved_runs.json cannot be read, so nothing is deleted',
  'no-rules': 'the policy has no rules: everything is kept',
  'batch-member-kept': 'a batch file is kept while any of its members is kept',
};

/** The legend lines of the safety reasons the shown rows carry, in a fixed order. */
function safetyLegend(reasons: ReadonlySet<string>): string[] {
  const lines = Object.entries(SAFETY_REASONS)
    .filter(([name]) => reasons.has(name))
    .map(([name, why]) => `  ${name}: ${why}`);
  return lines.length > 0 ? ['Kept by safety rules (no policy changes them):', ...lines] : [];
}

function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/**
 * The dry-run table of a plan: one row per snapshot (run, sequence, id, creation time,
 * status, action, the reasons that keep it), then the runs' tiers, the storage
 * operations, the totals and anything unreadable. Plain text, stable column order, for
 * terminals and for pasting into docs.
 */
export function formatRetentionPlan(plan: RetentionPlan, options: FormatRetentionPlanOptions = {}): string {
  assertObjectArgument(plan, 'formatRetentionPlan', 'plan');
  assertOptionsArgument(options, 'formatRetentionPlan');
  for (const field of ['rules', 'snapshots', 'runs', 'operations', 'unreadable', 'problems'] as const)
    assertArrayArgument(plan[field], 'formatRetentionPlan', `plan.${field}`);
  assertObjectArgument(plan.options, 'formatRetentionPlan', 'plan.options');
  assertObjectArgument(plan.totals, 'formatRetentionPlan', 'plan.totals');
  const maxRows = options.maxRows ?? 200;
  const showKept = options.showKept ?? true;
  const out: string[] = [];
  out.push(`Retention plan: profile ${plan.profile}, policy ${plan.policy}, at ${plan.nowIso}`);
  out.push(plan.rules.length > 0 ? 'Rules:' : 'Rules: none (everything is kept)');
  for (const r of plan.rules) out.push(`  ${r}`);
  out.push(...safetyLegend(new Set(plan.snapshots.flatMap((p) => p.reasons))));
  out.push(`Flags: allowRunDeletion=${plan.options.allowRunDeletion} deleteUnreadable=${plan.options.deleteUnreadable}`);
  out.push('');

  const shown = plan.snapshots.filter((p) => showKept || p.action !== 'keep');
  const rows: string[][] = [['RUN', 'SEQ', 'SNAPSHOT', 'CREATED', 'STATUS', 'ACTION', 'REASONS']];
  for (const p of shown.slice(0, maxRows)) {
    const s = p.snapshot;
    rows.push([s.runId, String(s.sequence), s.id, s.createdAt, s.status, p.action, p.reasons.join(', ') || '-']);
  }
  out.push(...table(rows));
  if (shown.length > maxRows) out.push(`… ${shown.length - maxRows} more snapshot(s) not shown`);

  if (plan.runs.some((r) => r.tier !== undefined || r.deleteRun || r.summary === 'write' || r.preserved)) {
    out.push('');
    const runRows: string[][] = [['RUN', 'RANK', 'TIER', 'PRESERVED', 'SUMMARY', 'RUN DELETED']];
    for (const r of plan.runs.slice(0, maxRows)) {
      runRows.push([
        r.runId,
        r.rank === undefined ? '-' : String(r.rank),
        r.tier ?? '-',
        r.preserved ? 'yes' : 'no',
        r.summary,
        r.deleteRun ? 'yes' : 'no',
      ]);
    }
    out.push(...table(runRows));
    if (plan.runs.length > maxRows) out.push(`… ${plan.runs.length - maxRows} more run(s) not shown`);
  }

  const ops = new Map<string, number>();
  for (const op of plan.operations) ops.set(op.type, (ops.get(op.type) ?? 0) + 1);
  out.push('');
  out.push(
    `Operations: ${plan.operations.length === 0 ? 'none' : [...ops.entries()].map(([t, n]) => `${n} ${t}`).join(', ')}` +
      (plan.totals.filesDeleted > 0 ? ` (${plan.totals.filesDeleted} file(s), ${bytes(plan.totals.bytesFreed)} freed)` : ''),
  );
  const t = plan.totals;
  out.push(
    `Snapshots: ${plan.snapshots.length} in ${plan.runs.length} run(s): keep ${t.keep}, compress ${t.compress}, summarize ${t.summarize}, delete ${t.delete}; ` +
      `${t.runsArchived} run(s) archived, ${t.runsDeleted} deleted`,
  );
  if (plan.unreadable.length > 0 || plan.problems.length > 0) {
    out.push('Problems:');
    for (const p of plan.problems) out.push(`  ${p.key}: ${p.reasonCode}`);
    for (const u of plan.unreadable)
      out.push(`  ${u.file.key}: unreadable ${u.file.kind} file, ${u.action === 'keep' ? 'kept' : 'deleted'}`);
  }
  return out.join('\n');
}

/** A short text report of an apply: status, what was done, what was skipped and why. */
export function formatRetentionReport(report: RetentionReport): string {
  assertObjectArgument(report, 'formatRetentionReport', 'report');
  assertObjectArgument(report.totals, 'formatRetentionReport', 'report.totals');
  assertObjectArgument(report.log, 'formatRetentionReport', 'report.log');
  assertArrayArgument(report.outcomes, 'formatRetentionReport', 'report.outcomes');
  const t = report.totals;
  const out = [
    `Retention ${report.dryRun ? 'dry run' : 'apply'}: profile ${report.profile}, policy ${report.policy}: ${report.status}`,
    `  ${t.done} operation(s) done, ${t.skipped} skipped; ${t.filesDeleted} file(s) deleted (${bytes(t.bytesFreed)}), ${t.compressed} compressed, ` +
      `${t.summariesWritten} summar${t.summariesWritten === 1 ? 'y' : 'ies'} written, ${t.indexesUpdated} index(es) updated`,
    `  log: ${report.log.key ?? 'none'}${report.log.written ? ' (entry appended)' : report.log.reasonCode ? ` (not appended: ${report.log.reasonCode})` : ' (not appended)'}`,
  ];
  for (const o of report.outcomes) {
    if (o.outcome === 'skipped' || o.outcome === 'failed')
      out.push(`  ${o.outcome}: ${o.operation.type} ${o.operation.key} (${o.reasonCode ?? 'unknown'})`);
  }
  return out.join('\n');
}
