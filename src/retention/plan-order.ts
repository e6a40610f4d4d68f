import { CheckpointError } from '../contract/errors.js';
import { compareInventorySnapshots, type InventoryRun, type InventorySnapshot } from './inventory.js';
import { compareStrings } from './plan-codes.js';
import type { TiersRule } from './plan-context.js';

/** The inventory's runs by run id (the same array when already sorted); throws `checkpoint_config_invalid` for a run listed twice. */
export function sortedRuns(runs: readonly InventoryRun[]): InventoryRun[] {
  let sorted = true;
  for (let i = 1; i < runs.length; i++) {
    const c = compareStrings(runs[i - 1]!.runId, runs[i]!.runId);
    if (c === 0)
      throw new CheckpointError('checkpoint_config_invalid', 'retention inventory lists a run twice', {
        details: { runId: runs[i]!.runId },
      });
    if (c > 0) sorted = false;
  }
  if (sorted) return runs as InventoryRun[];
  const copy = [...runs].sort((a, b) => compareStrings(a.runId, b.runId));
  for (let i = 1; i < copy.length; i++) {
    if (copy[i - 1]!.runId === copy[i]!.runId)
      throw new CheckpointError('checkpoint_config_invalid', 'retention inventory lists a run twice', {
        details: { runId: copy[i]!.runId },
      });
  }
  return copy;
}

/** A run's final snapshot, in any order: the one latest.json holds, else the highest sequence (ties: the newest). */
export function finalSnapshot(snaps: readonly InventorySnapshot[]): InventorySnapshot | undefined {
  let latest: InventorySnapshot | undefined;
  let newest: InventorySnapshot | undefined;
  for (const s of snaps) {
    if (s.latest && (!latest || compareInventorySnapshots(s, latest) > 0)) latest = s;
    if (!newest || s.sequence > newest.sequence || (s.sequence === newest.sequence && compareInventorySnapshots(s, newest) > 0)) newest = s;
  }
  return latest ?? newest;
}

/** A run's snapshots by time, then id (the same array when already sorted). */
export function sortedSnapshots(snaps: readonly InventorySnapshot[]): readonly InventorySnapshot[] {
  for (let i = 1; i < snaps.length; i++) {
    if (compareInventorySnapshots(snaps[i - 1]!, snaps[i]!) > 0) return [...snaps].sort(compareInventorySnapshots);
  }
  return snaps;
}

/**
 * Cross-run tiers: each run's 0-based recency rank, by the time of its final snapshot (the
 * one latest.json holds, else the highest sequence) — it is never removed while the run has
 * anything, and an archived run's summary records it as last_checkpoint_at, so ranks are
 * stable. Empty without a `run-tiers` rule.
 */
export function rankRuns(runs: readonly InventoryRun[], tiers: TiersRule | undefined): Map<string, number> {
  const rankOf = new Map<string, number>();
  if (!tiers) return rankOf;
  const timed = runs.map((r) => {
    let t = -Infinity;
    const final = finalSnapshot(r.snapshots);
    if (final) t = final.createdAtMs;
    else if (r.summary?.lastCheckpointAtMs !== undefined && Number.isFinite(r.summary.lastCheckpointAtMs)) t = r.summary.lastCheckpointAtMs;
    return { runId: r.runId, t };
  });
  timed.sort((a, b) => (b.t === a.t ? compareStrings(a.runId, b.runId) : b.t > a.t ? 1 : -1));
  timed.forEach((r, i) => rankOf.set(r.runId, i));
  return rankOf;
}
