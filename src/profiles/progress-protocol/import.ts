import type { EncodedSnapshot } from '../../codec/json-document.js';
import { utf8Encode } from '../../codec/utf8.js';
import { assertOptionsArgument, assertStringArgument } from '../../model/arguments.js';
import { CheckpointError } from '../../model/errors.js';
import type { Profile } from '../define-profile.js';
import type { RunImporter } from '../import-run.js';
import { documentRunImporter } from '../json-run-import.js';
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
export async function importProgressProtocolDocument(input: string | Uint8Array, options: ImportProgressProtocolOptions): Promise<EncodedSnapshot<ProgressDocument>> {
  assertOptionsArgument(options, 'importProgressProtocolDocument');
  assertStringArgument(options.runId, 'importProgressProtocolDocument', 'runId');
  const profile = options.profile ?? progressProtocol;
  if (typeof input !== 'string' && !(input instanceof Uint8Array)) throw new CheckpointError('checkpoint_schema_invalid', 'importProgressProtocolDocument needs the document as a string or bytes');
  return sealProgressAsIs(typeof input === 'string' ? utf8Encode(input) : input, profile.layout.latestKey(options.runId), (where) => profile.layout.classify(where), options);
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
  documentRunImporter(progressProtocol, async (plain, key) => (await sealProgressAsIs(plain, key, (where) => progressProtocol.layout.classify(where))).bytes)(source, runId, options);
