import type { ForeignReadWarning } from '../contract/document-format.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import type { StorageAdapter } from '../contract/storage.js';

/** Options of a profile's whole-run import ({@link RunImporter}). */
export interface RunImportOptions {
  /** Write the changes. @default false: a dry run that only reports what would change */
  readonly apply?: boolean;
  /**
   * Copy the run, sealed, into this store instead of sealing it in place. The source is then
   * only read. @default undefined (seal in place)
   */
  readonly target?: StorageAdapter;
}

/**
 * What the import does with one file: `seal` (rewritten in place with savepoint's seal),
 * `copy` (written, sealed, into the target store), `keep` (already sealed by savepoint and
 * unchanged, or already present identically in the target: nothing to do), `skip` (cannot
 * be imported: `reasonCode` says why, and the file is left alone).
 */
export type RunImportAction = 'seal' | 'copy' | 'keep' | 'skip';

/** One file of a whole-run import. */
export interface RunImportFile {
  /** The file's key in the source store. */
  readonly key: string;
  readonly action: RunImportAction;
  /** Where it is (or would be) written, for `seal` and `copy`. */
  readonly targetKey?: string;
  /** Why the file was not a strict read (see `FOREIGN_READ_WARNINGS`). */
  readonly warnings: readonly ForeignReadWarning[];
  /** For `skip`: the stable reason. */
  readonly reasonCode?: ReasonCode;
  /** One sentence for people; never payload contents. */
  readonly message?: string;
}

/** The result of a whole-run import. Running the same import again reports `changes: 0`. */
export interface RunImportReport {
  readonly runId: string;
  /** The profile's name (`snapshotLifecycle`, …). */
  readonly profile: string;
  /** False for a dry run: nothing was written. */
  readonly applied: boolean;
  readonly files: readonly RunImportFile[];
  /** Files written (or, in a dry run, that would be written): `seal` and `copy` rows, plus run-level files such as an index. */
  readonly changes: number;
}

/**
 * A profile's whole-run import: reads every file of run `runId` in `source` (a run another
 * tool wrote, or half-wrote), and seals it in place or copies it into `options.target`.
 * Idempotent: a second run with the same arguments changes nothing. Each profile subpath
 * exports its own (`importSnapshotLifecycleRun`, …); `savepoint import` dispatches on the
 * profile through the registry in `src/cli/importers.ts`.
 */
export type RunImporter = (source: StorageAdapter, runId: string, options?: RunImportOptions) => Promise<RunImportReport>;
