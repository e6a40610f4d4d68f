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
  /**
   * What {@link historyKey} names an entry by: `'sequence'` when the key depends on the
   * sequence and trigger only, so the key of sequence N+1 is known before that snapshot
   * exists (`cp_{NNN}_{trigger}.json`) and resuming can probe for it; `'id'` when it names
   * the snapshot id (`history/<snapshot_id>.json`). Absent for a layout without history.
   * `defineProfile` works it out once for a custom layout that has history and does not say.
   */
  readonly historyKeyFrom?: 'sequence' | 'id';
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
