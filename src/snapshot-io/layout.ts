import { CheckpointError } from '../contract/errors.js';
import { assertRunId } from '../contract/ids.js';
import { assertKey } from '../storage/keys.js';
import { assertOptionsArgument } from '../contract/arguments.js';
import { probeHistoryKeyFrom } from './layout-probe.js';
import { type KeyKind, type KeyInfo, type HistoryRef, type ProfileLayout, GZIP_SUFFIX } from '../contract/layout.js';

/** How a {@link standardLayout} names history entries inside a run's folder. */
export interface HistoryNaming {
  /** Sub-folder of the run folder for history entries (`'history'`), or `''` for the run folder itself. */
  readonly dir: string;
  /** File name of an entry, e.g. `${ref.id}.json`. Must be a single segment. */
  name(ref: HistoryRef): string;
  /** Inverse of `name` (without any `.gz`); `undefined` when `fileName` is not a history entry. */
  parse(fileName: string): { sequence?: number; snapshotId?: string; source?: string } | undefined;
  /**
   * What `name` uses: the sequence (and trigger) only, or the snapshot id; the layout's
   * {@link ProfileLayout.historyKeyFrom}. @default worked out once by {@link standardLayout}
   */
  readonly keyFrom?: 'sequence' | 'id';
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
  keyFrom: 'id',
  name: (ref) => `${ref.id}${extension}`,
  parse: (fileName) => (fileName.endsWith(extension) ? { snapshotId: fileName.slice(0, -extension.length) } : undefined),
});

/** The keys and names a {@link standardLayout} resolves once from its options. */
interface StandardNames {
  readonly root: string;
  readonly latestName: string;
  readonly indexName: string | false;
  readonly summaryName: string;
  readonly lockName: string;
  readonly preservedRunsKey: string;
  readonly retentionLogKey: string;
  readonly history: HistoryNaming | undefined;
  /** `history/` (the naming's folder and a slash), or `''` for entries in the run folder. */
  readonly historyPrefix: string;
  /** The run folder's files with fixed names, by name. */
  readonly fixedNames: ReadonlyMap<string, KeyKind>;
}

function standardNames(options: StandardLayoutOptions, root: string): StandardNames {
  const latestName = options.latestName ?? 'latest.json';
  const indexName = options.indexName === undefined ? 'index.json' : options.indexName;
  const summaryName = options.summaryName ?? 'summary.json';
  const lockName = options.lockName ?? '.savepoint-lock.json';
  const history = options.history;
  const fixedNames = new Map<string, KeyKind>([
    [latestName, 'latest'],
    [summaryName, 'summary'],
    [lockName, 'lock'],
  ]);
  if (indexName) fixedNames.set(indexName, 'index');
  return {
    root,
    latestName,
    indexName,
    summaryName,
    lockName,
    preservedRunsKey: `${root}/${options.preservedRunsName ?? 'preserved_runs.json'}`,
    retentionLogKey: `${root}/${options.retentionLogName ?? 'retention_log.json'}`,
    history,
    historyPrefix: history && history.dir !== '' ? `${history.dir}/` : '',
    fixedNames,
  };
}

/** What a file `name` (the key's part below the run folder) of run `runId` is, when it is a history entry. */
function classifyHistoryName(names: StandardNames, runId: string, name: string): KeyInfo | undefined {
  const { history, historyPrefix } = names;
  if (!history || !name.startsWith(historyPrefix)) return undefined;
  let file = name.slice(historyPrefix.length);
  if (file.includes('/')) return undefined;
  const compressed = file.endsWith(GZIP_SUFFIX);
  if (compressed) file = file.slice(0, -GZIP_SUFFIX.length);
  const parsed = history.parse(file);
  if (!parsed) return undefined;
  return {
    kind: 'history',
    runId,
    compressed,
    ...(parsed.sequence !== undefined ? { sequence: parsed.sequence } : {}),
    ...(parsed.snapshotId !== undefined ? { snapshotId: parsed.snapshotId } : {}),
    ...(parsed.source !== undefined ? { source: parsed.source } : {}),
  };
}

/** The inverse of a {@link standardLayout}'s key functions. */
function classifyStandardKey(names: StandardNames, key: string): KeyInfo | undefined {
  const { root } = names;
  if (key === names.preservedRunsKey) return { kind: 'preserved_runs', compressed: false };
  if (key === names.retentionLogKey) return { kind: 'retention_log', compressed: false };
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
  const fixed = names.fixedNames.get(name);
  if (fixed) return { kind: fixed, runId, compressed: false };
  if (rest[1] === 'parts' && rest.length === 4 && /^\d+$/.test(rest[2]!)) {
    return { kind: 'part', runId, sequence: Number(rest[2]), compressed: false };
  }
  const batch = /^batch_(\d+)_(\d+)\.json$/.exec(name);
  if (batch) return { kind: 'batch', runId, sequence: Number(batch[1]), compressed: false };
  return classifyHistoryName(names, runId, name);
}

/**
 * The `<root>/<run_id>/…` layout most profiles share: one folder per run with the
 * active document, an optional index, history entries and their `.gz` forms, part and
 * batch files, and two store-wide files in `root`.
 */
export function standardLayout(options: StandardLayoutOptions = {}): ProfileLayout {
  assertOptionsArgument(options, 'standardLayout');
  const root = options.root ?? 'checkpoints';
  assertKey(root);
  const names = standardNames(options, root);
  const { history, historyPrefix, indexName } = names;
  const runDir = (runId: string): string => {
    assertRunId(runId);
    return `${root}/${runId}`;
  };
  const historyKey = history
    ? (ref: HistoryRef): string => {
        const file = history.name(ref);
        if (file.includes('/')) throw new CheckpointError('checkpoint_key_invalid', 'history file names must be a single path segment');
        const key = `${runDir(ref.runId)}/${historyPrefix}${file}`;
        assertKey(key);
        return key;
      }
    : undefined;

  const layout: ProfileLayout = {
    runsPrefix: `${root}/`,
    latestKey: (runId) => `${runDir(runId)}/${names.latestName}`,
    lockKey: (runId) => `${runDir(runId)}/${names.lockName}`,
    summaryKey: (runId) => `${runDir(runId)}/${names.summaryName}`,
    partKey: (ref, part) => `${runDir(ref.runId)}/parts/${ref.sequence}/${part}`,
    batchKey: (runId, first, last) => `${runDir(runId)}/batch_${first}_${last}.json`,
    preservedRunsKey: names.preservedRunsKey,
    retentionLogKey: names.retentionLogKey,
    classify: (key) => classifyStandardKey(names, key),
    ...(history ? { historyKeyFrom: history.keyFrom ?? probeHistoryKeyFrom(historyKey) } : {}),
  };
  if (historyKey) layout.historyKey = historyKey;
  if (indexName) layout.indexKey = (runId) => `${runDir(runId)}/${indexName}`;
  return layout;
}
