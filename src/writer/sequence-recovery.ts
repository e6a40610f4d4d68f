import type { RunIndexEntry } from '../codec/run-index.js';
import { canonicalJson } from '../codec/canonical-json.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { IndexState } from './ordered-write.js';
import { createRecovery, see, unreadableNumbers, type RunRecovery } from './recovery-evidence.js';
import { findHead } from './recovery-head.js';
import { numberDerived, readRunFiles, scanListed } from './recovery-scan.js';

/** Where the newest snapshot is stored, as far as rewriting it (coalescing) is concerned. */
export type HeadLocation =
  | { readonly kind: 'history'; readonly key: string; readonly version: string }
  | {
      readonly kind: 'batch';
      readonly key: string;
      readonly version: string;
      readonly members: readonly { sequence: number; bytes: Uint8Array }[];
    }
  /** Profiles without history: the snapshot lives in `latest` only. */
  | { readonly kind: 'latest' }
  /** Stored where it must not be rewritten (compressed, or not found): closed for coalescing. */
  | { readonly kind: 'fixed' };

/** The newest stored snapshot of a run. */
export interface RecoveredHead<P> {
  readonly snapshot: Snapshot<P>;
  readonly location: HeadLocation;
}

/** What a writer learns when it opens a run. */
export interface RecoveredRun<P> {
  /** Highest sequence number any stored file claims (0 for a new run). The next snapshot gets this + 1. */
  readonly lastSequence: number;
  /** The newest valid snapshot (history may hold one newer than a stale `latest` after a crash). */
  readonly head?: RecoveredHead<P>;
  /** The run index as read. */
  readonly index: IndexState;
  /** Valid stored snapshots the index does not list (a crash between history and index); merged into the next index write. */
  readonly unindexed: readonly RunIndexEntry[];
  /** Files that failed validation (their numbers are still never reused when their names carry one). */
  readonly corrupt: readonly string[];
  /**
   * `latest` as another tool wrote it when no history entry holds it (its id is not among
   * history's): the writer keeps it as a history entry before it rewrites `latest`.
   */
  readonly orphanLatest?: {
    readonly snapshot: Snapshot<P>;
    /** Its own sequence is above every history entry's, so it may keep it. */
    readonly ownNumberFree: boolean;
  };
}

/** `latest` when another tool wrote it and the run's history (listed and indexed) does not hold its id. */
function orphanLatestOf<P>(r: RunRecovery<P>): RecoveredRun<P>['orphanLatest'] {
  if (!r.foreignLatest || !r.latest || !r.profile.layout.historyKey) return undefined;
  const { id, createdAt } = r.latest;
  const content = canonicalJson(r.latest.payload);
  // Held by id, or by content (the copy an earlier open kept under the history's own id).
  for (const d of r.decoded.values())
    if (d.snapshot.id === id || (d.snapshot.createdAt === createdAt && canonicalJson(d.snapshot.payload) === content)) return undefined;
  if (r.index.doc?.checkpoints.some((e) => e.checkpoint_id === id)) return undefined;
  let highestHistory = 0;
  for (const { info } of r.listed.values()) highestHistory = Math.max(highestHistory, info.sequence ?? 0);
  for (const n of r.decoded.keys()) highestHistory = Math.max(highestHistory, n);
  for (const e of r.index.doc?.checkpoints ?? []) highestHistory = Math.max(highestHistory, e.sequence);
  return { snapshot: r.latest, ownNumberFree: r.latest.sequence > highestHistory };
}

/**
 * Recovers a run's numbering and newest snapshot from storage, so a new process continues
 * the sequence and never reuses a number. Evidence, in order: `latest`, the index, and a
 * listing of the run's files — a crash may have left a history entry (or part files, or a
 * batch file) newer than `latest` and the index. Every number a stored file claims counts,
 * even when that file is corrupt, as long as its name carries the number. `written`: entries the
 * recovering writer stored and holds (not yet indexed), taken as they are instead of read again.
 */
export async function recoverRun<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  written?: readonly RunIndexEntry[],
): Promise<RecoveredRun<P>> {
  const r = createRecovery(storage, profile, runId, written);
  await readRunFiles(r);
  await scanListed(r);
  numberDerived(r);
  see(r, unreadableNumbers(r.newestKnown, r.unnumbered));
  const head = await findHead(r);
  const orphanLatest = orphanLatestOf(r);
  return {
    lastSequence: r.lastSequence,
    ...(head ? { head } : {}),
    index: r.index,
    unindexed: r.unindexed,
    corrupt: r.corrupt,
    ...(orphanLatest ? { orphanLatest } : {}),
  };
}
