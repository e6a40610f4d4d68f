import type { StorageAdapter, StorageEntry } from '../contract/storage.js';
import { assertProfileArgument, assertStorageArgument } from '../contract/arguments.js';
import type { Profile } from '../contract/profile.js';
import type { KeyInfo } from '../contract/layout.js';

/** A stored key with what the layout says it is. */
export interface ClassifiedEntry extends StorageEntry {
  readonly info: KeyInfo;
}

/** Every file of one run, grouped by kind. */
export interface RunFiles {
  readonly runId: string;
  latest?: ClassifiedEntry;
  index?: ClassifiedEntry;
  lock?: ClassifiedEntry;
  summary?: ClassifiedEntry;
  readonly history: ClassifiedEntry[];
  readonly batches: ClassifiedEntry[];
  readonly parts: ClassifiedEntry[];
  /** Total bytes of all the run's files. */
  bytes: number;
}

/** The result of {@link collectRunFiles}. */
export interface StoreFiles {
  /** Runs in ascending run-id order. */
  readonly runs: Map<string, RunFiles>;
  /** Store-wide files (`preserved_runs.json`, `retention_log.json`). */
  readonly storeWide: ClassifiedEntry[];
}

/**
 * Lists every key under the profile's layout (one `list()` call) and groups it by run.
 * Keys the layout does not recognize are left out: savepoint never touches them.
 * With `runId`, only that run's files are listed.
 */
export async function collectRunFiles(storage: StorageAdapter, profile: Profile<unknown>, runId?: string): Promise<StoreFiles> {
  assertStorageArgument(storage, 'collectRunFiles');
  assertProfileArgument(profile, 'collectRunFiles');
  if (runId !== undefined) profile.assertRunId(runId);
  const { layout } = profile;
  const runs = new Map<string, RunFiles>();
  const storeWide: ClassifiedEntry[] = [];
  // A run's files all start with the folder of its latest document in standard layouts, but custom
  // layouts (plan executor) may not share a folder; listing runsPrefix and filtering is always right.
  for await (const entry of storage.list(layout.runsPrefix)) {
    const info = layout.classify(entry.key);
    if (!info) continue;
    const classified: ClassifiedEntry = { ...entry, info };
    if (info.runId === undefined) {
      if (runId === undefined) storeWide.push(classified);
      continue;
    }
    if (runId !== undefined && info.runId !== runId) continue;
    let run = runs.get(info.runId);
    if (!run) {
      run = { runId: info.runId, history: [], batches: [], parts: [], bytes: 0 };
      runs.set(info.runId, run);
    }
    run.bytes += entry.size;
    switch (info.kind) {
      case 'latest':
        run.latest = classified;
        break;
      case 'index':
        run.index = classified;
        break;
      case 'lock':
        run.lock = classified;
        break;
      case 'summary':
        run.summary = classified;
        break;
      case 'history':
        run.history.push(classified);
        break;
      case 'batch':
        run.batches.push(classified);
        break;
      case 'part':
        run.parts.push(classified);
        break;
      default:
        break;
    }
  }
  // Preserved-runs and retention-log files may sit outside runsPrefix in custom layouts.
  if (runId === undefined) {
    for (const key of [layout.preservedRunsKey, layout.retentionLogKey]) {
      if (key && !key.startsWith(layout.runsPrefix) && !storeWide.some((e) => e.key === key)) {
        for await (const entry of storage.list(key)) {
          const info = layout.classify(entry.key);
          if (entry.key === key && info) storeWide.push({ ...entry, info });
        }
      }
    }
  }
  return { runs: new Map([...runs.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), storeWide };
}
