import { gunzip, gzip, isGzip } from '../codec/gzip.js';
import { assertStorageProfileOptions } from '../model/arguments.js';
import { systemClock, toRfc3339, type Clock } from '../model/clock.js';
import { CheckpointError, isCheckpointError } from '../model/errors.js';
import type { ReasonCode } from '../model/reason-codes.js';
import { decodeRunIndex, encodeRunIndex, pruneRunIndex } from '../model/run-index.js';
import type { Snapshot } from '../model/snapshot.js';
import { decodeBatchFile } from '../profiles/batch-file.js';
import type { Profile } from '../profiles/define-profile.js';
import type { KeyKind } from '../profiles/layout.js';
import { GZIP_SUFFIX } from '../profiles/layout.js';
import { decodeStoredSnapshot } from '../profiles/read-snapshot.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { appendRetentionLog, DEFAULT_RETENTION_LOG_ENTRIES, type RetentionLogEntry } from './log.js';
import type { RetentionOperation, RetentionPlan } from './plan.js';
import { buildRetentionSummary, decodeRetentionSummary, encodeRetentionSummary, genericRetentionSummarizer, type RetentionSummarizer, type RetentionSummary } from './summary.js';

/** What happened to one operation. */
export interface RetentionOperationOutcome {
  readonly operation: RetentionOperation;
  /**
   * `done`; `already-done` (found done, e.g. by an earlier interrupted apply); `skipped`
   * (a data problem or a skipped prerequisite, see `reasonCode`); `planned` (dry run);
   * `failed` (the operation the apply stopped at).
   */
  readonly outcome: 'done' | 'already-done' | 'skipped' | 'planned' | 'failed';
  readonly reasonCode?: ReasonCode;
  readonly message?: string;
}

/** What {@link applyRetention} did. */
export interface RetentionReport {
  readonly dryRun: boolean;
  readonly profile: string;
  readonly policy: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  /**
   * `dry_run`; `completed`; `completed_with_skips` when some operations were skipped for
   * a data problem (each listed with its reason code; running again retries them);
   * `failed` only inside the `checkpoint_retention_prune_failed` error of a stopped apply.
   */
  readonly status: 'dry_run' | 'completed' | 'completed_with_skips' | 'failed';
  /** The plan's snapshot decisions. */
  readonly planned: RetentionPlan['totals'];
  /** One outcome per operation reached, in order. */
  readonly outcomes: readonly RetentionOperationOutcome[];
  readonly totals: {
    readonly done: number;
    readonly skipped: number;
    readonly filesDeleted: number;
    readonly compressed: number;
    readonly summariesWritten: number;
    readonly indexesUpdated: number;
    readonly bytesFreed: number;
  };
  /** The retention log: where it is and whether this apply's entry was appended. */
  readonly log: { readonly key?: string; readonly written: boolean; readonly reasonCode?: ReasonCode };
}

/** The `checkpoint_retention_prune_failed` error of an apply that stopped: `report` says what was done. */
export class RetentionPruneError extends CheckpointError {
  readonly report: RetentionReport;
  constructor(message: string, report: RetentionReport, cause: unknown, details: Record<string, string | number>) {
    super('checkpoint_retention_prune_failed', message, { cause, details });
    this.report = report;
  }
}

/** Options of {@link applyRetention}. */
export interface ApplyRetentionOptions<P = unknown> {
  readonly storage: StorageAdapter;
  /** The profile the plan was made for (its layout is checked against every key; its document format reads snapshots). */
  readonly profile: Profile<P>;
  readonly plan: RetentionPlan;
  /** Change nothing: return the plan as a report of `planned` operations. @default false */
  readonly dryRun?: boolean;
  /** Stamps the index's `last_updated`, summaries' `archived_at` and the log entry. @default systemClock */
  readonly clock?: Clock;
  /** Summarizer of archived runs. @default the plan's (its policy's), else {@link genericRetentionSummarizer} */
  readonly summarizer?: RetentionSummarizer;
  /** Append an entry to `retention_log.json`. @default true */
  readonly log?: boolean;
  /** Most entries kept in the log. @default 500 */
  readonly maxLogEntries?: number;
}

/** Reason codes that mean "this file or this step cannot be done now" (skip it, go on) rather than "storage failed" (stop). */
const SKIPPABLE: ReadonlySet<ReasonCode> = new Set<ReasonCode>([
  'checkpoint_schema_invalid',
  'checkpoint_integrity_mismatch',
  'checkpoint_conflict',
  'checkpoint_not_found',
  'checkpoint_no_valid_snapshot',
]);

class Skip extends Error {
  constructor(
    readonly reasonCode: ReasonCode,
    message: string,
  ) {
    super(message);
  }
}

const EXPECTED_KIND: Record<RetentionOperation['type'], readonly KeyKind[]> = {
  'write-summary': ['summary'],
  compress: ['history'],
  delete: ['history', 'batch', 'part', 'latest', 'index'],
  'update-index': ['index'],
};

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Executes a plan: writes summaries, compresses, deletes, updates run indexes, then
 * appends an entry to `retention_log.json` and returns a report.
 *
 * Order and crash safety: per run, the summary is written (create-only, or refreshed
 * when it describes an older final snapshot) before any snapshot of the run is removed;
 * a compression writes `<entry>.gz` create-only, reads it back and checks it against the
 * plain entry before deleting the plain one; the index stops listing snapshots before
 * their files are deleted (so it never names a missing file, and `verify` finds nothing
 * wrong after a crash mid-prune); a history entry is deleted before its part files; a
 * deleted run loses its index first (and keeps everything else when the index changed
 * since the plan: a writer came back), then its files, then latest.json, so a run with
 * history left always has its latest. A crash
 * anywhere leaves a consistent store that a new inventory, plan and apply bring to the
 * same end state as one uninterrupted apply.
 *
 * A data problem in one operation (an unreadable file, a conflicting concurrent write)
 * skips that operation — and the rest of its run after a skipped summary — and the
 * report says so (`completed_with_skips`). A storage failure stops the apply with a
 * {@link RetentionPruneError} (`checkpoint_retention_prune_failed`) whose `report` lists
 * what was done.
 *
 * Every key is checked against the profile's layout before anything is touched
 * (`checkpoint_config_invalid` otherwise), so a plan cannot reach outside it.
 */
export async function applyRetention<P>(options: ApplyRetentionOptions<P>): Promise<RetentionReport> {
  assertStorageProfileOptions(options, 'applyRetention');
  const planArg: unknown = options.plan;
  if (typeof planArg !== 'object' || planArg === null || !Array.isArray((planArg as { operations?: unknown }).operations)) {
    throw new CheckpointError('checkpoint_config_invalid', 'applyRetention: plan must be a plan made by planRetention', { details: { function: 'applyRetention' } });
  }
  const { storage, profile, plan } = options;
  const clock = options.clock ?? systemClock;
  const startedAt = toRfc3339(clock.now());
  const summarizer = options.summarizer ?? plan.summarizer ?? genericRetentionSummarizer;
  if (plan.profile !== profile.name) {
    throw new CheckpointError('checkpoint_config_invalid', `the plan was made for profile "${plan.profile}", not "${profile.name}"`, { details: { profile: profile.name } });
  }
  for (const op of plan.operations) {
    const info = profile.layout.classify(op.key);
    if (!info || info.runId !== op.runId || !EXPECTED_KIND[op.type].includes(info.kind) || (op.type === 'delete' && info.kind !== op.kind)) {
      throw new CheckpointError('checkpoint_config_invalid', `plan operation ${op.type} names a key outside the profile's layout`, { details: { runId: op.runId } });
    }
    if (op.type === 'compress' && (info.compressed || profile.layout.classify(op.key + GZIP_SUFFIX)?.kind !== 'history')) {
      throw new CheckpointError('checkpoint_config_invalid', 'plan compress operation has a bad target', { details: { runId: op.runId } });
    }
  }

  const outcomes: RetentionOperationOutcome[] = [];
  const totals = { done: 0, skipped: 0, filesDeleted: 0, compressed: 0, summariesWritten: 0, indexesUpdated: 0, bytesFreed: 0 };
  const logKey = profile.layout.retentionLogKey;
  const finish = (status: RetentionReport['status'], log: RetentionReport['log']): RetentionReport => ({
    dryRun: options.dryRun ?? false,
    profile: plan.profile,
    policy: plan.policy,
    startedAt,
    finishedAt: toRfc3339(clock.now()),
    status,
    planned: plan.totals,
    outcomes,
    totals: { ...totals },
    log,
  });

  if (options.dryRun) {
    for (const operation of plan.operations) outcomes.push({ operation, outcome: 'planned' });
    return finish('dry_run', { ...(logKey ? { key: logKey } : {}), written: false });
  }

  // What did not happen, so the index update leaves those entries alone.
  const blocked = new Set<string>();
  const compressedSnapshots = new Set<string>();
  const plannedCompressions = new Set(plan.operations.flatMap((op) => (op.type === 'compress' ? [snapshotRef(op.runId, op.snapshotId)] : [])));
  const pendingCompression = (runId: string, snapshotId: string): boolean => {
    const ref = snapshotRef(runId, snapshotId);
    return plannedCompressions.has(ref) && !compressedSnapshots.has(ref);
  };
  /** Runs whose remaining operations are skipped, and why. */
  const skippedRuns = new Map<string, { reasonCode: ReasonCode; message: string }>();
  const perRun = new Map<string, { deleted: number; compressed: number; summarized: boolean; runDeleted: boolean }>();
  const runStats = (runId: string): { deleted: number; compressed: number; summarized: boolean; runDeleted: boolean } => {
    let s = perRun.get(runId);
    if (!s) perRun.set(runId, (s = { deleted: 0, compressed: 0, summarized: false, runDeleted: false }));
    return s;
  };
  const now = (): string => toRfc3339(clock.now());

  const run = async (op: RetentionOperation): Promise<'done' | 'already-done'> => {
    switch (op.type) {
      case 'write-summary':
        return writeSummary(storage, profile, op, summarizer, now());
      case 'compress':
        return compress(storage, profile, op);
      case 'delete': {
        const existed = await storage.delete(op.key, op.ifVersion !== undefined ? { ifVersion: op.ifVersion } : {});
        return existed ? 'done' : 'already-done';
      }
      case 'update-index':
        return updateIndex(storage, op, blocked, pendingCompression, now());
    }
  };

  const markSkipped = (op: RetentionOperation): void => {
    if (op.type !== 'delete') return;
    blocked.add(op.key);
    if (op.snapshotId !== undefined) blocked.add(snapshotRef(op.runId, op.snapshotId));
  };
  for (const op of plan.operations) {
    const runSkip = op.type !== 'compress' ? skippedRuns.get(op.runId) : undefined;
    if (runSkip) {
      outcomes.push({ operation: op, outcome: 'skipped', ...runSkip });
      totals.skipped++;
      markSkipped(op);
      continue;
    }
    try {
      const outcome = await run(op);
      outcomes.push({ operation: op, outcome });
      totals.done++;
      if (op.type === 'compress') compressedSnapshots.add(snapshotRef(op.runId, op.snapshotId));
      const stats = runStats(op.runId);
      if (op.type === 'delete') {
        if (outcome === 'done') {
          totals.filesDeleted++;
          totals.bytesFreed += op.size;
        }
        if (op.kind === 'history') stats.deleted++;
        if (op.kind === 'latest') stats.runDeleted = true;
      } else if (op.type === 'compress') {
        totals.compressed++;
        stats.compressed++;
      } else if (op.type === 'write-summary') {
        if (outcome === 'done') {
          totals.summariesWritten++;
          stats.summarized = true;
        }
      } else if (outcome === 'done') {
        totals.indexesUpdated++;
      }
    } catch (err) {
      const code = err instanceof Skip ? err.reasonCode : isCheckpointError(err) && SKIPPABLE.has(err.reasonCode) ? err.reasonCode : undefined;
      if (code !== undefined) {
        outcomes.push({ operation: op, outcome: 'skipped', reasonCode: code, message: err instanceof Error ? err.message : String(err) });
        totals.skipped++;
        markSkipped(op);
        // No summary, or a deleted run whose index or latest.json changed since the plan: the run's files stay.
        if (op.type === 'write-summary') skippedRuns.set(op.runId, { reasonCode: 'checkpoint_no_valid_snapshot', message: "skipped: the run's summary could not be written" });
        else if (op.type === 'delete' && (op.kind === 'latest' || op.kind === 'index')) {
          skippedRuns.set(op.runId, { reasonCode: code, message: `skipped: the run's ${op.kind} changed since the plan, so the run is kept` });
        }
        continue;
      }
      const reasonCode: ReasonCode = isCheckpointError(err) ? err.reasonCode : 'checkpoint_storage_unavailable';
      outcomes.push({ operation: op, outcome: 'failed', reasonCode });
      let logged = false;
      if (options.log !== false && logKey) {
        try {
          await appendRetentionLog(storage, logKey, logEntry(plan, outcomes, totals, perRun, 'failed', now(), { reason_code: reasonCode, key: op.key }), options.maxLogEntries);
          logged = true;
        } catch {
          // The store that just failed may refuse this too; the thrown error carries the report.
        }
      }
      const report = finish('failed', { ...(logKey ? { key: logKey } : {}), written: logged });
      throw new RetentionPruneError(`retention stopped at ${op.type} of ${op.key} after ${totals.done} of ${plan.operations.length} operations`, report, err, {
        operationsDone: totals.done,
        operationsPlanned: plan.operations.length,
        failedOperation: op.type,
        failedKey: op.key,
        reason: reasonCode,
      });
    }
  }

  const status = totals.skipped > 0 ? 'completed_with_skips' : 'completed';
  if (options.log === false || !logKey) return finish(status, { ...(logKey ? { key: logKey } : {}), written: false });
  try {
    await appendRetentionLog(storage, logKey, logEntry(plan, outcomes, totals, perRun, status, now()), options.maxLogEntries ?? DEFAULT_RETENTION_LOG_ENTRIES);
    return finish(status, { key: logKey, written: true });
  } catch (err) {
    if (isCheckpointError(err) && SKIPPABLE.has(err.reasonCode)) {
      // A log savepoint cannot read is never overwritten; the report says it was not appended.
      return finish('completed_with_skips', { key: logKey, written: false, reasonCode: err.reasonCode });
    }
    const reasonCode: ReasonCode = isCheckpointError(err) ? err.reasonCode : 'checkpoint_storage_unavailable';
    const report = finish('failed', { key: logKey, written: false, reasonCode });
    throw new RetentionPruneError(`retention applied every operation but could not append to ${logKey}`, report, err, {
      operationsDone: totals.done,
      operationsPlanned: plan.operations.length,
      failedKey: logKey,
      reason: reasonCode,
    });
  }
}

function logEntry(
  plan: RetentionPlan,
  outcomes: readonly RetentionOperationOutcome[],
  totals: RetentionReport['totals'],
  perRun: ReadonlyMap<string, { deleted: number; compressed: number; summarized: boolean; runDeleted: boolean }>,
  status: RetentionLogEntry['status'],
  at: string,
  error?: { reason_code: ReasonCode; key: string },
): RetentionLogEntry {
  const runs = [...perRun.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const skipped = outcomes.filter((o) => o.outcome === 'skipped');
  return {
    at,
    profile: plan.profile,
    policy: plan.policy,
    status,
    snapshots: { keep: plan.totals.keep, compress: plan.totals.compress, summarize: plan.totals.summarize, delete: plan.totals.delete },
    operations: { planned: plan.operations.length, done: totals.done, skipped: totals.skipped },
    files_deleted: totals.filesDeleted,
    bytes_freed: totals.bytesFreed,
    summaries_written: runs.filter(([, s]) => s.summarized).map(([id]) => id),
    runs_deleted: runs.filter(([, s]) => s.runDeleted).map(([id]) => id),
    runs: runs.slice(0, 200).map(([id, s]) => ({ run_id: id, deleted: s.deleted, compressed: s.compressed, summarized: s.summarized, run_deleted: s.runDeleted })),
    runs_truncated: Math.max(0, runs.length - 200),
    skipped: skipped.slice(0, 100).map((o) => ({ key: o.operation.key, reason_code: o.reasonCode ?? 'checkpoint_schema_invalid' })),
    ...(error ? { error } : {}),
  };
}

async function loadFinalSnapshot<P>(storage: StorageAdapter, profile: Profile<P>, sources: readonly { key: string; id: string }[]): Promise<Snapshot<P>> {
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

async function writeSummary<P>(
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
    const startedAt =
      previous && Date.parse(previous.started_at) < Date.parse(op.startedAt) ? previous.started_at : op.startedAt;
    const summary = buildRetentionSummary(
      { runId: op.runId, latest, startedAt, checkpointCount: Math.max(op.checkpointCount, previous?.checkpoint_count ?? 0), ...(previous ? { previous } : {}) },
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

async function compress<P>(storage: StorageAdapter, profile: Profile<P>, op: Extract<RetentionOperation, { type: 'compress' }>): Promise<'done' | 'already-done'> {
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
      if (isCompleteGzip(existing.bytes, profile.maxSnapshotBytes)) throw new Skip('checkpoint_conflict', `${to} exists with different content`);
      await storage.put(to, packed, { ifVersion: existing.version });
    }
  }
  const back = await storage.get(to);
  if (!back || !holds(back.bytes, plain.bytes)) {
    throw new CheckpointError('checkpoint_atomic_write_failed', `${to} does not read back as the gzip of ${op.key}`, { details: { key: to } });
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

async function updateIndex(
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
      if (remove.has(e.checkpoint_id) && !blocked.has(e.file_path) && !blocked.has(snapshotRef(op.runId, e.checkpoint_id))) removePaths.add(e.file_path);
      else if (rename.has(e.checkpoint_id) && !e.file_path.endsWith(GZIP_SUFFIX) && !pendingCompression(op.runId, e.checkpoint_id)) renamePaths.set(e.file_path, e.file_path + GZIP_SUFFIX);
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

function snapshotRef(runId: string, snapshotId: string): string {
  return `${runId}\u0000${snapshotId}`;
}
