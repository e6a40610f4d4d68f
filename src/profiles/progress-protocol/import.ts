import type { EncodedSnapshot } from '../../contract/document-format.js';
import type { Profile } from '../../contract/profile.js';
import type { RunImporter } from '../import-run.js';
import { documentRunImporter, importAsLatest } from '../json-run-import.js';
import { sealProgressAsIs, type ProgressSealOptions } from './foreign.js';
import type { ProgressDocument } from './model.js';
import { progressProtocol } from './profile.js';

/** Options of {@link importProgressProtocolDocument}. */
export interface ImportProgressProtocolOptions extends ProgressSealOptions {
  /** The run the progress file belongs to. */
  readonly runId: string;
  /** The profile whose layout to use. @default progressProtocol */
  readonly profile?: Profile<ProgressDocument>;
}

/**
 * Imports a `.ccc-progress.md` the protocol's own tool (or a person) wrote: sealed as it
 * is — every line kept, savepoint's metadata comment added under the title (see
 * `sealProgressAsIs`). Store the bytes under `profile.layout.latestKey(runId)`.
 *
 * @example
 * ```ts
 * const { bytes } = await importProgressProtocolDocument(await readFile('.ccc-progress.md'), { runId: 'CIA-123' });
 * await storage.put(progressProtocol.layout.latestKey('CIA-123'), bytes);
 * ```
 */
export async function importProgressProtocolDocument(
  input: string | Uint8Array,
  options: ImportProgressProtocolOptions,
): Promise<EncodedSnapshot<ProgressDocument>> {
  return importAsLatest('importProgressProtocolDocument', input, options, progressProtocol, (bytes, key, locate) =>
    sealProgressAsIs(bytes, key, locate, options),
  );
}

/**
 * Imports the run's progress file (see `RunImporter`): a `.ccc-progress.md` without
 * savepoint's comment, or rewritten by the protocol's tool since savepoint sealed it, is
 * sealed as it is, in place or into `target`. Dry run unless `apply`; idempotent.
 *
 * @example
 * ```ts
 * const report = await importProgressProtocolRun(fsStorage({ dir: 'progress-store' }), 'CIA-123', { apply: true });
 * ```
 */
export const importProgressProtocolRun: RunImporter = (source, runId, options) =>
  documentRunImporter(
    progressProtocol,
    async (plain, key) => (await sealProgressAsIs(plain, key, (where) => progressProtocol.layout.classify(where))).bytes,
  )(source, runId, options);
