import { CheckpointError } from '../model/errors.js';
import { assertRunId } from '../model/ids.js';
import { assertKey } from '../storage/keys.js';
import { assertOptionsArgument } from '../model/arguments.js';

/** What a stored key is, as far as a profile's layout is concerned. */
export type KeyKind = 'latest' | 'history' | 'index' | 'lock' | 'summary' | 'part' | 'batch' | 'preserved_runs' | 'retention_log';

/** A key a layout recognizes. Keys a layout does not recognize are never touched by savepoint. */
export interface KeyInfo {
  readonly kind: KeyKind;
  /** The run the key belongs to (absent for store-wide files such as `preserved_runs.json`). */
  readonly runId?: string;
  /** Snapshot sequence, where the key name carries it (`cp_003_…`). */
  readonly sequence?: number;
  /** Snapshot id, where the key name carries it (`history/<snapshot_id>.json`). */
  readonly snapshotId?: string;
  /** Trigger, where the key name carries it (`cp_003_gate_decision.json`). */
  readonly source?: string;
  /** The key ends in `.gz` (a compressed history entry). */
  readonly compressed: boolean;
}

/** Identifies one history entry. */
export interface HistoryRef {
  readonly runId: string;
  readonly id: string;
  readonly sequence: number;
  readonly source: string;
}

/** Suffix of compressed history entries (snapshot-lifecycle.md: optional gzip of history). */
export const GZIP_SUFFIX = '.gz';

/**
 * Where a profile keeps things. Keys are relative to the storage adapter's root.
 * `classify` is the inverse of the key functions: everything savepoint lists, prunes or
 * resumes from goes through it, so nothing outside the layout is ever touched.
 */
export interface ProfileLayout {
  /** A list() prefix that covers every file of every run. */
  readonly runsPrefix: string;
  /** The active document of a run (`latest.json`); never compressed. */
  latestKey(runId: string): string;
  /** The immutable history entry of a snapshot; absent when the profile keeps no history. */
  historyKey?(ref: HistoryRef): string;
  /** The run's index document, where the profile keeps one. */
  indexKey?(runId: string): string;
  /** The key a writer uses to claim a run. */
  lockKey(runId: string): string;
  /** Where an archived run's summary goes (retention's summarize action). */
  summaryKey?(runId: string): string;
  /** A part file of an oversized snapshot. */
  partKey?(ref: HistoryRef, part: string): string;
  /** A batch file holding several snapshots (phased-workflow-github.md batching). */
  batchKey?(runId: string, firstSequence: number, lastSequence: number): string;
  /** Store-wide list of runs kept indefinitely. */
  readonly preservedRunsKey?: string;
  /** Store-wide log of retention actions. */
  readonly retentionLogKey?: string;
  /** What `key` is, or `undefined` if it is not part of this layout. */
  classify(key: string): KeyInfo | undefined;
}

/** How a {@link standardLayout} names history entries inside a run's folder. */
export interface HistoryNaming {
  /** Sub-folder of the run folder for history entries (`'history'`), or `''` for the run folder itself. */
  readonly dir: string;
  /** File name of an entry, e.g. `${ref.id}.json`. Must be a single segment. */
  name(ref: HistoryRef): string;
  /** Inverse of `name` (without any `.gz`); `undefined` when `fileName` is not a history entry. */
  parse(fileName: string): { sequence?: number; snapshotId?: string; source?: string } | undefined;
}

/** Options of {@link standardLayout}. */
export interface StandardLayoutOptions {
  /**
   * Folder holding one sub-folder per run.
   * @default 'checkpoints'
   */
  readonly root?: string;
  /** Name of the active document in a run folder. @default 'latest.json' */
  readonly latestName?: string;
  /** History naming; omit for a profile without history. */
  readonly history?: HistoryNaming;
  /** Name of the run index, or `false` for none. @default 'index.json' */
  readonly indexName?: string | false;
  /** Name of an archived run's summary. @default 'summary.json' */
  readonly summaryName?: string;
  /** Name of the writer's lock file. @default '.savepoint-lock.json' */
  readonly lockName?: string;
  /** Name of the store-wide preserved-runs list, in `root`. @default 'preserved_runs.json' */
  readonly preservedRunsName?: string;
  /** Name of the store-wide retention log, in `root`. @default 'retention_log.json' */
  readonly retentionLogName?: string;
}

/** History entries named by snapshot id, in a `history/` sub-folder (snapshot-lifecycle.md). */
export const historyBySnapshotId = (extension = '.json'): HistoryNaming => ({
  dir: 'history',
  name: (ref) => `${ref.id}${extension}`,
  parse: (fileName) => (fileName.endsWith(extension) ? { snapshotId: fileName.slice(0, -extension.length) } : undefined),
});

/**
 * The `<root>/<run_id>/…` layout most profiles share: one folder per run with the
 * active document, an optional index, history entries and their `.gz` forms, part and
 * batch files, and two store-wide files in `root`.
 */
export function standardLayout(options: StandardLayoutOptions = {}): ProfileLayout {
  assertOptionsArgument(options, 'standardLayout');
  const root = options.root ?? 'checkpoints';
  assertKey(root);
  const latestName = options.latestName ?? 'latest.json';
  const indexName = options.indexName === undefined ? 'index.json' : options.indexName;
  const summaryName = options.summaryName ?? 'summary.json';
  const lockName = options.lockName ?? '.savepoint-lock.json';
  const preservedRunsKey = `${root}/${options.preservedRunsName ?? 'preserved_runs.json'}`;
  const retentionLogKey = `${root}/${options.retentionLogName ?? 'retention_log.json'}`;
  const history = options.history;
  const historyPrefix = history && history.dir !== '' ? `${history.dir}/` : '';
  const runDir = (runId: string): string => {
    assertRunId(runId);
    return `${root}/${runId}`;
  };
  const fixedNames = new Map<string, KeyKind>([
    [latestName, 'latest'],
    [summaryName, 'summary'],
    [lockName, 'lock'],
  ]);
  if (indexName) fixedNames.set(indexName, 'index');

  const layout: ProfileLayout = {
    runsPrefix: `${root}/`,
    latestKey: (runId) => `${runDir(runId)}/${latestName}`,
    lockKey: (runId) => `${runDir(runId)}/${lockName}`,
    summaryKey: (runId) => `${runDir(runId)}/${summaryName}`,
    partKey: (ref, part) => `${runDir(ref.runId)}/parts/${ref.sequence}/${part}`,
    batchKey: (runId, first, last) => `${runDir(runId)}/batch_${first}_${last}.json`,
    preservedRunsKey,
    retentionLogKey,
    classify(key) {
      if (key === preservedRunsKey) return { kind: 'preserved_runs', compressed: false };
      if (key === retentionLogKey) return { kind: 'retention_log', compressed: false };
      if (!key.startsWith(`${root}/`)) return undefined;
      const rest = key.slice(root.length + 1).split('/');
      const runId = rest[0];
      if (runId === undefined || rest.length < 2) return undefined;
      try {
        assertRunId(runId);
      } catch {
        return undefined;
      }
      const name = rest.slice(1).join('/');
      const fixed = fixedNames.get(name);
      if (fixed) return { kind: fixed, runId, compressed: false };
      if (rest[1] === 'parts' && rest.length === 4 && /^\d+$/.test(rest[2]!)) {
        return { kind: 'part', runId, sequence: Number(rest[2]), compressed: false };
      }
      const batch = /^batch_(\d+)_(\d+)\.json$/.exec(name);
      if (batch) return { kind: 'batch', runId, sequence: Number(batch[1]), compressed: false };
      if (history && name.startsWith(historyPrefix)) {
        let file = name.slice(historyPrefix.length);
        if (file.includes('/')) return undefined;
        const compressed = file.endsWith(GZIP_SUFFIX);
        if (compressed) file = file.slice(0, -GZIP_SUFFIX.length);
        const parsed = history.parse(file);
        if (parsed) {
          return {
            kind: 'history',
            runId,
            compressed,
            ...(parsed.sequence !== undefined ? { sequence: parsed.sequence } : {}),
            ...(parsed.snapshotId !== undefined ? { snapshotId: parsed.snapshotId } : {}),
            ...(parsed.source !== undefined ? { source: parsed.source } : {}),
          };
        }
      }
      return undefined;
    },
  };
  if (history) {
    layout.historyKey = (ref) => {
      const file = history.name(ref);
      if (file.includes('/')) throw new CheckpointError('checkpoint_key_invalid', 'history file names must be a single path segment');
      const key = `${runDir(ref.runId)}/${historyPrefix}${file}`;
      assertKey(key);
      return key;
    };
  }
  if (indexName) layout.indexKey = (runId) => `${runDir(runId)}/${indexName}`;
  return layout;
}
