import type { z } from 'zod';
import { parseJson } from '../../codec/canonical-json.js';
import { type JsonObject, type JsonValue } from '../../contract/json.js';
import { documentChecksum, INTEGRITY_FIELD, verifyDocument } from '../../codec/json-document.js';
import { type EncodedSnapshot } from '../../contract/document-format.js';
import { gunzip, isGzip } from '../../codec/gzip.js';
import { utf8Decode } from '../../codec/utf8.js';
import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import { newSnapshotId } from '../../contract/ids.js';
import type { SnapshotDraft } from '../../contract/snapshot.js';
import { sha256Hex } from '../../codec/sha256.js';
import type { Profile } from '../../contract/profile.js';
import { snapshotLifecycleDocumentSchema, type LifecycleSource, type SnapshotLifecyclePayload } from './schema.js';
import { snapshotLifecycle, type SnapshotLifecycleProfile } from './profile.js';
import { lifecycleSealedBySavepoint, sealLifecycleForeign } from './foreign.js';
import type { RunImporter } from '../import-run.js';
import { jsonRunImporter } from '../json-run-import.js';
import { assertOptionsArgument, assertProfileArgument, assertStorageArgument } from '../../contract/arguments.js';
import type { StorageAdapter } from '../../contract/storage.js';
import { collectRunFiles } from '../../snapshot-io/run-files.js';
import { decodeStoredSnapshotTolerant } from '../../snapshot-io/read-snapshot.js';
import { numberByRunOrder, type RunOrderEntry } from '../../snapshot-io/run-order.js';

/** Options common to the `import…Document` helpers of the JSON profiles. */
export interface JsonProfileImportOptions {
  /**
   * Replace an `integrity` block that does not verify (a document edited by hand, or
   * sealed by another tool) instead of refusing it with `checkpoint_integrity_mismatch`.
   * Only set this for content you trust: it vouches for whatever the document says.
   * @default false
   */
  readonly reseal?: boolean;
  /** Where the document came from, for error messages. @default 'imported document' */
  readonly where?: string;
}

/** Parses `input` (an object, JSON text, or JSON / gzipped JSON bytes) into a JSON object. */
export function toJsonObject(input: unknown, where: string): JsonObject {
  let value: unknown = input;
  if (value instanceof Uint8Array) value = utf8Decode(isGzip(value) ? gunzip(value, where) : value, where);
  if (typeof value === 'string') value = parseJson(value, where);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new CheckpointError('checkpoint_schema_invalid', `${where} is not a JSON object`, { details: { where } });
  }
  return value as JsonObject;
}

/** `schema.parse` with zod's issues turned into `checkpoint_schema_invalid` (paths only, never values). */
export function parseDocumentWith<T>(schema: z.ZodType<T>, value: unknown, where: string): T {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  const paths = parsed.error.issues.map((i) => (i.path.length === 0 ? '/' : `/${i.path.map(String).join('/')}`));
  const shown = parsed.error.issues.slice(0, 5).map((i, n) => `${paths[n]} ${i.message}`);
  throw new CheckpointError('checkpoint_schema_invalid', `${where} does not match its schema: ${shown.join('; ')}`, {
    details: { paths: paths.slice(0, 20) },
  });
}

/**
 * Shared import path of the JSON profiles: checks an existing integrity block (unless
 * `reseal`), maps the spec-shaped rest (and the integrity block, for profiles that keep
 * bookkeeping there) to a draft with `toDraft`, and seals it through
 * the profile's own document format, so the result is exactly what the profile writes.
 */
export async function importSpecDocument<P>(
  profile: Profile<P>,
  input: unknown,
  options: JsonProfileImportOptions,
  toDraft: (document: JsonObject, where: string, integrity: JsonValue | undefined) => Promise<SnapshotDraft<P>> | SnapshotDraft<P>,
): Promise<EncodedSnapshot<P>> {
  assertProfileArgument(profile, 'import');
  const where = options.where ?? 'imported document';
  const document = toJsonObject(input, where);
  if (Object.hasOwn(document, INTEGRITY_FIELD) && !options.reseal) await verifyDocument(document, where);
  const { [INTEGRITY_FIELD]: integrity, ...rest } = document;
  return profile.document.encode(await toDraft(rest, where, integrity));
}

/**
 * The liberal half of the `import…Document` helpers: when the strict import refuses `input`
 * for its schema (vendor fields, another offset, another id format, values the spec leaves
 * open) or for another tool's seal, the document is sealed as it is by `seal` (validated
 * against the spec's own schema, every member kept). A document savepoint sealed must still
 * verify (unless `reseal`): an edit after sealing stays `checkpoint_integrity_mismatch`.
 */
export async function withForeignFallback<P>(
  input: unknown,
  options: JsonProfileImportOptions,
  strict: () => Promise<EncodedSnapshot<P>>,
  sealedBySavepoint: (document: JsonObject) => boolean,
  seal: (document: JsonObject, where: string) => Promise<EncodedSnapshot<P>>,
): Promise<EncodedSnapshot<P>> {
  try {
    return await strict();
  } catch (err) {
    if (!isCheckpointError(err, 'checkpoint_schema_invalid') && !isCheckpointError(err, 'checkpoint_integrity_mismatch')) throw err;
    const where = options.where ?? 'imported document';
    let document: JsonObject;
    try {
      document = toJsonObject(input, where);
    } catch {
      throw err;
    }
    // A document with savepoint's additions but no seal at all is one savepoint may import (as the strict path does).
    if (Object.hasOwn(document, INTEGRITY_FIELD) && sealedBySavepoint(document) && !options.reseal) {
      const integrity = document[INTEGRITY_FIELD] as { checksum?: unknown } | undefined;
      if (integrity?.checksum !== (await documentChecksum(document)))
        throw isCheckpointError(err, 'checkpoint_integrity_mismatch')
          ? err
          : new CheckpointError('checkpoint_integrity_mismatch', `${where}: stored checksum does not match the content`, {
              details: { where },
            });
    }
    try {
      return await seal(document, where);
    } catch (foreign) {
      throw isCheckpointError(foreign, 'checkpoint_schema_invalid') ? foreign : err;
    }
  }
}

/**
 * A deterministic `cp_<timestamp>_<suffix>` id for an imported document that has none:
 * the timestamp is the document's own time, the suffix comes from the SHA-256 of its
 * canonical content, so importing the same document twice gives the same id.
 */
export async function importedSnapshotId(createdAt: string, contentCanonical: string): Promise<string> {
  const base = newSnapshotId(Date.parse(createdAt));
  const digest = await sha256Hex(contentCanonical);
  return `${base.slice(0, base.lastIndexOf('_'))}_${digest.slice(0, 10)}`;
}

/** Options of {@link importSnapshotLifecycleDocument}. */
export interface ImportSnapshotLifecycleOptions extends JsonProfileImportOptions {
  /** The profile to seal with (its `command_outcomes` bound applies). @default snapshotLifecycle */
  readonly profile?: SnapshotLifecycleProfile;
  /** `sequence` of a document that has none (the spec has no such field). @default 1 */
  readonly sequence?: number;
}

/**
 * Imports a snapshot-lifecycle.md document written by hand or by another tool: the
 * spec's fields, with or without savepoint's `sequence`, `source_details` and
 * `integrity`. Returns the sealed bytes savepoint would have written and the snapshot.
 * An existing `integrity` block must verify (`checkpoint_integrity_mismatch`
 * otherwise, unless `reseal`); a missing one is computed. The spec fields come out
 * unchanged, so stripping savepoint's additions from the result gives back the input.
 *
 * @example
 * ```ts
 * const { bytes, snapshot } = await importSnapshotLifecycleDocument(JSON.parse(text), { sequence: 7 });
 * await storage.put(snapshotLifecycle.layout.latestKey(snapshot.runId), bytes);
 * ```
 */
export async function importSnapshotLifecycleDocument(
  input: unknown,
  options: ImportSnapshotLifecycleOptions = {},
): Promise<EncodedSnapshot<SnapshotLifecyclePayload>> {
  assertOptionsArgument(options, 'importSnapshotLifecycleDocument');
  const profile = options.profile ?? snapshotLifecycle;
  return withForeignFallback(
    input,
    options,
    () => importStrict(profile, input, options),
    lifecycleSealedBySavepoint,
    (d, where) => sealLifecycleForeign(d, where, options.sequence),
  );
}

function importStrict(
  profile: SnapshotLifecycleProfile,
  input: unknown,
  options: ImportSnapshotLifecycleOptions,
): Promise<EncodedSnapshot<SnapshotLifecyclePayload>> {
  const sealed = snapshotLifecycleDocumentSchema(Number.MAX_SAFE_INTEGER);
  const specShape = sealed.omit({ integrity: true }).partial({ sequence: true, source_details: true });
  return importSpecDocument(profile, input, options, (rest, where) => {
    const d = parseDocumentWith(specShape, rest, where);
    return {
      id: d.snapshot_id,
      runId: d.run_id,
      sequence: d.sequence ?? options.sequence ?? 1,
      createdAt: d.created_at,
      source: d.source as LifecycleSource,
      sourceDetails: d.source_details ?? [],
      ...(d.priority ? { priority: d.priority } : {}),
      status: d.status,
      payload: { step_state: d.step_state, context_digest: d.context_digest, command_outcomes: d.command_outcomes },
    };
  });
}

/**
 * The numbers resume gives the run's snapshots that carry none (`numberByRunOrder`), by id:
 * what an import seals into them, so the sealed run reads as it did before.
 */
async function runOrderNumbers(source: StorageAdapter, runId: string): Promise<Map<string, number>> {
  const run = (await collectRunFiles(source, snapshotLifecycle as Profile<unknown>, runId)).runs.get(runId);
  const entries: RunOrderEntry[] = [];
  for (const entry of [...(run?.latest ? [run.latest] : []), ...(run?.history ?? [])]) {
    const stored = await source.get(entry.key);
    if (!stored) continue;
    try {
      const { snapshot, warnings } = await decodeStoredSnapshotTolerant(source, snapshotLifecycle, entry.key, stored.bytes);
      const derived = warnings.includes('checkpoint_sequence_derived');
      entries.push({ id: snapshot.id, createdAt: snapshot.createdAt, ...(derived ? {} : { sequence: snapshot.sequence }) });
    } catch (err) {
      if (!isCheckpointError(err)) throw err; // a refused file is reported by the import itself
    }
  }
  return new Map([...numberByRunOrder(entries)].map(([id, n]) => [id, n.sequence]));
}

/**
 * Imports a whole snapshotLifecycle run another tool wrote (see `RunImporter`): each
 * `latest.json` / `history/<snapshot_id>.json` without savepoint's seal is sealed as it is
 * (vendor members kept; a document without `sequence` gets the number resume gives it, from
 * the run's order of time); a sealed history file
 * whose bytes changed is skipped with `checkpoint_integrity_mismatch`, never resealed.
 * Dry run unless `apply`; into `target` instead of in place when given; idempotent.
 *
 * @example
 * ```ts
 * const report = await importSnapshotLifecycleRun(fsStorage({ dir: '.' }), 'sess-1', { apply: true });
 * console.log(report.changes, 'files sealed');
 * ```
 */
export const importSnapshotLifecycleRun: RunImporter = async (source, runId, options) => {
  assertStorageArgument(source, `${snapshotLifecycle.name} run import`);
  if (typeof runId === 'string') snapshotLifecycle.assertRunId(runId);
  const numbers = typeof runId === 'string' ? await runOrderNumbers(source, runId) : new Map<string, number>();
  const seal = (d: JsonObject, where: string) =>
    sealLifecycleForeign(d, where, typeof d.snapshot_id === 'string' ? numbers.get(d.snapshot_id) : undefined);
  return jsonRunImporter(snapshotLifecycle, seal)(source, runId, options);
};
