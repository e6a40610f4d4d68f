import { isCheckpointError } from '../contract/errors.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import type { Profile } from '../contract/profile.js';
import { decodePreservedRuns } from '../retention/preserved-runs.js';
import type { RetentionPolicy } from '../contract/retention-policy.js';
import type { StorageAdapter } from '../contract/storage.js';

/**
 * The part of a profile's retention policy the writer applies by itself, per run, as it
 * writes (bounded runs without a cron job): keep the `keep` newest snapshots and
 * the newest one of each `keepStatuses` status; delete the rest of the run's history.
 */
export interface PerRunPolicy {
  readonly keep: number;
  readonly keepStatuses: readonly string[];
  /** Runs a `preserve-runs` rule of the policy keeps whole. */
  readonly preserveRunIds: ReadonlySet<string>;
}

/**
 * The per-run policy of `policy`, or `undefined` when the writer cannot apply it alone.
 *
 * Only policies made solely of `keep-last`, `keep-latest-status` and `preserve-runs` rules
 * qualify (snapshot-lifecycle.md's and the default profile's). Whatever the writer deletes,
 * `runRetention` with the same policy would delete too: it keeps at least the newest `keep`
 * (ignoring `maxAge`, which only ever keeps fewer), the newest of each kept status, the run's
 * latest snapshot, and preserved runs whole. Time-based rules (`keep-within`, calendar
 * buckets) and cross-run tiers need the whole store and stay with `runRetention`.
 */
export function perRunPolicyOf(policy: RetentionPolicy | undefined): PerRunPolicy | undefined {
  if (!policy) return undefined;
  let keep = -1;
  const keepStatuses: string[] = [];
  const preserveRunIds = new Set<string>();
  for (const rule of policy.rules) {
    if (rule.rule === 'keep-last') keep = Math.max(keep, rule.count);
    else if (rule.rule === 'keep-latest-status') keepStatuses.push(rule.status);
    else if (rule.rule === 'preserve-runs') for (const id of rule.runIds) preserveRunIds.add(id);
    else return undefined;
  }
  return keep >= 1 ? { keep, keepStatuses, preserveRunIds } : undefined;
}

/**
 * How far past `keep` a run may grow before the writer prunes: pruning in batches of this
 * size keeps the cost O(1) amortized per checkpoint (one index rewrite, `slack` deletes).
 */
export const pruneSlack = (keep: number): number => Math.max(4, Math.ceil(keep / 5));

/**
 * The entries to delete from `history` (ascending by sequence, the run's history entries),
 * or `[]` while the run is within `keep + slack`. Never the newest `keep`, never the newest
 * entry of a kept status, never an entry whose file also holds a kept entry (batch files).
 * Only the few entries past the bound are gathered, and only their files looked up among the
 * kept ones: this runs at every prune, on a history of `keep + slack` entries.
 */
export function planPrune(history: readonly RunIndexEntry[], policy: PerRunPolicy): RunIndexEntry[] {
  if (history.length <= policy.keep + pruneSlack(policy.keep)) return [];
  const cut = history.length - policy.keep;
  // The newest entry of each kept status, where it is older than the newest `keep`.
  const keptOld: number[] = [];
  for (const status of policy.keepStatuses) {
    for (let i = history.length - 1; i >= 0; i--) {
      if (history[i]!.status === status) {
        if (i < cut) keptOld.push(i);
        break;
      }
    }
  }
  const candidates: RunIndexEntry[] = [];
  const files = new Set<string>();
  for (let i = 0; i < cut; i++) {
    if (keptOld.includes(i)) continue;
    candidates.push(history[i]!);
    files.add(history[i]!.file_path);
  }
  // Files that also hold a kept entry stay, with every entry in them.
  let shared = false;
  for (let i = cut; i < history.length; i++) if (files.delete(history[i]!.file_path)) shared = true;
  for (const i of keptOld) if (files.delete(history[i]!.file_path)) shared = true;
  return shared ? candidates.filter((e) => files.has(e.file_path)) : candidates;
}

const NOTHING_LEAVES: readonly string[] = Object.freeze([]);

/**
 * The ids a keep-last bound with no slack lets go once `id` is stored (the LangGraph saver's
 * `keepLast`): the oldest of `ids` (ascending; `known` when `id` is among them already)
 * beyond the newest `keep`, `[]` while within. Undefined when `id` itself would be one of
 * them (an old checkpoint put again): the caller stores it and prunes after.
 */
export function planKeepLast(ids: readonly string[], keep: number, id: string, known: boolean): readonly string[] | undefined {
  const excess = ids.length + (known ? 0 : 1) - keep;
  // One shared empty answer: this runs on every put of a LangGraph thread.
  if (excess <= 0) return NOTHING_LEAVES;
  const leaving = ids.slice(0, excess);
  if (leaving.includes(id) || leaving.length !== excess || (!known && ids.length > 0 && id < ids[excess - 1]!)) return undefined;
  return leaving;
}

/** True when `runId` is listed in the store's `preserved_runs.json` (read fresh: a person may add a run at any time). */
export async function isPreservedRun(storage: StorageAdapter, profile: Profile<unknown>, runId: string): Promise<boolean> {
  const key = profile.layout.preservedRunsKey;
  if (!key) return false;
  const stored = await storage.get(key);
  if (!stored) return false;
  try {
    return decodePreservedRuns(stored.bytes, key).preserved_runs.some((e) => e.run_id === runId);
  } catch (err) {
    // An unreadable list might name this run: keep everything rather than guess.
    if (isCheckpointError(err)) return true;
    throw err;
  }
}
