import { isCheckpointError } from '../contract/errors.js';
import { decodeRunIndexToKeep, type RunIndex } from '../codec/run-index.js';
import { hasLinkedRead, isAbsentLinked, type LinkedValues } from '../contract/linked-read.js';
import { decodeStoredSnapshotTolerant } from '../snapshot-io/read-snapshot.js';
import { holdsRunFiles, indexOfAnswer, runPrefix } from './recovery-scan.js';
import type { RecoveredHead } from './sequence-recovery.js';
import type { WriterConfig } from './writer-config.js';

/** What a writer learns of a run from its `latest` alone. */
export interface LatestRecovery<P> {
  /** The run's last sequence: `latest`'s (0 for a new run). */
  readonly lastSequence: number;
  readonly head?: RecoveredHead<P>;
  /**
   * The run's index, read with `latest` when the writer prunes as it goes (a prune needs the run's
   * history): only a complete one (it lists `latest`'s number), else the run is recovered in full.
   * Absent for a new run, and without automatic retention (the index is read before its rewrite).
   */
  readonly index?: { readonly doc: RunIndex; readonly version: string };
}

/**
 * Whether a writer may open a run from its `latest` alone, leaving the index and the listing to
 * the index's next rewrite. Only where `latest` is known to be the newest snapshot: the store
 * commits each group (history entries, `latest`, the index) in one atomic batch, so no crash
 * leaves a history entry newer than `latest`, and other tools do not write the profile's files
 * (no `sharedFiles`). Only for an immutable history: the head's history entry is never rewritten
 * (its version is not needed). Such a run is the one whose full recovery grows with its length.
 * With automatic retention the index is read too (a prune needs the run's history), but not the
 * listing. `openFromLatest: false` turns it off. The caller also asks that the writer created the
 * run's lock (open-run.ts).
 */
export function opensFromLatest<P>(config: WriterConfig<P>): boolean {
  return (
    config.openFromLatest &&
    config.useAtomicBatch &&
    hasLinkedRead(config.storage) &&
    config.hasHistory &&
    config.immutableHistory &&
    config.indexKey !== undefined &&
    !config.readInPlace &&
    config.profile.sharedFiles === undefined &&
    config.layout.historyKey !== undefined
  );
}

/**
 * Reads `latest` (and, when it is absent, the run's keys; with automatic retention, the index; in
 * the same round trip). Undefined when `latest` alone cannot be trusted and the run must be
 * recovered in full: it is absent while other files of the run are stored, it does not decode,
 * another tool wrote it, or (with automatic retention) the index is missing, unreadable or lacks
 * `latest`'s number.
 */
export async function recoverFromLatest<P>(config: WriterConfig<P>): Promise<LatestRecovery<P> | undefined> {
  const { storage, profile, runId, latestKey, layout, indexKey } = config;
  if (!hasLinkedRead(storage) || !layout.historyKey) return undefined;
  const withIndex = config.autoRetention !== undefined && indexKey !== undefined;
  const answer = await storage.getLinked(latestKey, {
    keysIfAbsent: runPrefix(config),
    ...(withIndex ? { first: { prefix: indexKey, count: 1 } } : {}),
  });
  if (isAbsentLinked(answer)) return holdsRunFiles(config, answer.absent.keys) ? undefined : { lastSequence: 0 };
  if (!answer) return undefined; // absent, the run's keys not read
  let snapshot;
  try {
    const read = await decodeStoredSnapshotTolerant(storage, profile, latestKey, answer.value.bytes);
    if (read.warnings.length > 0) return undefined; // another tool's latest (or one numbered by the run's order)
    snapshot = read.snapshot;
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
  // The head's history entry, where the writer stored it. Its version is never needed: an
  // immutable history entry is never rewritten, and only a store with a rate budget (no linked
  // read) joins the head's file into a batch file.
  const key = layout.historyKey({ runId, id: snapshot.id, sequence: snapshot.sequence, source: snapshot.source });
  const head: RecoveredHead<P> = { snapshot, location: { kind: 'history', key, version: '' } };
  if (!withIndex) return { lastSequence: snapshot.sequence, head };
  const index = await completeIndex(config, indexKey, answer, snapshot.sequence);
  return index ? { lastSequence: snapshot.sequence, head, index } : undefined;
}

/**
 * The run's index from the answer (read after when the store left it), when it lists snapshot
 * `last`: each group stores its history entries, `latest` and the index in one batch, and holds
 * back only the newest entries, so an index that lists `latest`'s number lists every snapshot.
 * One that does not (a `close()` whose index write failed, a lock removed by hand) is undefined.
 */
async function completeIndex<P>(
  config: WriterConfig<P>,
  indexKey: string,
  answer: LinkedValues,
  last: number,
): Promise<LatestRecovery<P>['index']> {
  const stored = await indexOfAnswer(config.storage, indexKey, answer);
  if (!stored) return undefined;
  let doc: RunIndex;
  try {
    doc = decodeRunIndexToKeep(stored.bytes, indexKey);
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
  return doc.checkpoints.some((e) => e.sequence === last) ? { doc, version: stored.version } : undefined;
}
