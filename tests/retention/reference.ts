/**
 * A slow, obviously-correct reference planner: every rule is evaluated straight from its
 * definition for each snapshot (O(n²) per run, calendar buckets from Intl's formatted
 * local date, ISO weeks from the textbook algorithm), with none of the planner's
 * bitmasks, sort shortcuts or bucket arithmetic. The property tests compare it with
 * `planRetention` on random inventories.
 */
import type { InventoryRun, InventorySnapshot, PlanRetentionOptions, RetentionAction, RetentionInventory } from 'savepoint/toolkit';
import type { RetentionPolicy, RetentionRule } from 'savepoint';

const HOUR = 3_600_000;
const UNIT_MS: Record<string, number> = { w: 7 * 24 * HOUR, d: 24 * HOUR, h: HOUR, m: 60_000, s: 1000, ms: 1 };

/** Milliseconds of a duration (only the forms the generators produce: ms, or "<n><unit>" pairs). */
export function durationMs(d: number | string | undefined): number {
  if (d === undefined) return Infinity;
  if (typeof d === 'number') return d;
  let total = 0;
  for (const m of d.matchAll(/(\d+)(ms|w|d|h|m|s)/g)) total += Number(m[1]) * UNIT_MS[m[2]!]!;
  return total;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The local calendar label of an instant: `YYYY-MM-DDTHH` / `YYYY-MM-DD` / `YYYY-Www` / `YYYY-MM` / `YYYY`. */
export function referenceBucket(unit: string, timeZone: string, ms: number): string {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  const parts = Object.fromEntries(f.formatToParts(ms).map((p) => [p.type, p.value]));
  const y = Number(parts.year);
  const mo = Number(parts.month);
  const d = Number(parts.day);
  const pad = (n: number): string => String(n).padStart(2, '0');
  switch (unit) {
    case 'hour':
      return `${y}-${pad(mo)}-${pad(d)}T${pad(Number(parts.hour))}`;
    case 'day':
      return `${y}-${pad(mo)}-${pad(d)}`;
    case 'month':
      return `${y}-${pad(mo)}`;
    case 'year':
      return String(y);
    case 'week': {
      // ISO 8601: the week with the year's first Thursday is week 1; weeks start on Monday.
      const date = new Date(Date.UTC(y, mo - 1, d));
      const dayNum = date.getUTCDay() || 7;
      date.setUTCDate(date.getUTCDate() + 4 - dayNum);
      const yearStart = Date.UTC(date.getUTCFullYear(), 0, 1);
      const week = Math.ceil(((date.getTime() - yearStart) / 86_400_000 + 1) / 7);
      return `${date.getUTCFullYear()}-W${pad(week)}`;
    }
    default:
      throw new Error(unit);
  }
}

function ruleName(rule: RetentionRule): string {
  if (rule.name) return rule.name;
  if (rule.rule === 'keep-latest-status') return `keep-latest-${rule.status}`;
  if (rule.rule === 'keep-calendar')
    return { hour: 'keep-hourly', day: 'keep-daily', week: 'keep-weekly', month: 'keep-monthly', year: 'keep-yearly' }[rule.unit];
  if (rule.rule === 'run-tiers') return 'run-tier';
  return rule.rule;
}

/** `a` is newer than `b` within a run: a higher sequence; at the same sequence, later, or as late with a greater id. */
const newer = (a: InventorySnapshot, b: InventorySnapshot): boolean =>
  a.sequence > b.sequence ||
  (a.sequence === b.sequence && (a.createdAtMs > b.createdAtMs || (a.createdAtMs === b.createdAtMs && a.id > b.id)));

export interface ReferenceDecision {
  readonly action: RetentionAction;
  readonly reasons: ReadonlySet<string>;
}

export interface ReferencePlan {
  /** Keyed by `${runId}\u0000${id}`. */
  readonly snapshots: Map<string, ReferenceDecision>;
  readonly deletedRuns: Set<string>;
  /** Runs thinned to latest.json alone (`finalKeeps: 'latest'`). */
  readonly latestOnlyRuns: Set<string>;
}

function finalOf(snaps: readonly InventorySnapshot[]): InventorySnapshot | undefined {
  const latest = snaps.find((s) => s.latest);
  if (latest) return latest;
  let best: InventorySnapshot | undefined;
  for (const s of snaps) if (!best || s.sequence > best.sequence || (s.sequence === best.sequence && newer(s, best))) best = s;
  return best;
}

export function referencePlan(
  inv: RetentionInventory,
  policy: RetentionPolicy,
  now: number,
  options: PlanRetentionOptions = {},
): ReferencePlan {
  const rules = policy.rules;
  const tiers = rules.find((r) => r.rule === 'run-tiers');
  const tierName = tiers ? ruleName(tiers) : 'run-tier';
  const out = new Map<string, ReferenceDecision>();
  const deletedRuns = new Set<string>();
  const latestOnlyRuns = new Set<string>();

  const runTime = (run: InventoryRun): number => {
    const f = finalOf(run.snapshots);
    if (f) return f.createdAtMs;
    if (run.summary?.lastCheckpointAtMs !== undefined) return run.summary.lastCheckpointAtMs;
    return -Infinity;
  };
  const ranked = [...inv.runs].sort((a, b) => {
    const ta = runTime(a);
    const tb = runTime(b);
    if (ta !== tb) return tb > ta ? 1 : -1;
    return a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0;
  });

  for (const run of inv.runs) {
    const snaps = run.snapshots;
    const reasons = new Map<InventorySnapshot, Set<string>>(snaps.map((s) => [s, new Set<string>()]));
    const add = (s: InventorySnapshot, r: string): void => void reasons.get(s)!.add(r);
    const preservedFile = inv.preservedRuns.includes(run.runId);
    const preservedRule = rules.some((r) => r.rule === 'preserve-runs' && r.runIds.includes(run.runId));
    const preserved = preservedFile || preservedRule || !inv.preservedRunsReadable;
    const rank = ranked.indexOf(run);
    const tier =
      tiers && tiers.rule === 'run-tiers'
        ? rank < tiers.keepAll
          ? 'recent'
          : rank < tiers.keepAll + tiers.keepFinal
            ? 'final'
            : 'archive'
        : undefined;
    const summaryKey = run.summary?.key ?? run.summaryKey;
    const archived = tier === 'archive' && !preserved && summaryKey !== undefined;
    const final = finalOf(snaps);
    const tierRule = tiers && tiers.rule === 'run-tiers' ? tiers : undefined;

    for (const s of snaps) {
      const age = now - s.createdAtMs;
      if (preservedFile) add(s, 'preserved-run');
      if (!inv.preservedRunsReadable) add(s, 'preserved-runs-unreadable');
      if (rules.length === 0) add(s, 'no-rules');
      if (tier === 'recent') add(s, `${tierName}-recent`);
      for (const rule of rules) {
        const name = ruleName(rule);
        switch (rule.rule) {
          case 'keep-last': {
            const maxAge = durationMs(rule.maxAge);
            if (age >= maxAge) break;
            // The count newest by sequence, whatever their age; the age limit only removes.
            if (snaps.filter((t) => newer(t, s)).length < rule.count) add(s, name);
            break;
          }
          case 'keep-within':
            if (age < durationMs(rule.duration)) add(s, name);
            break;
          case 'keep-latest-status':
            if (s.status === rule.status && !snaps.some((t) => t.status === rule.status && newer(t, s))) add(s, name);
            break;
          case 'keep-calendar': {
            const maxAge = durationMs(rule.maxAge);
            if (rule.count === 0 || age >= maxAge) break;
            const tz = rule.timeZone ?? 'UTC';
            const b = referenceBucket(rule.unit, tz, s.createdAtMs);
            // Buckets of every snapshot, whatever its age; the age limit only removes.
            if (snaps.some((t) => newer(t, s) && referenceBucket(rule.unit, tz, t.createdAtMs) === b)) break;
            const newerBuckets = new Set(snaps.filter((t) => newer(t, s)).map((t) => referenceBucket(rule.unit, tz, t.createdAtMs)));
            newerBuckets.delete(b);
            if (newerBuckets.size < rule.count) add(s, name);
            break;
          }
          case 'preserve-runs':
            if (rule.runIds.includes(run.runId)) add(s, name);
            break;
          case 'run-tiers':
            break;
        }
      }
    }

    // latest-only (the spec's "delete all except latest.json"): latest.json is the newest
    // readable snapshot, the run is healthy and nothing else of it is kept by a rule.
    const healthy =
      (!run.latest || run.latest.readable) &&
      (!run.index || run.index.readable) &&
      (options.deleteUnreadable === true || (run.unreadable.length === 0 && !run.batches.some((b) => b.unreadableMembers > 0)));
    const latestSnap = snaps.find((s) => s.latest);
    let newestSnap: InventorySnapshot | undefined;
    for (const s of snaps)
      if (!newestSnap || s.sequence > newestSnap.sequence || (s.sequence === newestSnap.sequence && newer(s, newestSnap))) newestSnap = s;
    const latestOnly =
      tier === 'final' &&
      tierRule?.finalKeeps === 'latest' &&
      !preserved &&
      healthy &&
      snaps.every((s) => reasons.get(s)!.size === 0) &&
      latestSnap !== undefined &&
      latestSnap === newestSnap &&
      run.latest?.readable === true;
    for (const s of snaps) if ((tier === 'final' || (tier === 'archive' && !archived)) && s === final) add(s, `${tierName}-final`);

    // Batch files: a file with a kept member (or an unreadable one) keeps all its members.
    const pinned = (key: string): boolean => !options.deleteUnreadable && run.batches.some((b) => b.key === key && b.unreadableMembers > 0);
    const spread = (): void => {
      if (latestOnly) return;
      let changed = true;
      while (changed) {
        changed = false;
        for (const s of snaps) {
          if (reasons.get(s)!.size > 0) continue;
          const mates = snaps.filter((t) => t !== s && t.batches.some((k) => s.batches.includes(k)));
          if (s.batches.some(pinned) || mates.some((t) => reasons.get(t)!.size > 0)) {
            add(s, 'batch-member-kept');
            changed = true;
          }
        }
      }
    };
    spread();

    const nothingKept = snaps.every((s) => reasons.get(s)!.size === 0);
    const deleteRun =
      archived &&
      (options.allowRunDeletion === true || tierRule?.archiveKeeps === 'summary') &&
      healthy &&
      nothingKept &&
      (snaps.length > 0 || run.summary !== undefined);
    if (latestOnly) latestOnlyRuns.add(run.runId);
    if (deleteRun) deletedRuns.add(run.runId);
    else {
      const latest = snaps.find((s) => s.latest);
      if (latest) add(latest, 'latest');
      let maxSeq: InventorySnapshot | undefined;
      for (const s of snaps)
        if (!maxSeq || s.sequence > maxSeq.sequence || (s.sequence === maxSeq.sequence && newer(s, maxSeq))) maxSeq = s;
      if (maxSeq && maxSeq !== latest) add(maxSeq, 'newest');
      spread();
    }

    const compressAfter = durationMs(policy.compressAfter);
    for (const s of snaps) {
      const r = reasons.get(s)!;
      let action: RetentionAction;
      if (r.size > 0) {
        action =
          inv.profile.compressHistory && !latestOnly && now - s.createdAtMs >= compressAfter && s.files.some((f) => !f.compressed)
            ? 'compress'
            : 'keep';
      } else action = archived ? 'summarize' : 'delete';
      out.set(`${run.runId}\u0000${s.id}`, { action, reasons: r });
    }
  }
  return { snapshots: out, deletedRuns, latestOnlyRuns };
}
