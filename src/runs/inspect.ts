import { CheckpointError, isCheckpointError, toCheckpointError } from '../contract/errors.js';
import { identityIssue } from '../snapshot-io/refusal.js';
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
    const stored = await storage.get(entry.key);
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
    const base = { key: batch.key, size: batch.size, compressed: false, batched: true };
    try {
      const stored = await storage.get(batch.key);
      if (stored) {
        for (const [position, member] of (await decodeBatchFile(storage, profile, batch.key, stored.bytes)).entries()) {
          const key = `${batch.key}#${position}`;
          const issue = member.ok ? identityIssue(member.snapshot, run.runId, key, batch.info) : undefined;
          if (member.ok && issue === undefined) rows.push({ ...base, snapshot: member.snapshot });
          else
            rows.push({
              ...base,
              key,
              error: member.ok ? new CheckpointError('checkpoint_schema_invalid', `${key}: ${issue}`) : member.error,
            });
        }
      }
    } catch (err) {
      rows.push({ ...base, error: asError(err, batch.key) });
    }
    onFile?.();
  }
  const seq = (r: SnapshotRow): number => r.snapshot?.sequence ?? r.sequenceHint ?? Number.MAX_SAFE_INTEGER;
  return rows.sort((a, b) => seq(a) - seq(b) || (a.key < b.key ? -1 : 1));
}
