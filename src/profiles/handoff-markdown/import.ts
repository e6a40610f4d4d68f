import type { EncodedSnapshot } from '../../contract/document-format.js';
import type { Profile } from '../../contract/profile.js';
import type { RunImporter } from '../import-run.js';
import { documentRunImporter, importAsLatest } from '../json-run-import.js';
import { sealHandoffAsIs, type HandoffSealOptions } from './foreign.js';
import type { HandoffPayload } from './model.js';
import { handoffMarkdown } from './profile.js';

/** Options of {@link importHandoffMarkdownDocument}. */
export interface ImportHandoffMarkdownOptions extends HandoffSealOptions {
  /** The run the hand-off belongs to (its folder in the store). */
  readonly runId: string;
  /** The profile whose layout and seal to use. @default handoffMarkdown */
  readonly profile?: Profile<HandoffPayload>;
}

/**
 * Imports one hand-off another tool (or a person) wrote — the spec's document, any
 * offset, vendor keys, extra sections — as the run's `latest.md`: sealed as it is (every
 * line kept, savepoint's seal line added; see `sealHandoffAsIs`). Store the bytes under
 * `profile.layout.latestKey(runId)`. A document savepoint sealed and someone edited since
 * keeps its bookkeeping and is sealed again.
 *
 * @example
 * ```ts
 * const { bytes } = await importHandoffMarkdownDocument(await readFile('chk-003.md'), { runId: 'chromatic-quest' });
 * await storage.put(handoffMarkdown.layout.latestKey('chromatic-quest'), bytes);
 * ```
 */
export async function importHandoffMarkdownDocument(
  input: string | Uint8Array,
  options: ImportHandoffMarkdownOptions,
): Promise<EncodedSnapshot<HandoffPayload>> {
  return importAsLatest('importHandoffMarkdownDocument', input, options, handoffMarkdown, (bytes, key, locate) =>
    sealHandoffAsIs(bytes, key, locate, options),
  );
}

/**
 * Imports a run of hand-offs another tool wrote (see `RunImporter`): every `chk-NNN.md` and
 * `latest.md` without savepoint's seal — and a `latest.md` edited since savepoint sealed it —
 * is sealed as it is, in place or into `target`. Dry run unless `apply`; idempotent.
 *
 * @example
 * ```ts
 * const report = await importHandoffMarkdownRun(fsStorage({ dir: '.handoffs' }), 'chromatic-quest', { apply: true });
 * ```
 */
export const importHandoffMarkdownRun: RunImporter = (source, runId, options) =>
  documentRunImporter(
    handoffMarkdown,
    async (plain, key) => (await sealHandoffAsIs(plain, key, (where) => handoffMarkdown.layout.classify(where))).bytes,
  )(source, runId, options);
