import { parseRfc3339 } from '../contract/clock.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import { canonicalJson } from '../codec/canonical-json.js';
import { latestOnlyRecords } from './coalescing.js';
import { withRetry } from './retry.js';
import { opensFromLatest, recoverFromLatest, type LatestRecovery } from './recovery-latest.js';
import { recoverRun, type RecoveredHead, type RecoveredRun } from './sequence-recovery.js';
import { materialText } from './triggers.js';
import type { Head, WriterState } from './state.js';
import { indexDue } from './write-plan.js';

/**
 * Opens the run, or reads it again after a failed group: takes the lock the first time,
 * then recovers numbering, index, history and head from storage: from `latest` alone the
 * first time where that suffices (recovery-latest.ts) and the lock was free, else from every
 * file of the run.
 */
export async function ensureOpen<P>(state: WriterState<P>): Promise<void> {
  if (state.opened && !state.needsRecovery) return;
  const { runId } = state.config;
  const lock = state.lock;
  let tookOver = false;
  let created = false;
  if (!state.opened && lock && !lock.held) {
    const acquired = await lock.acquire();
    tookOver = acquired.tookOver;
    created = acquired.created;
    state.inheritedClaims = Math.max(state.inheritedClaims, acquired.inheritedClaims);
  }
  // Only after a writer that released the run at close, which leaves the index complete: one
  // that crashed may have held index entries back, and a chain of such writers would each add theirs.
  const fromLatest =
    !state.opened && !state.needsRecovery && created && opensFromLatest(state.config) ? await recoverFromLatest(state.config) : undefined;
  // A run short enough that its first checkpoint rewrites the index is recovered in full at once,
  // unless its index was read with `latest`.
  const n = fromLatest?.lastSequence ?? 0;
  const shortRun = fromLatest?.head !== undefined && indexDue(state.config, { indexedCount: n, lastSequence: n }, 1);
  if (fromLatest && (fromLatest.index || !shortRun)) await openedFromLatest(state, fromLatest);
  else await recoverInFull(state);
  const first = !state.opened;
  state.opened = true;
  state.needsRecovery = false;
  if (first) state.emitter.emit('opened', { runId, lastSequence: state.lastSequence, locked: lock?.held ?? false, tookOver });
}

/**
 * The run as `latest` gives it: with its index, read with it (automatic retention: the history a
 * prune needs), or without, the stored index and the entries it lacks then read before the
 * index's next rewrite.
 */
async function openedFromLatest<P>(state: WriterState<P>, recovered: LatestRecovery<P>): Promise<void> {
  state.lastSequence = Math.max(recovered.lastSequence, state.inheritedClaims);
  state.nextSequence = state.lastSequence + 1;
  state.index.doc = recovered.index?.doc;
  state.index.version = recovered.index?.version;
  state.unindexed = [];
  // A new run has no index to read: its first rewrite creates one.
  state.indexUnread = recovered.head && !recovered.index ? recovered.lastSequence : undefined;
  if (state.config.autoRetention) state.history = historyOf(recovered.index?.doc.checkpoints ?? [], [], state.config.latestKey);
  state.head = await headOf(state, recovered.head);
}

/** Numbering, index, history and head from every file of the run (see recoverRun). */
async function recoverInFull<P>(state: WriterState<P>): Promise<void> {
  const { storage, profile, runId, autoRetention } = state.config;
  // Opened from latest, the writer holds every entry it stored since: they are not read again.
  const written = state.indexUnread !== undefined ? state.unindexed : undefined;
  let recovered = await recoverRun(storage, profile, runId, written);
  if (recovered.orphanLatest) {
    await keepOrphanLatest(state, recovered.orphanLatest, Math.max(recovered.lastSequence, state.inheritedClaims) + 1);
    recovered = await recoverRun(storage, profile, runId, written);
  }
  state.lastSequence = Math.max(recovered.lastSequence, state.inheritedClaims);
  state.nextSequence = state.lastSequence + 1;
  state.index.doc = recovered.index.doc;
  state.index.version = recovered.index.version;
  state.unindexed = recovered.unindexed;
  state.indexUnread = undefined;
  if (autoRetention) state.history = historyOf(recovered.index.doc?.checkpoints ?? [], recovered.unindexed, state.config.latestKey);
  state.head = await headOf(state, recovered.head);
}

/**
 * Keeps a `latest` another tool wrote, which no history entry holds, as a history entry
 * before the writer's next `latest` replaces it: its content sealed again as snapshot
 * `sequence` (its own number when that is above the history, else the next one), with the
 * id the profile gives that number (a hand-off `handoff-final` is kept as `chk-NNN`).
 */
async function keepOrphanLatest<P>(
  state: WriterState<P>,
  orphan: NonNullable<RecoveredRun<P>['orphanLatest']>,
  next: number,
): Promise<void> {
  const { storage, profile, runId } = state.config;
  const { integrity: _foreign, ...s } = orphan.snapshot;
  const sequence = orphan.ownNumberFree ? s.sequence : next;
  const createdAtMs = parseRfc3339(s.createdAt);
  const id = profile.newSnapshotId({ runId, sequence, source: s.source, createdAtMs });
  const key = profile.layout.historyKey!({ runId, id, sequence, source: s.source });
  if ((await storage.get(key)) !== undefined) return; // never overwrite history
  const encoded = await profile.document.encode({ ...s, id, sequence });
  await storage.put(key, encoded.bytes);
}

/** {@link ensureOpen} with the writer's retries. */
export const openWithRetry = <P>(state: WriterState<P>): Promise<void> => withRetry(() => ensureOpen(state), state.retry);

/** The run's history entries (indexed or not, `latest` left out), ascending by sequence. */
function historyOf(indexed: readonly RunIndexEntry[], unindexed: readonly RunIndexEntry[], latestKey: string): RunIndexEntry[] {
  const bySequence = new Map<number, RunIndexEntry>();
  for (const e of [...indexed, ...unindexed]) if (e.file_path !== latestKey) bySequence.set(e.sequence, Object.freeze({ ...e }));
  return [...bySequence.values()].sort((a, b) => a.sequence - b.sequence);
}

/** The recovered newest snapshot as the writer's head (immutable history: with the records only `latest` holds). */
async function headOf<P>(state: WriterState<P>, recovered: RecoveredHead<P> | undefined): Promise<Head<P> | undefined> {
  if (!recovered) return undefined;
  const s = recovered.snapshot;
  const { storage, profile, immutableHistory } = state.config;
  return {
    header: {
      id: s.id,
      runId: s.runId,
      sequence: s.sequence,
      createdAt: s.createdAt,
      source: s.source,
      sourceDetails: s.sourceDetails,
      ...(s.priority ? { priority: s.priority } : {}),
      status: s.status,
    },
    payloadText: canonicalJson(s.payload),
    state: { material: materialText(profile, s.status, s.payload), status: s.status },
    createdAtMs: parseRfc3339(s.createdAt),
    location: recovered.location,
    latestOnly: immutableHistory ? await latestOnlyRecords(storage, profile, s, recovered.location) : [],
  };
}
