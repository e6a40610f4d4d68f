import { toRfc3339 } from '../model/clock.js';
import { CheckpointError } from '../model/errors.js';
import { GZIP_SUFFIX } from '../profiles/layout.js';
import { calendarBucketer } from './calendar.js';
import { compareInventorySnapshots, type InventoryProblem, type InventoryRun, type InventorySnapshot, type RetentionFile, type RetentionInventory, type UnreadableFile } from './inventory.js';
import { describeRetentionRule, resolveRetentionPolicy, type ResolvedRule, type RetentionPolicy } from './policy.js';
import type { RetentionSummarizer } from './summary.js';

/**
 * What happens to a snapshot:
 * - `keep`: left as it is;
 * - `compress`: kept, its history entry gzipped (`<entry>.gz`);
 * - `summarize`: removed after its run's summary is written (the run is archived);
 * - `delete`: removed.
 */
export type RetentionAction = 'keep' | 'compress' | 'summarize' | 'delete';

/** One snapshot's decision. `reasons` lists the rules that keep it (empty for `summarize` and `delete`). */
export interface PlannedSnapshot {
  readonly snapshot: InventorySnapshot;
  readonly action: RetentionAction;
  readonly reasons: readonly string[];
}

/** Where a run falls in the cross-run tiers of a `run-tiers` rule. */
export type RunTier = 'recent' | 'final' | 'archive';

/** One run's decision. */
export interface PlannedRun {
  readonly runId: string;
  /** 1-based recency rank (newest snapshot first), when the policy has `run-tiers`. */
  readonly rank?: number;
  readonly tier?: RunTier;
  /** Listed in `preserved_runs.json` or a `preserve-runs` rule (or that file is unreadable). */
  readonly preserved: boolean;
  /** `write`: the plan writes (or refreshes) the run's summary before removing anything. */
  readonly summary: 'write' | 'exists' | 'none';
  /** Everything of the run but its summary goes (archived run, `allowRunDeletion` or the tiers' `archiveKeeps: 'summary'`). */
  readonly deleteRun: boolean;
  /** Everything of the run but `latest.json` (and the parts it references) goes: the tiers' `finalKeeps: 'latest'`. */
  readonly latestOnly?: boolean;
  readonly counts: { readonly keep: number; readonly compress: number; readonly summarize: number; readonly delete: number };
}

/** Why a file is deleted. */
export type DeleteReason = 'snapshot' | 'summarized' | 'batch' | 'orphan-part' | 'unreadable' | 'run-archived' | 'latest-only';

/** One storage step of a plan, executed in order by {@link applyRetention}. */
export type RetentionOperation =
  | {
      readonly type: 'write-summary';
      readonly runId: string;
      readonly key: string;
      /** Creation time of the run's first snapshot still stored. */
      readonly startedAt: string;
      /** The run's newest sequence number. */
      readonly checkpointCount: number;
      /** The final snapshot; an existing summary made from it is left as it is. */
      readonly lastCheckpointId: string;
      /** Where to read the final snapshot from, best first (`latest.json`, then history or batch files, newest first). */
      readonly sources: readonly { readonly key: string; readonly id: string }[];
    }
  | {
      readonly type: 'compress';
      readonly runId: string;
      readonly snapshotId: string;
      /** The plain history entry; the compressed one is written to `key + '.gz'`. */
      readonly key: string;
      readonly version: string;
      readonly size: number;
    }
  | {
      readonly type: 'delete';
      readonly runId: string;
      readonly key: string;
      readonly kind: 'history' | 'batch' | 'part' | 'latest' | 'index';
      readonly reason: DeleteReason;
      /** The snapshot the file belongs to, for history and part files. */
      readonly snapshotId: string | undefined;
      /** Delete only if the file still has this version (for files that change: `latest.json`, the index). */
      readonly ifVersion: string | undefined;
      readonly size: number;
    }
  | {
      readonly type: 'update-index';
      readonly runId: string;
      readonly key: string;
      /**
       * `checkpoint_id`s of the entries to remove: removed snapshots (an entry goes only when
       * every file of its snapshot was deleted) and entries whose snapshot is already gone.
       */
      readonly remove: readonly string[];
      /**
       * `checkpoint_id`s of the entries whose `file_path` gains `.gz`: snapshots this plan
       * compresses (once the compression is done) or that are already compressed.
       */
      readonly rename: readonly string[];
    };

/** Options of {@link planRetention}: the explicit flags safety rules ask for. */
export interface PlanRetentionOptions {
  /**
   * Let an archived run (a `run-tiers` rule's third tier) lose everything but its summary,
   * `latest.json` and the index included — phased-workflow-github.md's "runs 51+: delete
   * all checkpoints, keep only summary". Without it an archived run keeps its final
   * snapshot beside the summary, because a run's latest snapshot is otherwise never deleted.
   * @default false
   */
  readonly allowRunDeletion?: boolean;
  /**
   * Delete history and batch files that cannot be read (and the parts they may own)
   * instead of keeping them. Never in a preserved run; never `latest.json` or the index.
   * @default false
   */
  readonly deleteUnreadable?: boolean;
}

/** The plan: one decision per snapshot, per run, and the storage steps that carry them out. */
export interface RetentionPlan {
  readonly profile: string;
  readonly policy: string;
  /** One line per rule, for dry runs. */
  readonly rules: readonly string[];
  /** Planning time (epoch ms) and its RFC 3339 form. */
  readonly now: number;
  readonly nowIso: string;
  readonly options: Required<PlanRetentionOptions>;
  /**
   * Every snapshot exactly once, by run id, then time, then id. Built on first access
   * from the planner's compact decisions (and cached), so a large plan costs memory for
   * it only when something reads it.
   */
  readonly snapshots: readonly PlannedSnapshot[];
  readonly runs: readonly PlannedRun[];
  /** The storage steps, in order. Built on first access (and cached), like `snapshots`. */
  readonly operations: readonly RetentionOperation[];
  readonly unreadable: readonly { readonly runId: string; readonly file: UnreadableFile; readonly action: 'keep' | 'delete' }[];
  readonly totals: {
    readonly keep: number;
    readonly compress: number;
    readonly summarize: number;
    readonly delete: number;
    readonly runsArchived: number;
    readonly runsDeleted: number;
    readonly filesDeleted: number;
    readonly bytesFreed: number;
  };
  /** What the inventory could not read. */
  readonly problems: readonly InventoryProblem[];
  /** The policy's summarizer, used by the applier unless it is given another. */
  readonly summarizer?: RetentionSummarizer;
}

// Reason bits. Safety and tier reasons first, then one bit per policy rule.
const B_LATEST = 1 << 0;
const B_NEWEST = 1 << 1;
const B_PRESERVED = 1 << 2;
const B_PRESERVED_UNREADABLE = 1 << 3;
const B_NO_RULES = 1 << 4;
const B_TIER_RECENT = 1 << 5;
const B_TIER_FINAL = 1 << 6;
const B_BATCH = 1 << 7;
const RULE_SHIFT = 8;

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

function sortedRuns(runs: readonly InventoryRun[]): InventoryRun[] {
  let sorted = true;
  for (let i = 1; i < runs.length; i++) {
    const c = compareStrings(runs[i - 1]!.runId, runs[i]!.runId);
    if (c === 0) throw new CheckpointError('checkpoint_config_invalid', 'retention inventory lists a run twice', { details: { runId: runs[i]!.runId } });
    if (c > 0) sorted = false;
  }
  if (sorted) return runs as InventoryRun[];
  const copy = [...runs].sort((a, b) => compareStrings(a.runId, b.runId));
  for (let i = 1; i < copy.length; i++) {
    if (copy[i - 1]!.runId === copy[i]!.runId) throw new CheckpointError('checkpoint_config_invalid', 'retention inventory lists a run twice', { details: { runId: copy[i]!.runId } });
  }
  return copy;
}

/** A run's final snapshot, in any order: the one latest.json holds, else the highest sequence (ties: the newest). */
function finalSnapshot(snaps: readonly InventorySnapshot[]): InventorySnapshot | undefined {
  let latest: InventorySnapshot | undefined;
  let newest: InventorySnapshot | undefined;
  for (const s of snaps) {
    if (s.latest && (!latest || compareInventorySnapshots(s, latest) > 0)) latest = s;
    if (!newest || s.sequence > newest.sequence || (s.sequence === newest.sequence && compareInventorySnapshots(s, newest) > 0)) newest = s;
  }
  return latest ?? newest;
}

function sortedSnapshots(snaps: readonly InventorySnapshot[]): readonly InventorySnapshot[] {
  for (let i = 1; i < snaps.length; i++) {
    if (compareInventorySnapshots(snaps[i - 1]!, snaps[i]!) > 0) return [...snaps].sort(compareInventorySnapshots);
  }
  return snaps;
}

/** The plain (not yet compressed) history file of a snapshot, if any. */
function plainFile(s: InventorySnapshot): InventorySnapshot['files'][number] | undefined {
  for (const f of s.files) if (!f.compressed) return f;
  return undefined;
}

const ACTIONS: readonly RetentionAction[] = ['keep', 'compress', 'summarize', 'delete'];
const A_KEEP = 0;
const A_COMPRESS = 1;
const A_SUMMARIZE = 2;
const A_DELETE = 3;

/**
 * Plans retention: a pure function of the inventory, the policy and `now` (epoch ms) —
 * no I/O, no clock. Every snapshot gets exactly one action; every kept one carries the
 * names of the rules that keep it. The plan does not depend on the order of the
 * inventory's runs or snapshots (ties are broken by time, then id).
 *
 * Safety rules that no policy changes:
 * - a run's latest snapshot (the one `latest.json` holds, and the one with the highest
 *   sequence) is kept — unless its run is archived with `allowRunDeletion` and nothing
 *   else of it is kept;
 * - every snapshot of a run in `preserved_runs.json` is kept, and everything is kept
 *   while that file cannot be read;
 * - a policy without rules keeps everything (and deletes nothing);
 * - unreadable files are kept unless `deleteUnreadable`;
 * - a batch file is deleted only when none of its members is kept (so a kept member keeps
 *   its batchmates, reason `batch-member-kept`); part files go with their snapshot;
 * - only keys the inventory found under the profile's layout appear in the operations.
 *
 * Decisions are computed eagerly into typed arrays; `plan.snapshots` and
 * `plan.operations` are materialized from them on first access.
 *
 * Throws `checkpoint_config_invalid` for an invalid policy or `now`.
 */
export function planRetention(inventory: RetentionInventory, policy: RetentionPolicy, now: number, options: PlanRetentionOptions = {}): RetentionPlan {
  if (!Number.isFinite(now)) throw new CheckpointError('checkpoint_config_invalid', 'planRetention: now must be epoch milliseconds', { details: { field: 'now' } });
  const resolved = resolveRetentionPolicy(policy);
  const opts: Required<PlanRetentionOptions> = { allowRunDeletion: options.allowRunDeletion ?? false, deleteUnreadable: options.deleteUnreadable ?? false };
  const rules = resolved.rules;
  const tiers = rules.find((r): r is Extract<ResolvedRule, { rule: 'run-tiers' }> => r.rule === 'run-tiers');
  const tierName = tiers?.name ?? 'run-tier';
  const bitNames = ['latest', 'newest', 'preserved-run', 'preserved-runs-unreadable', 'no-rules', `${tierName}-recent`, `${tierName}-final`, 'batch-member-kept'];
  rules.forEach((r) => bitNames.push(r.name));
  const reasonCache = new Map<number, readonly string[]>();
  const reasonsOf = (mask: number): readonly string[] => {
    let out = reasonCache.get(mask);
    if (!out) {
      const names: string[] = [];
      for (let b = 0; b < bitNames.length; b++) if (mask & (1 << b)) names.push(bitNames[b]!);
      out = Object.freeze([...new Set(names)]);
      reasonCache.set(mask, out);
    }
    return out;
  };
  const bucketers = rules.map((r) => (r.rule === 'keep-calendar' ? calendarBucketer(r.unit, r.timeZone) : undefined));
  const compressOk = inventory.profile.compressHistory && Number.isFinite(resolved.compressAfterMs);
  const compressBefore = now - resolved.compressAfterMs; // compress when createdAtMs <= compressBefore
  const preservedFile = new Set(inventory.preservedRuns);
  const preserveRules = rules.filter((r): r is Extract<ResolvedRule, { rule: 'preserve-runs' }> => r.rule === 'preserve-runs');
  const noRules = rules.length === 0;

  const runs = sortedRuns(inventory.runs);
  // Each run's snapshots are sorted (when they are not already) just before the run is
  // planned, while they are in the CPU cache; the ranking below needs no order.
  const runSnaps: (readonly InventorySnapshot[])[] = new Array<readonly InventorySnapshot[]>(runs.length);

  // Cross-run tiers: rank runs by the time of their final snapshot (the one latest.json
  // holds, else the highest sequence) — it is never removed while the run has anything,
  // and an archived run's summary records it as last_checkpoint_at, so ranks are stable.
  const rankOf = new Map<string, number>();
  if (tiers) {
    const timed = runs.map((r) => {
      let t = -Infinity;
      const final = finalSnapshot(r.snapshots);
      if (final) t = final.createdAtMs;
      else if (r.summary?.lastCheckpointAtMs !== undefined && Number.isFinite(r.summary.lastCheckpointAtMs)) t = r.summary.lastCheckpointAtMs;
      return { runId: r.runId, t };
    });
    timed.sort((a, b) => (b.t === a.t ? compareStrings(a.runId, b.runId) : b.t > a.t ? 1 : -1));
    timed.forEach((r, i) => rankOf.set(r.runId, i));
  }

  let total = 0;
  for (const r of runs) total += r.snapshots.length;
  // One mask of reason bits and one action per snapshot, for the whole plan: the planner
  // allocates no object per snapshot; plan.snapshots and plan.operations are built from these.
  const masks = new Int32Array(total);
  const actions = new Uint8Array(total);
  const decisions: RunDecision[] = [];
  const plannedRuns: PlannedRun[] = [];
  const unreadableOut: { runId: string; file: UnreadableFile; action: 'keep' | 'delete' }[] = [];
  const counted: OpTotals = { filesDeleted: 0, bytesFreed: 0 };
  const totals = { keep: 0, compress: 0, summarize: 0, delete: 0, runsArchived: 0, runsDeleted: 0, filesDeleted: 0, bytesFreed: 0 };

  let offset = 0;
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r]!;
    const snaps = (runSnaps[r] = sortedSnapshots(run.snapshots));
    const n = snaps.length;
    const o = offset;
    offset += n;
    const runId = run.runId;

    let preservedByRule = false;
    for (const rule of preserveRules) if (rule.runIds.has(runId)) preservedByRule = true;
    const preserved = preservedFile.has(runId) || preservedByRule || !inventory.preservedRunsReadable;
    const rank = rankOf.get(runId);
    const tier: RunTier | undefined = tiers && rank !== undefined ? (rank < tiers.keepAll ? 'recent' : rank < tiers.keepAll + tiers.keepFinal ? 'final' : 'archive') : undefined;
    // Without a place for a summary (a layout with no summaryKey) an archived run is only thinned.
    const summaryKey = run.summary?.key ?? run.summaryKey;
    const archived = tier === 'archive' && !preserved && summaryKey !== undefined;

    // The snapshot latest.json holds, and the newest by sequence (history may be ahead of latest.json after a crash).
    let latestIdx = -1;
    let newestIdx = -1;
    for (let i = 0; i < n; i++) {
      const s = snaps[i]!;
      if (s.latest) latestIdx = i;
      if (newestIdx < 0 || s.sequence >= snaps[newestIdx]!.sequence) newestIdx = i;
    }
    const maxSequence = newestIdx >= 0 ? snaps[newestIdx]!.sequence : 0;

    let whole = 0;
    if (preservedFile.has(runId)) whole |= B_PRESERVED;
    if (!inventory.preservedRunsReadable) whole |= B_PRESERVED_UNREADABLE;
    if (noRules) whole |= B_NO_RULES;
    if (tier === 'recent') whole |= B_TIER_RECENT;

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
        case 'keep-calendar': {
          if (rule.count === 0) break;
          const bucket = bucketers[k]!;
          let seen: Set<number> | undefined;
          let kept = 0;
          let last = NaN;
          for (let i = n - 1; i >= 0; i--) {
            const ms = snaps[i]!.createdAtMs;
            const b = bucket(ms);
            // Buckets almost always arrive in order; the set catches the rare zone whose clock steps back over a boundary.
            if (b === last || seen?.has(b)) continue;
            (seen ??= new Set()).add(b);
            last = b;
            // As with keep-last, an old bucket keeps its place in the count but is not kept itself.
            if (now - ms < rule.maxAgeMs) masks[o + i]! |= bit;
            if (++kept >= rule.count) break;
          }
          break;
        }
        case 'preserve-runs':
          if (rule.runIds.has(runId)) whole |= bit;
          break;
        case 'run-tiers':
          break;
      }
    }
    if (whole !== 0) for (let i = 0; i < n; i++) masks[o + i]! |= whole;
    let keptByRules = false;
    for (let i = 0; i < n && !keptByRules; i++) if (masks[o + i] !== 0) keptByRules = true;
    if (tier === 'final' || (tier === 'archive' && !archived)) {
      const finalIdx = latestIdx >= 0 ? latestIdx : newestIdx;
      if (finalIdx >= 0) masks[o + finalIdx]! |= B_TIER_FINAL;
    }

    // Batch files: a kept member keeps the whole file, so its batchmates stay too.
    let batchMembers: Map<string, number[]> | undefined;
    let pinnedBatches: Set<string> | undefined;
    if (run.batches.length > 0) {
      batchMembers = new Map();
      for (let i = 0; i < n; i++) {
        for (const key of snaps[i]!.batches) {
          let list = batchMembers.get(key);
          if (!list) batchMembers.set(key, (list = []));
          list.push(i);
        }
      }
      pinnedBatches = new Set(run.batches.filter((b) => b.unreadableMembers > 0 && !opts.deleteUnreadable).map((b) => b.key));
    }
    const pinned = pinnedBatches !== undefined && pinnedBatches.size > 0;
    const healthy = (!run.latest || run.latest.readable) && (!run.index || run.index.readable) && (opts.deleteUnreadable || (run.unreadable.length === 0 && !pinned));
    // The spec's "runs 11–50: delete all except latest.json": only when latest.json is the
    // run's readable newest snapshot and no other rule keeps anything of the run (then the
    // run keeps its final checkpoint as with 'checkpoint', the conservative form).
    const latestOnly =
      tier === 'final' && tiers!.finalKeeps === 'latest' && !preserved && healthy && !keptByRules && latestIdx >= 0 && latestIdx === newestIdx && run.latest?.readable === true;
    const spreadBatches = (): void => {
      // latest.json alone holds a latest-only run's final snapshot: its batch file is not kept for it.
      if (!batchMembers || latestOnly) return;
      for (let changed = true; changed; ) {
        changed = false;
        for (const [key, members] of batchMembers) {
          if (!pinnedBatches!.has(key) && !members.some((i) => masks[o + i] !== 0)) continue;
          for (const i of members) {
            if (masks[o + i] === 0) {
              masks[o + i] = B_BATCH;
              changed = true;
            }
          }
        }
      }
    };
    spreadBatches();

    let nothingKept = true;
    for (let i = 0; i < n && nothingKept; i++) if (masks[o + i] !== 0) nothingKept = false;
    const deleteRun = archived && (opts.allowRunDeletion || tiers!.archiveKeeps === 'summary') && healthy && nothingKept && (n > 0 || run.summary !== undefined);
    if (!deleteRun) {
      if (latestIdx >= 0) masks[o + latestIdx]! |= B_LATEST;
      if (newestIdx >= 0 && newestIdx !== latestIdx) masks[o + newestIdx]! |= B_NEWEST;
      spreadBatches();
    }

    // Actions.
    let cKeep = 0;
    let cCompress = 0;
    let cSummarize = 0;
    let cDelete = 0;
    for (let i = 0; i < n; i++) {
      const s = snaps[i]!;
      let a: number;
      if (masks[o + i] !== 0) {
        a = compressOk && !latestOnly && s.createdAtMs <= compressBefore && plainFile(s) !== undefined ? A_COMPRESS : A_KEEP;
        if (a === A_KEEP) cKeep++;
        else cCompress++;
      } else if (archived) {
        a = A_SUMMARIZE;
        cSummarize++;
      } else {
        a = A_DELETE;
        cDelete++;
      }
      actions[o + i] = a;
    }
    totals.keep += cKeep;
    totals.compress += cCompress;
    totals.summarize += cSummarize;
    totals.delete += cDelete;
    const removed = cSummarize + cDelete;

    // A run loses snapshots to the tiers only after its summary is written, so the summary
    // still sees when the run started; an archived run always gets one.
    const thinned = (tier === 'final' || tier === 'archive') && !preserved && !latestOnly && summaryKey !== undefined;
    const needsSummary = thinned && n > 0 && (removed > 0 || (archived && run.summary === undefined));
    const partsSafe = opts.deleteUnreadable || (run.unreadable.length === 0 && !pinned);
    for (const file of run.unreadable) unreadableOut.push({ runId, file, action: opts.deleteUnreadable && !preserved ? 'delete' : 'keep' });

    const decision: RunDecision = {
      run,
      snaps,
      offset: o,
      archived,
      deleteRun,
      latestOnly,
      needsSummary,
      preserved,
      latestIdx,
      newestIdx,
      maxSequence,
      summaryKey,
      partsSafe,
      batchMembers,
      pinnedBatches,
      removed,
      compressions: cCompress,
    };
    decisions.push(decision);
    emitRunOperations(decision, masks, actions, opts, noRules, undefined, counted);
    if (archived) totals.runsArchived++;
    if (deleteRun) totals.runsDeleted++;
    plannedRuns.push({
      runId,
      ...(rank !== undefined ? { rank: rank + 1 } : {}),
      ...(tier !== undefined ? { tier } : {}),
      preserved,
      summary: needsSummary ? 'write' : run.summary ? 'exists' : 'none',
      deleteRun,
      ...(latestOnly ? { latestOnly } : {}),
      counts: { keep: cKeep, compress: cCompress, summarize: cSummarize, delete: cDelete },
    });
  }
  totals.filesDeleted = counted.filesDeleted;
  totals.bytesFreed = counted.bytesFreed;

  let snapshotsCache: PlannedSnapshot[] | undefined;
  let operationsCache: RetentionOperation[] | undefined;
  const plan: Omit<RetentionPlan, 'snapshots' | 'operations'> = {
    profile: inventory.profile.name,
    policy: resolved.name,
    rules: policy.rules.map(describeRetentionRule),
    now,
    nowIso: toRfc3339(now),
    options: opts,
    runs: plannedRuns,
    unreadable: unreadableOut,
    totals,
    problems: inventory.problems,
    ...(resolved.summarizer ? { summarizer: resolved.summarizer } : {}),
  };
  Object.defineProperty(plan, 'snapshots', {
    enumerable: true,
    get(): readonly PlannedSnapshot[] {
      if (!snapshotsCache) {
        const out = new Array<PlannedSnapshot>(total);
        let at = 0;
        for (const snaps of runSnaps) {
          for (const s of snaps) {
            const mask = masks[at]!;
            out[at] = { snapshot: s, action: ACTIONS[actions[at]!]!, reasons: mask === 0 ? EMPTY : reasonsOf(mask) };
            at++;
          }
        }
        snapshotsCache = out;
      }
      return snapshotsCache;
    },
  });
  Object.defineProperty(plan, 'operations', {
    enumerable: true,
    get(): readonly RetentionOperation[] {
      if (!operationsCache) {
        const out: RetentionOperation[] = [];
        const ignored: OpTotals = { filesDeleted: 0, bytesFreed: 0 };
        for (const d of decisions) emitRunOperations(d, masks, actions, opts, noRules, out, ignored);
        operationsCache = out;
      }
      return operationsCache;
    },
  });
  return plan as RetentionPlan;
}

/** What the planner remembers about a run to emit its operations later. */
interface RunDecision {
  readonly run: InventoryRun;
  readonly snaps: readonly InventorySnapshot[];
  /** Position of the run's first snapshot in the plan-wide mask and action arrays. */
  readonly offset: number;
  readonly archived: boolean;
  readonly deleteRun: boolean;
  readonly latestOnly: boolean;
  readonly needsSummary: boolean;
  readonly preserved: boolean;
  readonly latestIdx: number;
  readonly newestIdx: number;
  readonly maxSequence: number;
  readonly summaryKey: string | undefined;
  readonly partsSafe: boolean;
  readonly batchMembers: Map<string, number[]> | undefined;
  readonly pinnedBatches: Set<string> | undefined;
  readonly removed: number;
  readonly compressions: number;
}

interface OpTotals {
  filesDeleted: number;
  bytesFreed: number;
}

/**
 * Emits a run's operations into `out` (or, with `out` undefined, only counts the files
 * they delete), in an order that leaves a consistent store at every step, so a crash at
 * any point needs no repair and the next apply finishes the work: summary, compressions,
 * then the index (entries of the snapshots about to go are removed before their files,
 * so the index never names a deleted file), then history entries and their parts,
 * batches, unreadable files and orphaned parts — or, for a deleted run, the index, its
 * files, then latest.json, every part last.
 */
function emitRunOperations(
  d: RunDecision,
  masks: Int32Array,
  actions: Uint8Array,
  opts: Required<PlanRetentionOptions>,
  noRules: boolean,
  out: RetentionOperation[] | undefined,
  count: OpTotals,
): void {
  const { run, snaps, offset: o, deleteRun, archived } = d;
  const n = snaps.length;
  const runId = run.runId;
  // File deletions are collected and emitted after the index update (see above).
  const deletes: RetentionOperation[] | undefined = out ? [] : undefined;
  const del = (key: string, kind: 'history' | 'batch' | 'part' | 'latest' | 'index', reason: DeleteReason, size: number, snapshotId?: string, ifVersion?: string): void => {
    deletes?.push({ type: 'delete', runId, key, kind, reason, snapshotId, ifVersion, size });
    count.filesDeleted++;
    count.bytesFreed += size;
  };

  if (d.needsSummary && out) {
    const finalIdx = d.latestIdx >= 0 ? d.latestIdx : d.newestIdx;
    const sources: { key: string; id: string }[] = [];
    if (run.latest?.readable && run.latest.snapshotId !== undefined) sources.push({ key: run.latest.key, id: run.latest.snapshotId });
    const bySequence = [...snaps].sort((a, b) => b.sequence - a.sequence || compareInventorySnapshots(b, a));
    for (const s of bySequence) {
      for (const f of s.files) sources.push({ key: f.key, id: s.id });
      for (const b of s.batches) sources.push({ key: b, id: s.id });
    }
    out.push({ type: 'write-summary', runId, key: d.summaryKey!, startedAt: snaps[0]!.createdAt, checkpointCount: d.maxSequence, lastCheckpointId: snaps[finalIdx]!.id, sources });
  }

  if (d.compressions > 0 && out) {
    for (let i = 0; i < n; i++) {
      if (actions[o + i] !== A_COMPRESS) continue;
      const s = snaps[i]!;
      const plain = plainFile(s)!;
      out.push({ type: 'compress', runId, snapshotId: s.id, key: plain.key, version: plain.version, size: plain.size });
    }
  }
  let deferredParts: RetentionFile[] | undefined;
  if (d.removed > 0) {
    const reason: DeleteReason = deleteRun ? 'run-archived' : archived ? 'summarized' : 'snapshot';
    for (let i = 0; i < n; i++) {
      if (actions[o + i]! < A_SUMMARIZE) continue;
      const s = snaps[i]!;
      for (const f of s.files) del(f.key, 'history', reason, f.size, s.id);
      for (const p of s.parts) {
        if (deleteRun) (deferredParts ??= []).push(p);
        else del(p.key, 'part', 'snapshot', p.size, s.id);
      }
    }
  }
  if (d.latestOnly) {
    // The final snapshot stays in latest.json (with its parts); its own history files go.
    const final = snaps[d.latestIdx]!;
    for (const f of final.files) del(f.key, 'history', 'latest-only', f.size, final.id);
  }
  for (const batch of run.batches) {
    const members = d.batchMembers?.get(batch.key) ?? [];
    if (!d.latestOnly && (d.pinnedBatches?.has(batch.key) || members.some((i) => masks[o + i] !== 0))) continue;
    del(batch.key, 'batch', deleteRun ? 'run-archived' : d.latestOnly ? 'latest-only' : 'batch', batch.size);
  }
  if (opts.deleteUnreadable && !d.preserved) for (const file of run.unreadable) del(file.key, file.kind, 'unreadable', file.size);
  for (const p of run.orphanParts) {
    if (deleteRun) (deferredParts ??= []).push(p);
    else if (d.partsSafe && !d.preserved && !noRules && p.sequence < d.maxSequence) del(p.key, 'part', 'orphan-part', p.size);
  }

  if (deleteRun) {
    // The index goes first (it would name the files about to go); latest.json last of the
    // documents, so a run that still has history can always be resumed from it.
    const files = deletes?.splice(0);
    if (run.index) del(run.index.key, 'index', 'run-archived', run.index.size, undefined, run.index.version);
    if (files) deletes!.push(...files);
    if (run.latest) del(run.latest.key, 'latest', 'run-archived', run.latest.size, undefined, run.latest.version);
    for (const p of deferredParts ?? []) del(p.key, 'part', 'run-archived', p.size);
    if (out) out.push(...deletes!);
    return;
  }
  if (d.latestOnly) {
    // The index goes first: it would name the files about to go (conditional on its version,
    // so a writer that resumed the run meanwhile keeps it and the plan stops there).
    const files = deletes?.splice(0);
    if (run.index) del(run.index.key, 'index', 'latest-only', run.index.size, undefined, run.index.version);
    if (out) out.push(...deletes!, ...files!);
    return;
  }
  const indexOp = out ? indexUpdate(d, actions) : undefined;
  if (indexOp) out!.push(indexOp);
  if (out) out.push(...deletes!);
}

/** The update of a run's index that goes with its plan, if any: entries removed (their snapshots go) or renamed to `.gz`. */
function indexUpdate(d: RunDecision, actions: Uint8Array): RetentionOperation | undefined {
  const { run, snaps, offset: o } = d;
  const n = snaps.length;
  const runId = run.runId;
  if (!run.index?.readable || run.index.entries.length === 0) return undefined;
  const entries = run.index.entries;
  let byId: Map<string, number> | undefined;
  const indexOf = (id: string, hint: number): number | undefined => {
    // Index entries usually line up with the sorted snapshots; fall back to a map when they do not.
    if (snaps[hint]?.id === id) return hint;
    if (!byId) {
      byId = new Map();
      for (let i = 0; i < n; i++) byId.set(snaps[i]!.id, i);
    }
    return byId.get(id);
  };
  let remove: string[] | undefined;
  let rename: string[] | undefined;
  for (let k = 0; k < entries.length; k++) {
    const e = entries[k]!;
    const i = indexOf(e.checkpoint_id, k);
    if (i === undefined) {
      // An entry whose snapshot is gone (deleted by hand, or by an apply of an older version that updated the index last).
      // Entries newer than anything listed may belong to a writer racing this plan: left alone.
      if (d.partsSafe && e.sequence <= d.maxSequence) (remove ??= []).push(e.checkpoint_id);
      continue;
    }
    const a = actions[o + i]!;
    const s = snaps[i]!;
    if (a >= A_SUMMARIZE) (remove ??= []).push(e.checkpoint_id);
    else if (s.files.length > 0 && !e.file_path.endsWith(GZIP_SUFFIX) && (a === A_COMPRESS || plainFile(s) === undefined)) (rename ??= []).push(e.checkpoint_id);
  }
  return remove || rename ? { type: 'update-index', runId, key: run.index.key, remove: remove ?? [], rename: rename ?? [] } : undefined;
}

const EMPTY: readonly string[] = Object.freeze([]);
