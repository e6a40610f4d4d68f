import type { z } from 'zod';
import { assertArrayArgument, assertObjectArgument, assertStorageProfileOptions } from '../contract/arguments.js';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { type JsonObject, type JsonValue } from '../contract/json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { systemClock, toRfc3339, type Clock } from '../contract/clock.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import { assertValid, documentValidator } from '../codec/document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import * as accepted from '../codec/generated/preserved-runs.js';
import * as canonical from '../codec/generated/preserved-runs-canonical.js';
import type { PreservedRunEntrySchema, PreservedRunsSchema } from './preserved-runs-schema.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';

/*
 * phased-workflow-github.md `manual_override`: "Add run_id to /checkpoints/preserved_runs.json"
 * keeps a run indefinitely. The spec does not fix the file's shape, so savepoint reads what
 * a person would write by hand and writes one canonical form.
 */

/** One entry of `preserved_runs.json`. */
export type PreservedRunEntry = z.infer<typeof PreservedRunEntrySchema>;
/** The canonical `preserved_runs.json` document. */
export type PreservedRuns = z.infer<typeof PreservedRunsSchema>;

/** JSON Schema of every accepted form of `preserved_runs.json` (validate hand-written files with this one). */
export const preservedRunsJsonSchema: JsonSchema = accepted.jsonSchema;
/** JSON Schema of the canonical form savepoint writes. */
export const preservedRunsCanonicalJsonSchema: JsonSchema = canonical.jsonSchema;

const validator = documentValidator(accepted.validate);

/**
 * Parses `preserved_runs.json` in any accepted form into its canonical form (entries
 * deduplicated by run id, sorted). Throws `checkpoint_schema_invalid` when the bytes are
 * not one of the accepted forms.
 */
export function decodePreservedRuns(bytes: Uint8Array, where = 'preserved_runs.json'): PreservedRuns {
  const doc = parseJson(utf8Decode(bytes, where), where);
  assertValid(validator(doc), where);
  let list: readonly (string | PreservedRunEntry)[];
  let rest: JsonObject = {};
  if (Array.isArray(doc)) {
    list = doc as (string | PreservedRunEntry)[];
  } else {
    const obj = doc as JsonObject;
    const field = 'preserved_runs' in obj ? 'preserved_runs' : 'runs' in obj ? 'runs' : 'run_ids';
    list = obj[field] as (string | PreservedRunEntry)[];
    const { [field]: _list, ...others } = obj;
    rest = others;
  }
  const byRun = new Map<string, PreservedRunEntry>();
  for (const item of list) {
    const entry: PreservedRunEntry = typeof item === 'string' ? { run_id: item } : item;
    const seen = byRun.get(entry.run_id);
    byRun.set(entry.run_id, seen ? { ...entry, ...seen } : entry);
  }
  return { ...rest, preserved_runs: [...byRun.values()].sort((a, b) => compareIds(a.run_id, b.run_id)) };
}

/** Canonical JSON bytes of `preserved_runs.json` (entries sorted by run id). */
export function encodePreservedRuns(doc: PreservedRuns): Uint8Array {
  assertPreservedRunsArgument(doc, 'encodePreservedRuns');
  const sorted = [...doc.preserved_runs].sort((a, b) => compareIds(a.run_id, b.run_id));
  return utf8Encode(canonicalJson({ ...doc, preserved_runs: sorted as unknown as JsonValue }));
}

/** The run ids a `preserved_runs.json` lists. */
export function preservedRunIds(doc: PreservedRuns): string[] {
  assertPreservedRunsArgument(doc, 'preservedRunIds');
  return doc.preserved_runs.map((e) => e.run_id);
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Options of {@link preserveRun} and {@link unpreserveRun}. */
export interface PreserveRunOptions<P = unknown> {
  readonly storage: StorageAdapter;
  /** Its layout names the file (`layout.preservedRunsKey`). */
  readonly profile: Profile<P>;
  readonly runId: string;
  /** Why the run is kept; stored in the entry. @default none */
  readonly reason?: string;
  /** Stamps `preserved_at`. @default systemClock */
  readonly clock?: Clock;
}

function preservedKey<P>(profile: Profile<P>): string {
  const key = profile.layout.preservedRunsKey;
  if (!key)
    throw new CheckpointError('checkpoint_unsupported', `profile "${profile.name}" has no preserved_runs.json`, {
      details: { profile: profile.name },
    });
  return key;
}

async function update<P>(
  options: Omit<PreserveRunOptions<P>, 'reason'>,
  change: (doc: PreservedRuns) => PreservedRuns | undefined,
): Promise<PreservedRuns> {
  const { storage, profile } = options;
  const key = preservedKey(profile);
  for (let attempt = 0; ; attempt++) {
    const stored = await storage.get(key);
    const current: PreservedRuns = stored ? decodePreservedRuns(stored.bytes, key) : { preserved_runs: [] };
    const next = change(current);
    if (!next) return current;
    try {
      await storage.put(key, encodePreservedRuns(next), stored ? { ifVersion: stored.version } : { ifAbsent: true });
      return next;
    } catch (err) {
      // Another process edited the file between our read and write: read it again and redo the change.
      if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= 4) throw err;
    }
  }
}

/**
 * Adds a run to `preserved_runs.json` (creating the file in canonical form if needed) so
 * retention keeps every snapshot of it indefinitely. A run already listed keeps its entry.
 * A hand-written file in another accepted form is rewritten in the canonical form.
 */
export async function preserveRun<P>(options: PreserveRunOptions<P>): Promise<PreservedRuns> {
  assertStorageProfileOptions(options, 'preserveRun');
  options.profile.assertRunId(options.runId);
  const at = toRfc3339((options.clock ?? systemClock).now());
  return update(options, (doc) => {
    if (doc.preserved_runs.some((e) => e.run_id === options.runId)) return undefined;
    const entry: PreservedRunEntry = { run_id: options.runId, preserved_at: at, ...(options.reason ? { reason: options.reason } : {}) };
    return { ...doc, preserved_runs: [...doc.preserved_runs, entry] };
  });
}

/** Removes a run from `preserved_runs.json`; retention may then prune it like any other run. */
export async function unpreserveRun<P>(options: Omit<PreserveRunOptions<P>, 'reason'>): Promise<PreservedRuns> {
  assertStorageProfileOptions(options, 'unpreserveRun');
  // Any string: a hand-written file may list an id the profile would refuse, and removing it must work.
  if (typeof options.runId !== 'string') throw new CheckpointError('checkpoint_key_invalid', 'unpreserveRun: runId must be a string');
  return update(options, (doc) =>
    doc.preserved_runs.some((e) => e.run_id === options.runId)
      ? { ...doc, preserved_runs: doc.preserved_runs.filter((e) => e.run_id !== options.runId) }
      : undefined,
  );
}

function assertPreservedRunsArgument(doc: unknown, fn: string): void {
  assertObjectArgument(doc, fn, 'doc');
  assertArrayArgument((doc as { preserved_runs?: unknown }).preserved_runs, fn, 'doc.preserved_runs');
}
