import { gunzip, gzip, isGzip } from '../codec/gzip.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import { decodeRunIndex, encodeRunIndex, pruneRunIndex } from '../codec/run-index.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import type { Profile } from '../contract/profile.js';
import { GZIP_SUFFIX } from '../contract/layout.js';
import { decodeStoredSnapshot } from '../snapshot-io/read-snapshot.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { RetentionOperation } from './plan.js';
import { buildRetentionSummary, decodeRetentionSummary, encodeRetentionSummary } from './summary.js';
import { type RetentionSummarizer, type RetentionSummary } from '../contract/retention-policy.js';

/** Reason codes that mean "this file or this step cannot be done now" (skip it, go on) rather than "storage failed" (stop). */
export const SKIPPABLE: ReadonlySet<ReasonCode> = new Set<ReasonCode>([
  'checkpoint_schema_invalid',
  'checkpoint_integrity_mismatch',
  'checkpoint_conflict',
  'checkpoint_not_found',
  'checkpoint_no_valid_snapshot',
]);

/** A data problem that skips one operation (and says why), as opposed to a storage failure. */
export class Skip extends Error {
  constructor(
    readonly reasonCode: ReasonCode,
    message: string,
  ) {
    super(message);
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

async function loadFinalSnapshot<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  sources: readonly { key: string; id: string }[],
): Promise<Snapshot<P>> {
  for (const source of sources) {
    const stored = await storage.get(source.key);
    if (!stored) continue;
    try {
      if (profile.layout.classify(source.key)?.kind === 'batch') {
        const members = await decodeBatchFile(storage, profile, source.key, stored.bytes);
        const hit = members.find((m) => m.ok && m.snapshot.id === source.id);
        if (hit?.ok) return hit.snapshot;
        continue;
      }
      return await decodeStoredSnapshot(storage, profile, source.key, stored.bytes);
    } catch (err) {
      if (isCheckpointError(err) && SKIPPABLE.has(err.reasonCode)) continue;
      throw err;
    }
  }
  throw new Skip('checkpoint_no_valid_snapshot', 'no readable snapshot to summarize the run from');
}

/** Writes (or refreshes) a run's summary from its final snapshot, create-only or on the version read. */
export async function writeSummary<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  op: Extract<RetentionOperation, { type: 'write-summary' }>,
  summarizer: RetentionSummarizer,
  archivedAt: string,
): Promise<'done' | 'already-done'> {
  for (let attempt = 0; ; attempt++) {
    const existing = await storage.get(op.key);
    let previous: RetentionSummary | undefined;
    if (existing) {
      // A summary that cannot be read is not overwritten: the run waits until someone looks at it.
      previous = decodeRetentionSummary(existing.bytes, op.key);
      if (previous.last_checkpoint_id === op.lastCheckpointId) return 'already-done';
    }
    const latest = await loadFinalSnapshot(storage, profile, op.sources);
    const startedAt = previous && Date.parse(previous.started_at) < Date.parse(op.startedAt) ? previous.started_at : op.startedAt;
    const summary = buildRetentionSummary(
      {
        runId: op.runId,
        latest,
        startedAt,
        checkpointCount: Math.max(op.checkpointCount, previous?.checkpoint_count ?? 0),
        ...(previous ? { previous } : {}),
      },
      summarizer,
      archivedAt,
    );
    const bytes = encodeRetentionSummary(decodeRetentionSummary(encodeRetentionSummary(summary), op.key));
    try {
      await storage.put(op.key, bytes, existing ? { ifVersion: existing.version } : { ifAbsent: true });
      return 'done';
    } catch (err) {
      if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= 2) throw err;
    }
  }
}

/**
 * Writes `<entry>.gz` create-only, reads it back and checks it against the plain entry,
 * then deletes the plain one (on the version read).
 */
export async function compressHistoryEntry<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  op: Extract<RetentionOperation, { type: 'compress' }>,
): Promise<'done' | 'already-done'> {
  const to = op.key + GZIP_SUFFIX;
  const plain = await storage.get(op.key);
  if (!plain) {
    // Gone: an earlier apply finished this compression (the .gz is there) or someone deleted it.
    if (await storage.get(to)) return 'already-done';
    throw new Skip('checkpoint_not_found', `${op.key} is gone and ${to} does not exist`);
  }
  if (isGzip(plain.bytes)) throw new Skip('checkpoint_schema_invalid', `${op.key} is already gzip content`);
  // Only a valid snapshot is compressed: its integrity block travels inside the .gz, and
  // the gzip trailer's CRC-32 covers the compressed artifact.
  await decodeStoredSnapshot(storage, profile, op.key, plain.bytes);
  const packed = gzip(plain.bytes);
  try {
    await storage.put(to, packed, { ifAbsent: true });
  } catch (err) {
    if (!isCheckpointError(err, 'checkpoint_conflict')) throw err;
    // A .gz is already there: left by an interrupted apply (same content) or broken.
    const existing = await storage.get(to);
    if (existing && !holds(existing.bytes, plain.bytes)) {
      if (isCompleteGzip(existing.bytes, profile.maxSnapshotBytes))
        throw new Skip('checkpoint_conflict', `${to} exists with different content`);
      await storage.put(to, packed, { ifVersion: existing.version });
    }
  }
  const back = await storage.get(to);
  if (!back || !holds(back.bytes, plain.bytes)) {
    throw new CheckpointError('checkpoint_atomic_write_failed', `${to} does not read back as the gzip of ${op.key}`, {
      details: { key: to },
    });
  }
  await storage.delete(op.key, { ifVersion: plain.version });
  return 'done';
}

/** True when `gz` gunzips (with a valid CRC) to exactly `plain`. */
function holds(gz: Uint8Array, plain: Uint8Array): boolean {
  try {
    return sameBytes(gunzip(gz, 'compressed entry', { maxBytes: plain.length }), plain);
  } catch {
    return false;
  }
}

/**
 * True when `gz` is a complete gzip stream (of something else than the plain entry): then it
 * is not ours to replace. One that inflates past `maxBytes` was never written by an
 * interrupted apply either, so it counts as complete (and is left alone).
 */
function isCompleteGzip(gz: Uint8Array, maxBytes: number): boolean {
  try {
    gunzip(gz, 'compressed entry', { maxBytes });
    return true;
  } catch (err) {
    return isCheckpointError(err, 'checkpoint_too_large');
  }
}

/** Removes the index entries of snapshots that go (unless an operation on their files was skipped) and renames compressed ones to `.gz`. */
export async function updateIndex(
  storage: StorageAdapter,
  op: Extract<RetentionOperation, { type: 'update-index' }>,
  blocked: ReadonlySet<string>,
  pendingCompression: (runId: string, snapshotId: string) => boolean,
  now: string,
): Promise<'done' | 'already-done'> {
  const remove = new Set(op.remove);
  const rename = new Set(op.rename);
  for (let attempt = 0; ; attempt++) {
    const stored = await storage.get(op.key);
    if (!stored) return 'already-done';
    const index = decodeRunIndex(stored.bytes, op.key);
    // An entry goes before its snapshot's files (so the index never names a deleted file),
    // unless an earlier operation on them was skipped; it gains .gz once its compression is done.
    const removePaths = new Set<string>();
    const renamePaths = new Map<string, string>();
    for (const e of index.checkpoints) {
      if (remove.has(e.checkpoint_id) && !blocked.has(e.file_path) && !blocked.has(snapshotRef(op.runId, e.checkpoint_id)))
        removePaths.add(e.file_path);
      else if (rename.has(e.checkpoint_id) && !e.file_path.endsWith(GZIP_SUFFIX) && !pendingCompression(op.runId, e.checkpoint_id))
        renamePaths.set(e.file_path, e.file_path + GZIP_SUFFIX);
    }
    if (removePaths.size === 0 && renamePaths.size === 0) return 'already-done';
    const next = pruneRunIndex(index, removePaths, now, renamePaths);
    try {
      await storage.put(op.key, encodeRunIndex(next), { ifVersion: stored.version });
      return 'done';
    } catch (err) {
      // A writer appended an entry meanwhile: read it again and prune that.
      if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= 4) throw err;
    }
  }
}

/** One key for a snapshot of a run, for the sets of blocked and compressed snapshots. */
export function snapshotRef(runId: string, snapshotId: string): string {
  return `${runId}\u0000${snapshotId}`;
}
