import { z } from 'zod';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { Rfc3339Schema } from './snapshot.js';
import { assertValid, compileValidator, type DocumentValidator, type JsonSchema } from './validate.js';

/**
 * One entry of a run index: phased-workflow-github.md's `index_schema` item, plus
 * `status` (savepoint's addition, so retention and `findIncompleteRuns` need not open
 * every history file).
 */
export const RunIndexEntrySchema = z
  .object({
    sequence: z.number().int().min(1),
    checkpoint_id: z.string().min(1),
    trigger: z.string().min(1),
    timestamp: Rfc3339Schema,
    file_path: z.string().min(1),
    status: z.string().min(1).optional(),
  })
  .strict();
/** The TypeScript type of {@link RunIndexEntrySchema}. */
export type RunIndexEntry = z.infer<typeof RunIndexEntrySchema>;

/** A run's `index.json` (phased-workflow-github.md `index_schema`), entries in ascending sequence. */
export const RunIndexSchema = z
  .object({
    run_id: z.string().min(1),
    checkpoint_count: z.number().int().min(0),
    checkpoints: z.array(RunIndexEntrySchema),
    last_updated: Rfc3339Schema,
  })
  .strict();
/** The TypeScript type of {@link RunIndexSchema}. */
export type RunIndex = z.infer<typeof RunIndexSchema>;

/** JSON Schema of `index.json`. */
export const runIndexJsonSchema = z.toJSONSchema(RunIndexSchema, { io: 'output' }) as JsonSchema;

let validator: DocumentValidator | undefined;

/** Parses and validates index bytes; `checkpoint_schema_invalid` when they are not a valid index. */
export function decodeRunIndex(bytes: Uint8Array, where = 'index.json'): RunIndex {
  const doc = parseJson(utf8Decode(bytes, where), where);
  assertValid((validator ??= compileValidator(runIndexJsonSchema))(doc), where);
  return doc as RunIndex;
}

/** Canonical JSON bytes of an index. */
export function encodeRunIndex(index: RunIndex): Uint8Array {
  return utf8Encode(canonicalJson(index));
}

/** An empty index for `runId`. */
export function emptyRunIndex(runId: string, now: string): RunIndex {
  return { run_id: runId, checkpoint_count: 0, checkpoints: [], last_updated: now };
}

/**
 * Merges entries into an index: one entry per sequence (a later entry for the same
 * sequence replaces the earlier), sorted by sequence, `checkpoint_count` recomputed.
 * Merging is commutative over distinct sequences, which lets concurrent writers and
 * conflict retries combine indexes without losing entries.
 */
export function mergeRunIndex(index: RunIndex, entries: readonly RunIndexEntry[], now: string): RunIndex {
  const bySequence = new Map<number, RunIndexEntry>();
  for (const e of index.checkpoints) bySequence.set(e.sequence, e);
  for (const e of entries) bySequence.set(e.sequence, e);
  const checkpoints = [...bySequence.values()].sort((a, b) => a.sequence - b.sequence);
  return { run_id: index.run_id, checkpoint_count: checkpoints.length, checkpoints, last_updated: now };
}

/** Removes the entries whose `file_path` is in `paths` (retention), or rewrites them through `rename`. */
export function pruneRunIndex(index: RunIndex, remove: ReadonlySet<string>, now: string, rename?: ReadonlyMap<string, string>): RunIndex {
  const checkpoints = index.checkpoints
    .filter((e) => !remove.has(e.file_path))
    .map((e) => {
      const to = rename?.get(e.file_path);
      return to ? { ...e, file_path: to } : e;
    });
  return { run_id: index.run_id, checkpoint_count: checkpoints.length, checkpoints, last_updated: now };
}
