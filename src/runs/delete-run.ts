import type { Profile } from '../contract/profile.js';
import type { KeyKind } from '../contract/layout.js';
import { collectRunFiles } from '../snapshot-io/run-files.js';
import type { StorageAdapter } from '../contract/storage.js';
import { assertStorageProfileOptions } from '../contract/arguments.js';

/** Options of {@link deleteRun}. */
export interface DeleteRunOptions<P = unknown> {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  readonly runId: string;
}

/** What {@link deleteRun} removed. */
export interface DeleteRunResult {
  /** Keys deleted, in the order they were deleted. */
  readonly deleted: readonly string[];
}

// History first and the lock last: a crash part-way leaves the newest state and the claim on the run.
const ORDER: readonly KeyKind[] = ['history', 'batch', 'part', 'index', 'summary', 'latest', 'lock'];
const CHUNK = 100;

/**
 * Deletes every file of one run that the profile's layout recognizes (history, batches,
 * parts, index, summary, `latest`, lock); files the layout does not know are never
 * touched. Adapters with atomic batches delete in batches of 100 keys. Deleting a run that
 * does not exist deletes nothing.
 *
 * @example
 * ```ts
 * await deleteRun({ storage, profile: defaultProfile, runId: 'run-1' });
 * ```
 */
export async function deleteRun<P>(options: DeleteRunOptions<P>): Promise<DeleteRunResult> {
  assertStorageProfileOptions(options, 'deleteRun');
  const { storage, profile, runId } = options;
  profile.assertRunId(runId);
  const run = (await collectRunFiles(storage, profile as Profile<unknown>, runId)).runs.get(runId);
  if (!run) return { deleted: [] };
  const keys = [...run.history, ...run.batches, ...run.parts, run.index, run.summary, run.latest, run.lock]
    .filter((e) => e !== undefined)
    .sort((a, b) => ORDER.indexOf(a.info.kind) - ORDER.indexOf(b.info.kind))
    .map((e) => e.key);
  if (storage.capabilities.atomicBatch && storage.batch) {
    for (let i = 0; i < keys.length; i += CHUNK)
      await storage.batch(keys.slice(i, i + CHUNK).map((key) => ({ type: 'delete' as const, key })));
  } else {
    for (const key of keys) await storage.delete(key);
  }
  return { deleted: keys };
}
