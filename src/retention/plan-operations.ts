import { GZIP_SUFFIX } from '../contract/layout.js';
import { compareInventorySnapshots, type InventoryRun, type InventorySnapshot, type RetentionFile } from './inventory.js';
import { A_COMPRESS, A_SUMMARIZE, plainFile } from './plan-codes.js';
import type { DeleteReason, PlanRetentionOptions, RetentionOperation } from './plan.js';

/** What the planner remembers about a run to emit its operations later. */
export interface RunDecision {
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

/** What a plan's deletions add up to. */
export interface OpTotals {
  filesDeleted: number;
  bytesFreed: number;
}

/** Collects one run's file deletions (or, without a list, only counts them). */
interface DeleteSink {
  readonly runId: string;
  /** `undefined` when only counting. */
  readonly deletes: RetentionOperation[] | undefined;
  readonly count: OpTotals;
}

function del(
  sink: DeleteSink,
  key: string,
  kind: 'history' | 'batch' | 'part' | 'latest' | 'index',
  reason: DeleteReason,
  size: number,
  snapshotId?: string,
  ifVersion?: string,
): void {
  sink.deletes?.push({ type: 'delete', runId: sink.runId, key, kind, reason, snapshotId, ifVersion, size });
  sink.count.filesDeleted++;
  sink.count.bytesFreed += size;
}

/** The `write-summary` step of a run that needs its summary written. */
function summaryOperation(d: RunDecision): RetentionOperation {
  const { run, snaps } = d;
  const finalIdx = d.latestIdx >= 0 ? d.latestIdx : d.newestIdx;
  const sources: { key: string; id: string }[] = [];
  if (run.latest?.readable && run.latest.snapshotId !== undefined) sources.push({ key: run.latest.key, id: run.latest.snapshotId });
  const bySequence = [...snaps].sort((a, b) => b.sequence - a.sequence || compareInventorySnapshots(b, a));
  for (const s of bySequence) {
    for (const f of s.files) sources.push({ key: f.key, id: s.id });
    for (const b of s.batches) sources.push({ key: b, id: s.id });
  }
  return {
    type: 'write-summary',
    runId: run.runId,
    key: d.summaryKey!,
    startedAt: snaps[0]!.createdAt,
    checkpointCount: d.maxSequence,
    lastCheckpointId: snaps[finalIdx]!.id,
    sources,
  };
}

function compressOperations(d: RunDecision, actions: Uint8Array, out: RetentionOperation[]): void {
  const { snaps, offset: o } = d;
  for (let i = 0; i < snaps.length; i++) {
    if (actions[o + i] !== A_COMPRESS) continue;
    const s = snaps[i]!;
    const plain = plainFile(s)!;
    out.push({ type: 'compress', runId: d.run.runId, snapshotId: s.id, key: plain.key, version: plain.version, size: plain.size });
  }
}

/**
 * The run's file deletions, in order: history entries and their parts, batches, unreadable
 * files and orphaned parts. The parts of a deleted run are returned instead, to go last.
 */
function fileDeletes(
  d: RunDecision,
  sink: DeleteSink,
  masks: Int32Array,
  actions: Uint8Array,
  opts: Required<PlanRetentionOptions>,
  noRules: boolean,
): RetentionFile[] | undefined {
  const { run, snaps, offset: o, deleteRun, archived } = d;
  let deferredParts: RetentionFile[] | undefined;
  if (d.removed > 0) {
    const reason: DeleteReason = deleteRun ? 'run-archived' : archived ? 'summarized' : 'snapshot';
    for (let i = 0; i < snaps.length; i++) {
      if (actions[o + i]! < A_SUMMARIZE) continue;
      const s = snaps[i]!;
      for (const f of s.files) del(sink, f.key, 'history', reason, f.size, s.id);
      for (const p of s.parts) {
        if (deleteRun) (deferredParts ??= []).push(p);
        else del(sink, p.key, 'part', 'snapshot', p.size, s.id);
      }
    }
  }
  if (d.latestOnly) {
    // The final snapshot stays in latest.json (with its parts); its own history files go.
    const final = snaps[d.latestIdx]!;
    for (const f of final.files) del(sink, f.key, 'history', 'latest-only', f.size, final.id);
  }
  for (const batch of run.batches) {
    const members = d.batchMembers?.get(batch.key) ?? [];
    if (!d.latestOnly && (d.pinnedBatches?.has(batch.key) || members.some((i) => masks[o + i] !== 0))) continue;
    del(sink, batch.key, 'batch', deleteRun ? 'run-archived' : d.latestOnly ? 'latest-only' : 'batch', batch.size);
  }
  if (opts.deleteUnreadable && !d.preserved) for (const file of run.unreadable) del(sink, file.key, file.kind, 'unreadable', file.size);
  for (const p of run.orphanParts) {
    if (deleteRun) (deferredParts ??= []).push(p);
    else if (d.partsSafe && !d.preserved && !noRules && p.sequence < d.maxSequence) del(sink, p.key, 'part', 'orphan-part', p.size);
  }
  return deferredParts;
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
export function emitRunOperations(
  d: RunDecision,
  masks: Int32Array,
  actions: Uint8Array,
  opts: Required<PlanRetentionOptions>,
  noRules: boolean,
  out: RetentionOperation[] | undefined,
  count: OpTotals,
): void {
  const { run } = d;
  // File deletions are collected and emitted after the index update (see above).
  const sink: DeleteSink = { runId: run.runId, deletes: out ? [] : undefined, count };
  const deletes = sink.deletes;

  if (d.needsSummary && out) out.push(summaryOperation(d));
  if (d.compressions > 0 && out) compressOperations(d, actions, out);
  const deferredParts = fileDeletes(d, sink, masks, actions, opts, noRules);

  if (d.deleteRun) {
    // The index goes first (it would name the files about to go); latest.json last of the
    // documents, so a run that still has history can always be resumed from it.
    const files = deletes?.splice(0);
    if (run.index) del(sink, run.index.key, 'index', 'run-archived', run.index.size, undefined, run.index.version);
    if (files) deletes!.push(...files);
    if (run.latest) del(sink, run.latest.key, 'latest', 'run-archived', run.latest.size, undefined, run.latest.version);
    for (const p of deferredParts ?? []) del(sink, p.key, 'part', 'run-archived', p.size);
    if (out) out.push(...deletes!);
    return;
  }
  if (d.latestOnly) {
    // The index goes first: it would name the files about to go (conditional on its version,
    // so a writer that resumed the run meanwhile keeps it and the plan stops there).
    const files = deletes?.splice(0);
    if (run.index) del(sink, run.index.key, 'index', 'latest-only', run.index.size, undefined, run.index.version);
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
    else if (s.files.length > 0 && !e.file_path.endsWith(GZIP_SUFFIX) && (a === A_COMPRESS || plainFile(s) === undefined))
      (rename ??= []).push(e.checkpoint_id);
  }
  return remove || rename ? { type: 'update-index', runId, key: run.index.key, remove: remove ?? [], rename: rename ?? [] } : undefined;
}
