import { parseJson } from '../codec/canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { gunzip, gzip, isGzip } from '../codec/gzip.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import type { EncodedSnapshot } from '../contract/document-format.js';
import type { KeyInfo } from '../contract/layout.js';
import { assertOptionsArgument, assertStorageArgument, assertStringArgument } from '../contract/arguments.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { Profile } from '../contract/profile.js';
import type { ForeignSealer } from './foreign-json.js';
import type { RunImporter, RunImportFile, RunImportOptions, RunImportReport } from './import-run.js';
import { decodeStoredSnapshotTolerant } from '../snapshot-io/read-snapshot.js';
import { collectRunFiles, type ClassifiedEntry } from '../snapshot-io/run-files.js';

const sameBytes = (a: Uint8Array | undefined, b: Uint8Array): boolean =>
  a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * The whole-run import of a JSON profile: every snapshot file of the run (latest, history)
 * is read as the read path reads it; one another tool wrote (or, in a single-artifact format,
 * edited) is sealed as it is by `seal`, every member kept, in place or into `target`; sealed
 * files are kept (or copied unchanged). The run's other files (index, batches, parts, summary)
 * are copied unchanged into a target. Files that are invalid even under the spec are skipped
 * with their reason and left alone. Idempotent: sealing is deterministic, and a file already
 * sealed (or already identical in the target) is not written again.
 */
export function jsonRunImporter<P>(profile: Profile<P>, seal: ForeignSealer<P>): RunImporter {
  return documentRunImporter(profile, async (plain, key) => (await seal(parseJson(utf8Decode(plain, key), key) as JsonObject, key)).bytes);
}

/**
 * Seals the plain (gunzipped) bytes of one snapshot file another tool wrote, as it is: the
 * bytes to store in its place. Deterministic, so an import run twice writes nothing the second time.
 */
export type StoredSealer = (plain: Uint8Array, key: string) => Promise<Uint8Array>;

/** {@link jsonRunImporter} for any document format: `seal` works on the file's plain bytes (a Markdown profile's, …). */
export function documentRunImporter<P>(profile: Profile<P>, seal: StoredSealer): RunImporter {
  return async (source: StorageAdapter, runId: string, options: RunImportOptions = {}): Promise<RunImportReport> => {
    assertStorageArgument(source, `${profile.name} run import`);
    assertStringArgument(runId, `${profile.name} run import`, 'runId');
    profile.assertRunId(runId);
    if (options.target !== undefined) assertStorageArgument(options.target, `${profile.name} run import`, 'target');
    const apply = options.apply === true;
    const target = options.target;
    const run = (await collectRunFiles(source, profile as Profile<unknown>, runId)).runs.get(runId);
    if (!run) throw new CheckpointError('checkpoint_not_found', `run ${runId} has no files`, { details: { runId } });

    const files: RunImportFile[] = [];
    const snapshotFiles = [...(run.latest ? [run.latest] : []), ...run.history];
    for (const entry of snapshotFiles) files.push(await importSnapshotFile(source, profile, seal, entry, target, apply));
    if (target) {
      const others = [...(run.index ? [run.index] : []), ...run.batches, ...run.parts, ...(run.summary ? [run.summary] : [])];
      for (const entry of others) {
        const stored = await source.get(entry.key);
        if (!stored) continue;
        files.push(await writeTo(target, entry.key, stored.bytes, [], apply));
      }
    }
    return {
      runId,
      profile: profile.name,
      applied: apply,
      files,
      changes: files.filter((f) => f.action === 'seal' || f.action === 'copy').length,
    };
  };
}

async function importSnapshotFile<P>(
  source: StorageAdapter,
  profile: Profile<P>,
  seal: StoredSealer,
  entry: ClassifiedEntry,
  target: StorageAdapter | undefined,
  apply: boolean,
): Promise<RunImportFile> {
  const stored = await source.get(entry.key);
  if (!stored)
    return {
      key: entry.key,
      action: 'skip',
      warnings: [],
      reasonCode: 'checkpoint_not_found',
      message: `${entry.key} disappeared while importing`,
    };
  let warnings;
  try {
    ({ warnings } = await decodeStoredSnapshotTolerant(source, profile, entry.key, stored.bytes));
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    return { key: entry.key, action: 'skip', warnings: [], reasonCode: err.reasonCode, message: err.message };
  }
  if (warnings.length === 0)
    return target ? writeTo(target, entry.key, stored.bytes, warnings, apply) : { key: entry.key, action: 'keep', warnings };
  const compressed = isGzip(stored.bytes);
  const plain = compressed ? gunzip(stored.bytes, entry.key, { maxBytes: profile.maxSnapshotBytes }) : stored.bytes;
  const sealed = await seal(plain, entry.key);
  const bytes = compressed ? gzip(sealed) : sealed;
  if (target) return writeTo(target, entry.key, bytes, warnings, apply);
  // In place: replace exactly what was read, so a concurrent rewrite by the other tool is not lost.
  if (apply) await source.put(entry.key, bytes, { ifVersion: stored.version });
  return { key: entry.key, action: 'seal', targetKey: entry.key, warnings };
}

async function writeTo(
  target: StorageAdapter,
  key: string,
  bytes: Uint8Array,
  warnings: RunImportFile['warnings'],
  apply: boolean,
): Promise<RunImportFile> {
  if (sameBytes((await target.get(key))?.bytes, bytes)) return { key, action: 'keep', targetKey: key, warnings };
  if (apply) await target.put(key, bytes);
  return { key, action: 'copy', targetKey: key, warnings };
}

/** Seals one document's bytes as it is, as the file `key` of a layout (`locate` names its run). */
export type DocumentSealer<P> = (
  bytes: Uint8Array,
  key: string,
  locate: (where: string) => KeyInfo | undefined,
) => Promise<EncodedSnapshot<P>>;

/**
 * The single-document import of a text format (the Markdown profiles' `import…Document`):
 * `input` (text or bytes) sealed as it is as run `runId`'s latest file of `profile`.
 */
export async function importAsLatest<P>(
  fn: string,
  input: unknown,
  options: { readonly runId: string; readonly profile?: Profile<P> },
  fallback: Profile<P>,
  seal: DocumentSealer<P>,
): Promise<EncodedSnapshot<P>> {
  assertOptionsArgument(options, fn);
  assertStringArgument(options.runId, fn, 'runId');
  const profile = options.profile ?? fallback;
  if (typeof input !== 'string' && !(input instanceof Uint8Array))
    throw new CheckpointError('checkpoint_schema_invalid', `${fn} needs the document as a string or bytes`);
  return seal(typeof input === 'string' ? utf8Encode(input) : input, profile.layout.latestKey(options.runId), (where) =>
    profile.layout.classify(where),
  );
}
