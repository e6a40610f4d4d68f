import { toRfc3339 } from '../contract/clock.js';
import type { InventoryProblem, InventorySnapshot, RetentionInventory, UnreadableFile } from './inventory.js';
import { ACTIONS } from './plan-codes.js';
import { planContext, reasonNamer, type PlanContext } from './plan-context.js';
import { emitRunOperations, type OpTotals } from './plan-operations.js';
import { rankRuns, sortedRuns, sortedSnapshots } from './plan-order.js';
import { planRun, type PlanState } from './plan-run.js';
import { describeRetentionRule } from './policy.js';
import { type RetentionPolicy } from '../contract/retention-policy.js';
import type { RetentionSummarizer } from '../contract/retention-policy.js';

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
export function planRetention(
  inventory: RetentionInventory,
  policy: RetentionPolicy,
  now: number,
  options: PlanRetentionOptions = {},
): RetentionPlan {
  const ctx = planContext(inventory, policy, now, options);
  const runs = sortedRuns(inventory.runs);
  const rankOf = rankRuns(runs, ctx.tiers);
  let total = 0;
  for (const r of runs) total += r.snapshots.length;
  // One mask of reason bits and one action per snapshot, for the whole plan: the planner
  // allocates no object per snapshot; plan.snapshots and plan.operations are built from these.
  const state: PlanState = {
    masks: new Int32Array(total),
    actions: new Uint8Array(total),
    decisions: [],
    plannedRuns: [],
    unreadable: [],
    counted: { filesDeleted: 0, bytesFreed: 0 },
    totals: { keep: 0, compress: 0, summarize: 0, delete: 0, runsArchived: 0, runsDeleted: 0, filesDeleted: 0, bytesFreed: 0 },
  };
  // Each run's snapshots are sorted (when they are not already) just before the run is
  // planned, while they are in the CPU cache; the ranking needs no order.
  const runSnaps: (readonly InventorySnapshot[])[] = new Array<readonly InventorySnapshot[]>(runs.length);
  let offset = 0;
  for (let r = 0; r < runs.length; r++) {
    const run = runs[r]!;
    const snaps = (runSnaps[r] = sortedSnapshots(run.snapshots));
    planRun(ctx, state, run, snaps, offset, rankOf.get(run.runId));
    offset += snaps.length;
  }
  state.totals.filesDeleted = state.counted.filesDeleted;
  state.totals.bytesFreed = state.counted.bytesFreed;

  const plan: Omit<RetentionPlan, 'snapshots' | 'operations'> = {
    profile: inventory.profile.name,
    policy: ctx.resolved.name,
    rules: policy.rules.map(describeRetentionRule),
    now,
    nowIso: toRfc3339(now),
    options: ctx.opts,
    runs: state.plannedRuns,
    unreadable: state.unreadable,
    totals: state.totals,
    problems: inventory.problems,
    ...(ctx.resolved.summarizer ? { summarizer: ctx.resolved.summarizer } : {}),
  };
  return withLazyLists(plan, ctx, state, runSnaps, total);
}

/** `plan` with `snapshots` and `operations` built from the planner's compact decisions on first access, then cached. */
function withLazyLists(
  plan: Omit<RetentionPlan, 'snapshots' | 'operations'>,
  ctx: PlanContext,
  state: PlanState,
  runSnaps: readonly (readonly InventorySnapshot[])[],
  total: number,
): RetentionPlan {
  const { masks, actions } = state;
  const reasonsOf = reasonNamer(ctx.bitNames);
  let snapshotsCache: PlannedSnapshot[] | undefined;
  let operationsCache: RetentionOperation[] | undefined;
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
        for (const d of state.decisions) emitRunOperations(d, masks, actions, ctx.opts, ctx.noRules, out, ignored);
        operationsCache = out;
      }
      return operationsCache;
    },
  });
  return plan as RetentionPlan;
}

const EMPTY: readonly string[] = Object.freeze([]);
