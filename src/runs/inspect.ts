import { CheckpointError, isCheckpointError, toCheckpointError } from '../contract/errors.js';
import { documentReadLimit, getBounded } from '../snapshot-io/bounded-read.js';
import { batchRange, identityIssue } from '../snapshot-io/refusal.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import type { Profile } from '../contract/profile.js';
import { decodeStoredSnapshotTolerant } from '../snapshot-io/read-snapshot.js';
import type { ForeignReadWarning } from '../contract/document-format.js';
import type { ClassifiedEntry, RunFiles } from '../snapshot-io/run-files.js';
import type { StorageAdapter } from '../contract/storage.js';
import { mapLimit } from '../storage/map-limit.js';

/** One stored snapshot as the CLI shows it: decoded, or the reason it could not be. */
export interface SnapshotRow {
  readonly key: string;
  readonly size: number;
  readonly compressed: boolean;
  /** True for a member of a `batch_{first}_{last}.json` file. */
  readonly batched: boolean;
  /** The sequence the key name carries (`cp_003_…`), which orders even a corrupt entry. */
  readonly sequenceHint?: number;
  readonly snapshot?: Snapshot<unknown>;
  /** Why the snapshot was read tolerantly (another tool wrote it, …); absent for a strict read. */
  readonly readWarnings?: readonly ForeignReadWarning[];
  readonly error?: CheckpointError;
}

const asError = (err: unknown, key: string): CheckpointError =>
  isCheckpointError(err) ? err : toCheckpointError(err, 'checkpoint_storage_unavailable', `reading ${key} failed`, { key });

/** Reads and validates one file that holds a single snapshot (latest or a history entry). */
export async function loadEntry(storage: StorageAdapter, profile: Profile<unknown>, entry: ClassifiedEntry): Promise<SnapshotRow> {
  const base = {
    key: entry.key,
    size: entry.size,
    compressed: entry.info.compressed,
    batched: false,
    ...(entry.info.sequence !== undefined ? { sequenceHint: entry.info.sequence } : {}),
  };
  try {
    const stored = await getBounded(storage, entry.key, documentReadLimit(profile));
    if (!stored) return { ...base, error: asError(new Error('deleted while listing'), entry.key) };
    const { snapshot, warnings } = await decodeStoredSnapshotTolerant(storage, profile, entry.key, stored.bytes);
    // A document that does not belong where it lies (a copied run folder) is refused by resume: say so here too.
    const issue = entry.info.runId === undefined ? undefined : identityIssue(snapshot, entry.info.runId, entry.key, entry.info);
    if (issue !== undefined) return { ...base, error: new CheckpointError('checkpoint_schema_invalid', `${entry.key}: ${issue}`) };
    return { ...base, snapshot, ...(warnings.length > 0 ? { readWarnings: warnings } : {}) };
  } catch (err) {
    return { ...base, error: asError(err, entry.key) };
  }
}

/**
 * Every snapshot of a run — history entries and batch members, or the latest document
 * alone for profiles that keep no history — in ascending sequence, corrupt ones included
 * with their error.
 */
export async function loadRunSnapshots(
  storage: StorageAdapter,
  profile: Profile<unknown>,
  run: RunFiles,
  onFile?: () => void,
): Promise<SnapshotRow[]> {
  const singles = run.history.length > 0 || run.batches.length > 0 || !run.latest ? run.history : [run.latest];
  const rows = (
    await mapLimit(singles, 8, async (e) => {
      const row = await loadEntry(storage, profile, e);
      onFile?.();
      return [row];
    })
  ).flat();
  for (const batch of run.batches) {
    rows.push(...(await loadBatch(storage, profile, run.runId, batch)));
    onFile?.();
  }
  return rows.sort(byRowSequence);
}

/** Options of {@link streamRunSnapshots}. */
export interface StreamRunSnapshotsOptions {
  /** Where a file sits in the run's order when its name carries no sequence (from the run's index, say). */
  readonly orderOf?: (entry: ClassifiedEntry) => number | undefined;
  /** Files read at once; rows are sorted by sequence within each window. @default 16 */
  readonly window?: number;
  /** Called once per file read. */
  readonly onFile?: () => void;
}

/** One batch file's rows: each member decoded (or its error), checked against the run it lies in. */
async function loadBatch(
  storage: StorageAdapter,
  profile: Profile<unknown>,
  runId: string,
  batch: ClassifiedEntry,
): Promise<SnapshotRow[]> {
  const base = { key: batch.key, size: batch.size, compressed: false, batched: true };
  const rows: SnapshotRow[] = [];
  try {
    const stored = await getBounded(storage, batch.key, documentReadLimit(profile));
    if (!stored) return rows;
    for (const [position, member] of (await decodeBatchFile(storage, profile, batch.key, stored.bytes)).entries()) {
      const key = `${batch.key}#${position}`;
      const issue = member.ok ? identityIssue(member.snapshot, runId, key, batch.info) : undefined;
      if (member.ok && issue === undefined) rows.push({ ...base, snapshot: member.snapshot });
      else
        rows.push({ ...base, key, error: member.ok ? new CheckpointError('checkpoint_schema_invalid', `${key}: ${issue}`) : member.error });
    }
  } catch (err) {
    rows.push({ ...base, error: asError(err, batch.key) });
  }
  return rows;
}

const rowSequence = (r: SnapshotRow): number => r.snapshot?.sequence ?? r.sequenceHint ?? Number.MAX_SAFE_INTEGER;
const byRowSequence = (a: SnapshotRow, b: SnapshotRow): number => rowSequence(a) - rowSequence(b) || (a.key < b.key ? -1 : 1);

/**
 * {@link loadRunSnapshots} as a stream: the run's files in the order their names (or
 * `orderOf`) give, read a window at a time, so the first rows come after one window's reads,
 * not the whole run's (`savepoint ls RUN | head -3` on a long run). Rows are in ascending
 * sequence when names or `orderOf` order the files; otherwise in key order within windows.
 */
export async function* streamRunSnapshots(
  storage: StorageAdapter,
  profile: Profile<unknown>,
  run: RunFiles,
  options: StreamRunSnapshotsOptions = {},
): AsyncGenerator<SnapshotRow[]> {
  const singles = run.history.length > 0 || run.batches.length > 0 || !run.latest ? run.history : [run.latest];
  const place = (e: ClassifiedEntry): number =>
    (e.info.kind === 'batch' ? batchRange(e.key)?.first : e.info.sequence) ?? options.orderOf?.(e) ?? Number.MAX_SAFE_INTEGER;
  const files = [...singles, ...run.batches]
    .map((entry) => ({ entry, at: place(entry) }))
    .sort((a, b) => a.at - b.at || (a.entry.key < b.entry.key ? -1 : 1));
  const window = Math.max(1, options.window ?? 16);
  for (let i = 0; i < files.length; i += window) {
    const rows = (
      await mapLimit(files.slice(i, i + window), 8, async ({ entry }) => {
        const found =
          entry.info.kind === 'batch' ? await loadBatch(storage, profile, run.runId, entry) : [await loadEntry(storage, profile, entry)];
        options.onFile?.();
        return found;
      })
    ).flat();
    yield rows.sort(byRowSequence);
  }
}
