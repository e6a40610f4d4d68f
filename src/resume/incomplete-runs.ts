import { isCheckpointError, type CheckpointError } from '../contract/errors.js';
import { getBounded, indexReadLimit } from '../snapshot-io/bounded-read.js';
import { assertStorageProfileOptions } from '../contract/arguments.js';
import type { ForeignReadWarning } from '../contract/document-format.js';
import { decodeRunIndex, type RunIndex } from '../codec/run-index.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';
import { mapLimit } from '../storage/map-limit.js';
import { indexConsistent, indexPathResolver, locateNewestSnapshot, stripGz, type NewerCheck } from './locate.js';

/** Options of {@link findIncompleteRuns}. */
export interface FindIncompleteRunsOptions<P> {
  /** Where the runs are. */
  readonly storage: StorageAdapter;
  /** The profile the runs were written with. */
  readonly profile: Profile<P>;
  /** Runs examined at once. @default 8 */
  readonly concurrency?: number;
  /** How a run without a usable index is checked for a snapshot newer than `latest`. @default 'auto' */
  readonly newerCheck?: NewerCheck;
  /**
   * Called for a run that has files but no valid snapshot (`checkpoint_no_valid_snapshot`);
   * such a run cannot be resumed and is not listed.
   * @default undefined (ignored)
   */
  readonly onUnreadable?: (runId: string, error: CheckpointError) => void;
}

/** A run whose newest snapshot does not have a terminal status. */
export interface IncompleteRun {
  readonly runId: string;
  /** The newest snapshot's status (not terminal). */
  readonly status: string;
  /** Its sequence. */
  readonly sequence: number;
  /** Its id. */
  readonly snapshotId: string;
  /** Its trigger. */
  readonly source: string;
  /** When it was created (RFC 3339). */
  readonly createdAt: string;
  /** Whether the status came from the run's index (no snapshot opened) or from the snapshot itself. */
  readonly from: 'index' | 'snapshot';
  /** Why the snapshot was read tolerantly (another tool wrote it, …); absent for a strict read. */
  readonly readWarnings?: readonly ForeignReadWarning[];
}

/** What one listing shows of a run: its history/batch keys (without `.gz`) and whether it has an index. */
interface ListedRun {
  readonly files: Set<string>;
  index: boolean;
}

/**
 * runId → its {@link ListedRun}, from one listing of the store; runs with none of latest,
 * index, history or batch (archived: a summary only) are not runs to resume.
 */
async function listRunFiles(storage: StorageAdapter, layout: Profile<unknown>['layout']): Promise<Map<string, ListedRun>> {
  const runs = new Map<string, ListedRun>();
  for await (const entry of storage.list(layout.runsPrefix)) {
    const info = layout.classify(entry.key);
    if (!info || info.runId === undefined) continue;
    if (info.kind !== 'history' && info.kind !== 'batch' && info.kind !== 'latest' && info.kind !== 'index') continue;
    let run = runs.get(info.runId);
    if (!run) {
      run = { files: new Set(), index: false };
      runs.set(info.runId, run);
    }
    if (info.kind === 'index') run.index = true;
    else if (info.kind !== 'latest') run.files.add(stripGz(entry.key));
  }
  return runs;
}

/** The run's index, or undefined when it is missing, too large to read or does not decode (the files decide then). */
async function readRunIndex(storage: StorageAdapter, profile: Profile<unknown>, key: string): Promise<RunIndex | undefined> {
  let stored;
  try {
    stored = await getBounded(storage, key, indexReadLimit(profile));
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_too_large')) return undefined;
    throw err;
  }
  if (!stored) return undefined;
  try {
    return decodeRunIndex(stored.bytes, key);
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
}

/**
 * Lists the runs whose newest snapshot is not terminal (`profile.isTerminal`), newest
 * first, for orchestrators that resume automatically on start
 * (phased-workflow-github.md: "Workflow detects incomplete run on startup").
 *
 * One listing of the store; then per run, the index's last entry when the index is
 * consistent, carries a `status`, and accounts for every history and batch file listed
 * (so no newer snapshot can exist) — one small read, no snapshot opened. Otherwise the
 * run's newest valid snapshot is located as `planResume` does; when the listing shows a
 * file the index does not account for (a crash between the history and index writes),
 * with a scan, so that file is read rather than a possibly older `latest` trusted.
 */
export async function findIncompleteRuns<P>(options: FindIncompleteRunsOptions<P>): Promise<IncompleteRun[]> {
  assertStorageProfileOptions(options, 'findIncompleteRuns');
  const { storage, profile } = options;
  const layout = profile.layout;
  const anyProfile = profile as Profile<unknown>;

  const runs = await listRunFiles(storage, layout);

  /** The run's state from its index alone; `uncovered` when the index misses a listed file (which may be newer). */
  const fromIndex = async (runId: string, files: ReadonlySet<string>): Promise<IncompleteRun | 'terminal' | 'uncovered' | undefined> => {
    if (!layout.indexKey || !layout.historyKey) return undefined;
    const key = layout.indexKey(runId);
    const index = await readRunIndex(storage, anyProfile, key);
    if (!index) return undefined;
    const resolve = indexPathResolver(anyProfile, runId);
    if (!indexConsistent(index, runId, anyProfile, resolve)) return undefined;
    const last = index.checkpoints[index.checkpoints.length - 1];
    if (!last || last.status === undefined) return undefined;
    const covered = new Set(index.checkpoints.map((e) => stripGz(resolve(e.file_path)!.key)));
    for (const file of files) if (!covered.has(file)) return 'uncovered';
    if (profile.isTerminal(last.status)) return 'terminal';
    return {
      runId,
      status: last.status,
      sequence: last.sequence,
      snapshotId: last.checkpoint_id,
      source: last.trigger,
      createdAt: last.timestamp,
      from: 'index',
    };
  };

  const found = await mapLimit(
    [...runs.entries()],
    Math.max(1, options.concurrency ?? 8),
    async ([runId, run]): Promise<IncompleteRun | undefined> => {
      let newerCheck = options.newerCheck;
      if (run.index) {
        const quick = await fromIndex(runId, run.files);
        if (quick === 'terminal') return undefined;
        // The listing already shows a file the index does not know: look at it rather than trust latest.
        if (quick === 'uncovered') newerCheck = 'scan';
        else if (quick) return quick;
      }
      try {
        const { snapshot, readWarnings } = await locateNewestSnapshot({ storage, profile, runId, ...(newerCheck ? { newerCheck } : {}) });
        if (profile.isTerminal(snapshot.status)) return undefined;
        const run = {
          runId,
          status: snapshot.status,
          sequence: snapshot.sequence,
          snapshotId: snapshot.id,
          source: snapshot.source,
          createdAt: snapshot.createdAt,
          from: 'snapshot' as const,
        };
        return readWarnings.length > 0 ? { ...run, readWarnings } : run;
      } catch (err) {
        if (isCheckpointError(err, 'checkpoint_no_valid_snapshot') || isCheckpointError(err, 'checkpoint_not_found')) {
          options.onUnreadable?.(runId, err);
          return undefined;
        }
        throw err;
      }
    },
  );

  return found
    .filter((r): r is IncompleteRun => r !== undefined)
    .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0));
}
