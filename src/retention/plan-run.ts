import type { InventoryRun, InventorySnapshot, UnreadableFile } from './inventory.js';
import {
  A_COMPRESS,
  A_DELETE,
  A_KEEP,
  A_SUMMARIZE,
  B_BATCH,
  B_LATEST,
  B_NEWEST,
  B_NO_RULES,
  B_PRESERVED,
  B_PRESERVED_UNREADABLE,
  B_TIER_FINAL,
  B_TIER_RECENT,
  plainFile,
  RULE_SHIFT,
} from './plan-codes.js';
import type { PlanContext } from './plan-context.js';
import { emitRunOperations, type OpTotals, type RunDecision } from './plan-operations.js';
import type { PlannedRun, RunTier } from './plan.js';
import type { ResolvedRule } from './policy.js';

/** The plan-wide arrays and sums each run is planned into. */
export interface PlanState {
  /** One mask of reason bits per snapshot, for the whole plan (0: nothing keeps it). */
  readonly masks: Int32Array;
  /** One action code per snapshot (`A_KEEP` …). */
  readonly actions: Uint8Array;
  readonly decisions: RunDecision[];
  readonly plannedRuns: PlannedRun[];
  readonly unreadable: { runId: string; file: UnreadableFile; action: 'keep' | 'delete' }[];
  readonly counted: OpTotals;
  readonly totals: {
    keep: number;
    compress: number;
    summarize: number;
    delete: number;
    runsArchived: number;
    runsDeleted: number;
    filesDeleted: number;
    bytesFreed: number;
  };
}

/** What a run is before any rule looks at its snapshots. */
interface RunFacts {
  readonly runId: string;
  readonly rank: number | undefined;
  readonly tier: RunTier | undefined;
  readonly preserved: boolean;
  readonly summaryKey: string | undefined;
  readonly archived: boolean;
  /** The snapshot latest.json holds, and the newest by sequence (history may be ahead of latest.json after a crash); -1 for none. */
  readonly latestIdx: number;
  readonly newestIdx: number;
  readonly maxSequence: number;
}

function runFacts(ctx: PlanContext, run: InventoryRun, snaps: readonly InventorySnapshot[], rank: number | undefined): RunFacts {
  const { tiers } = ctx;
  const runId = run.runId;
  let preservedByRule = false;
  for (const rule of ctx.preserveRules) if (rule.runIds.has(runId)) preservedByRule = true;
  const preserved = ctx.preservedFile.has(runId) || preservedByRule || !ctx.inventory.preservedRunsReadable;
  const tier: RunTier | undefined =
    tiers && rank !== undefined
      ? rank < tiers.keepAll
        ? 'recent'
        : rank < tiers.keepAll + tiers.keepFinal
          ? 'final'
          : 'archive'
      : undefined;
  // Without a place for a summary (a layout with no summaryKey) an archived run is only thinned.
  const summaryKey = run.summary?.key ?? run.summaryKey;
  const archived = tier === 'archive' && !preserved && summaryKey !== undefined;
  let latestIdx = -1;
  let newestIdx = -1;
  for (let i = 0; i < snaps.length; i++) {
    const s = snaps[i]!;
    if (s.latest) latestIdx = i;
    if (newestIdx < 0 || s.sequence >= snaps[newestIdx]!.sequence) newestIdx = i;
  }
  const maxSequence = newestIdx >= 0 ? snaps[newestIdx]!.sequence : 0;
  return { runId, rank, tier, preserved, summaryKey, archived, latestIdx, newestIdx, maxSequence };
}

/** Marks the snapshots one `keep-calendar` rule keeps: the newest of each of the `count` newest buckets. */
function markCalendar(
  ctx: PlanContext,
  k: number,
  rule: Extract<ResolvedRule, { rule: 'keep-calendar' }>,
  masks: Int32Array,
  o: number,
  snaps: readonly InventorySnapshot[],
): void {
  if (rule.count === 0) return;
  const bit = 1 << (RULE_SHIFT + k);
  const bucket = ctx.bucketers[k]!;
  let seen: Set<number> | undefined;
  let kept = 0;
  let last = NaN;
  for (let i = snaps.length - 1; i >= 0; i--) {
    const ms = snaps[i]!.createdAtMs;
    const b = bucket(ms);
    // Buckets almost always arrive in order; the set catches the rare zone whose clock steps back over a boundary.
    if (b === last || seen?.has(b)) continue;
    (seen ??= new Set()).add(b);
    last = b;
    // As with keep-last, an old bucket keeps its place in the count but is not kept itself.
    if (ctx.now - ms < rule.maxAgeMs) masks[o + i]! |= bit;
    if (++kept >= rule.count) break;
  }
}

/** Sets the bits of the rules (and of the run-wide reasons) that keep each of the run's snapshots. */
function markRuleReasons(ctx: PlanContext, facts: RunFacts, masks: Int32Array, o: number, snaps: readonly InventorySnapshot[]): void {
  const { now, rules } = ctx;
  const n = snaps.length;
  let whole = 0;
  if (ctx.preservedFile.has(facts.runId)) whole |= B_PRESERVED;
  if (!ctx.inventory.preservedRunsReadable) whole |= B_PRESERVED_UNREADABLE;
  if (ctx.noRules) whole |= B_NO_RULES;
  if (facts.tier === 'recent') whole |= B_TIER_RECENT;

  for (let k = 0; k < rules.length; k++) {
    const rule = rules[k]!;
    const bit = 1 << (RULE_SHIFT + k);
    switch (rule.rule) {
      case 'keep-last': {
        // The `count` newest by sequence, each kept only while younger than maxAge. An old
        // snapshot (a clock that stepped back) still takes its place in the count, so an age
        // limit only ever removes: raising a count or a duration never deletes more.
        for (let i = n - 1, c = 0; i >= 0 && c < rule.count; i--, c++) {
          if (now - snaps[i]!.createdAtMs < rule.maxAgeMs) masks[o + i]! |= bit;
        }
        break;
      }
      case 'keep-within': {
        for (let i = n - 1; i >= 0; i--) if (now - snaps[i]!.createdAtMs < rule.durationMs) masks[o + i]! |= bit;
        break;
      }
      case 'keep-latest-status': {
        for (let i = n - 1; i >= 0; i--) {
          if (snaps[i]!.status === rule.status) {
            masks[o + i]! |= bit;
            break;
          }
        }
        break;
      }
      case 'keep-calendar':
        markCalendar(ctx, k, rule, masks, o, snaps);
        break;
      case 'preserve-runs':
        if (rule.runIds.has(facts.runId)) whole |= bit;
        break;
      case 'run-tiers':
        break;
    }
  }
  if (whole !== 0) for (let i = 0; i < n; i++) masks[o + i]! |= whole;
}

/** True when any of the run's snapshots has a reason to stay. */
function anyKept(masks: Int32Array, o: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (masks[o + i] !== 0) return true;
  return false;
}

/** Batch files: which snapshots each holds, and the ones pinned because a member cannot be read. */
interface Batches {
  readonly members: Map<string, number[]> | undefined;
  readonly pinned: Set<string> | undefined;
}

function batchesOf(ctx: PlanContext, run: InventoryRun, snaps: readonly InventorySnapshot[]): Batches {
  if (run.batches.length === 0) return { members: undefined, pinned: undefined };
  const members = new Map<string, number[]>();
  for (let i = 0; i < snaps.length; i++) {
    for (const key of snaps[i]!.batches) {
      let list = members.get(key);
      if (!list) members.set(key, (list = []));
      list.push(i);
    }
  }
  return { members, pinned: new Set(run.batches.filter((b) => b.unreadableMembers > 0 && !ctx.opts.deleteUnreadable).map((b) => b.key)) };
}

/** A kept member keeps its whole batch file, so its batchmates stay too (reason `batch-member-kept`). */
function spreadBatches(batches: Batches, masks: Int32Array, o: number): void {
  if (!batches.members) return;
  for (let changed = true; changed;) {
    changed = false;
    for (const [key, members] of batches.members) {
      if (!batches.pinned!.has(key) && !members.some((i) => masks[o + i] !== 0)) continue;
      for (const i of members) {
        if (masks[o + i] === 0) {
          masks[o + i] = B_BATCH;
          changed = true;
        }
      }
    }
  }
}

/** How a run ends up: thinned to latest.json, deleted but for its summary, or neither. */
interface RunFate {
  readonly latestOnly: boolean;
  readonly deleteRun: boolean;
  readonly pinned: boolean;
}

/** Settles the run's fate and the safety reasons (its final snapshot, batchmates of kept snapshots). */
function settleRun(
  ctx: PlanContext,
  run: InventoryRun,
  facts: RunFacts,
  batches: Batches,
  masks: Int32Array,
  o: number,
  n: number,
): RunFate {
  const { tiers, opts } = ctx;
  const { tier, latestIdx, newestIdx } = facts;
  const keptByRules = anyKept(masks, o, n);
  if (tier === 'final' || (tier === 'archive' && !facts.archived)) {
    const finalIdx = latestIdx >= 0 ? latestIdx : newestIdx;
    if (finalIdx >= 0) masks[o + finalIdx]! |= B_TIER_FINAL;
  }
  const pinned = batches.pinned !== undefined && batches.pinned.size > 0;
  const healthy =
    (!run.latest || run.latest.readable) &&
    (!run.index || run.index.readable) &&
    (opts.deleteUnreadable || (run.unreadable.length === 0 && !pinned));
  // The spec's "runs 11–50: delete all except latest.json": only when latest.json is the
  // run's readable newest snapshot and no other rule keeps anything of the run (then the
  // run keeps its final checkpoint as with 'checkpoint', the conservative form).
  const latestOnly =
    tier === 'final' &&
    tiers!.finalKeeps === 'latest' &&
    !facts.preserved &&
    healthy &&
    !keptByRules &&
    latestIdx >= 0 &&
    latestIdx === newestIdx &&
    run.latest?.readable === true;
  // latest.json alone holds a latest-only run's final snapshot: its batch file is not kept for it.
  if (!latestOnly) spreadBatches(batches, masks, o);

  const nothingKept = !anyKept(masks, o, n);
  const deleteRun =
    facts.archived &&
    (opts.allowRunDeletion || tiers!.archiveKeeps === 'summary') &&
    healthy &&
    nothingKept &&
    (n > 0 || run.summary !== undefined);
  if (!deleteRun) {
    if (latestIdx >= 0) masks[o + latestIdx]! |= B_LATEST;
    if (newestIdx >= 0 && newestIdx !== latestIdx) masks[o + newestIdx]! |= B_NEWEST;
    if (!latestOnly) spreadBatches(batches, masks, o);
  }
  return { latestOnly, deleteRun, pinned };
}

/** Sets each snapshot's action from its reasons; returns the counts of each action. */
function decideActions(
  ctx: PlanContext,
  state: PlanState,
  snaps: readonly InventorySnapshot[],
  o: number,
  archived: boolean,
  latestOnly: boolean,
): PlannedRun['counts'] {
  const { masks, actions } = state;
  let keep = 0;
  let compress = 0;
  let summarize = 0;
  let del = 0;
  for (let i = 0; i < snaps.length; i++) {
    const s = snaps[i]!;
    let a: number;
    if (masks[o + i] !== 0) {
      a = ctx.compressOk && !latestOnly && s.createdAtMs <= ctx.compressBefore && plainFile(s) !== undefined ? A_COMPRESS : A_KEEP;
      if (a === A_KEEP) keep++;
      else compress++;
    } else if (archived) {
      a = A_SUMMARIZE;
      summarize++;
    } else {
      a = A_DELETE;
      del++;
    }
    actions[o + i] = a;
  }
  return { keep, compress, summarize, delete: del };
}

/**
 * Plans one run into `state`: its snapshots' reasons and actions at `o`…, its decision (for
 * the operations), its files counted, and its {@link PlannedRun}.
 */
export function planRun(
  ctx: PlanContext,
  state: PlanState,
  run: InventoryRun,
  snaps: readonly InventorySnapshot[],
  o: number,
  rank: number | undefined,
): void {
  const { opts } = ctx;
  const { masks, totals } = state;
  const n = snaps.length;
  const facts = runFacts(ctx, run, snaps, rank);
  const { runId, tier, preserved, archived, summaryKey } = facts;
  markRuleReasons(ctx, facts, masks, o, snaps);
  const batches = batchesOf(ctx, run, snaps);
  const { latestOnly, deleteRun, pinned } = settleRun(ctx, run, facts, batches, masks, o, n);
  const counts = decideActions(ctx, state, snaps, o, archived, latestOnly);
  totals.keep += counts.keep;
  totals.compress += counts.compress;
  totals.summarize += counts.summarize;
  totals.delete += counts.delete;
  const removed = counts.summarize + counts.delete;

  // A run loses snapshots to the tiers only after its summary is written, so the summary
  // still sees when the run started; an archived run always gets one.
  const thinned = (tier === 'final' || tier === 'archive') && !preserved && !latestOnly && summaryKey !== undefined;
  const needsSummary = thinned && n > 0 && (removed > 0 || (archived && run.summary === undefined));
  const partsSafe = opts.deleteUnreadable || (run.unreadable.length === 0 && !pinned);
  for (const file of run.unreadable)
    state.unreadable.push({ runId, file, action: opts.deleteUnreadable && !preserved ? 'delete' : 'keep' });

  const decision: RunDecision = {
    run,
    snaps,
    offset: o,
    archived,
    deleteRun,
    latestOnly,
    needsSummary,
    preserved,
    latestIdx: facts.latestIdx,
    newestIdx: facts.newestIdx,
    maxSequence: facts.maxSequence,
    summaryKey,
    partsSafe,
    batchMembers: batches.members,
    pinnedBatches: batches.pinned,
    removed,
    compressions: counts.compress,
  };
  state.decisions.push(decision);
  emitRunOperations(decision, masks, state.actions, opts, ctx.noRules, undefined, state.counted);
  if (archived) totals.runsArchived++;
  if (deleteRun) totals.runsDeleted++;
  state.plannedRuns.push({
    runId,
    ...(rank !== undefined ? { rank: rank + 1 } : {}),
    ...(tier !== undefined ? { tier } : {}),
    preserved,
    summary: needsSummary ? 'write' : run.summary ? 'exists' : 'none',
    deleteRun,
    ...(latestOnly ? { latestOnly } : {}),
    counts,
  });
}
