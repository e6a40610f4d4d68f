import type { z } from 'zod';
import { canonicalJson, parseJson } from './canonical-json.js';
import { utf8Decode, utf8Encode, utf8EncodeInto } from './utf8.js';
import type { RunIndexEntrySchema, RunIndexSchema } from './run-index-schema.js';
import { assertValid, documentValidator } from './document-validator.js';
import { type JsonSchema } from '../contract/json.js';
import * as generated from './generated/run-index.js';
import { assertArrayArgument, assertObjectArgument } from '../contract/arguments.js';

/** The TypeScript type of {@link RunIndexEntrySchema}: one entry of a run index. */
export type RunIndexEntry = z.infer<typeof RunIndexEntrySchema>;

/** The TypeScript type of {@link RunIndexSchema}: a run's `index.json`, entries in ascending sequence. */
export type RunIndex = z.infer<typeof RunIndexSchema>;

/** JSON Schema of `index.json` (generated at build time from {@link RunIndexSchema}). */
export const runIndexJsonSchema: JsonSchema = generated.jsonSchema;

const validator = documentValidator(generated.validate);

/** Parses and validates index bytes; `checkpoint_schema_invalid` when they are not a valid index. */
export function decodeRunIndex(bytes: Uint8Array, where = 'index.json'): RunIndex {
  const doc = parseJson(utf8Decode(bytes, where), where);
  assertValid(validator(doc), where);
  return doc as RunIndex;
}

/**
 * {@link decodeRunIndex} for a writer that keeps the index and rewrites it: its entries frozen
 * (the schema allows strings and numbers only, so a frozen entry cannot change), so the writer's
 * encoder serializes each once and reuses its bytes at every later rewrite (unfrozen, it would
 * serialize every entry again, with the generic serializer, at each rewrite).
 */
export function decodeRunIndexToKeep(bytes: Uint8Array, where = 'index.json'): RunIndex {
  const doc = decodeRunIndex(bytes, where);
  for (const e of doc.checkpoints) Object.freeze(e);
  return doc;
}

/**
 * Canonical JSON of frozen entries, computed once each. A frozen entry whose members are
 * all strings and numbers cannot change, so its text cannot go stale; the writer freezes
 * the entries it keeps, which makes rewriting an index cost a join and one encoding, not a
 * serialization of every entry.
 */
const entryTexts = new WeakMap<RunIndexEntry, string>();

function textOfEntry(entry: RunIndexEntry): string {
  if (!Object.isFrozen(entry)) return canonicalJson(entry);
  let text = entryTexts.get(entry);
  if (text === undefined) {
    text = entryJson(entry) ?? canonicalJson(entry);
    entryTexts.set(entry, text);
  }
  return text;
}

const ENTRY_KEYS: ReadonlySet<string> = new Set(['checkpoint_id', 'file_path', 'sequence', 'status', 'timestamp', 'trigger']);

/**
 * Canonical JSON of an entry of the usual shape (the six members, strings and a finite
 * sequence, inserted in any order), written directly: the writer makes one per checkpoint,
 * and the generic serializer's replacer and key sort cost more than the entry. Undefined for
 * any other shape (the generic serializer decides).
 */
function entryJson(e: RunIndexEntry): string | undefined {
  const keys = Object.keys(e);
  if (keys.length !== (e.status === undefined ? 5 : 6)) return undefined;
  for (let i = 0; i < keys.length; i++) if (!ENTRY_KEYS.has(keys[i]!)) return undefined;
  const { checkpoint_id, file_path, sequence, status, timestamp, trigger } = e;
  if (typeof checkpoint_id !== 'string' || typeof file_path !== 'string' || typeof timestamp !== 'string' || typeof trigger !== 'string')
    return undefined;
  if (typeof sequence !== 'number' || !Number.isFinite(sequence) || (status !== undefined && typeof status !== 'string')) return undefined;
  const s = JSON.stringify;
  return `{"checkpoint_id":${s(checkpoint_id)},"file_path":${s(file_path)},"sequence":${s(sequence)},${status === undefined ? '' : `"status":${s(status)},`}"timestamp":${s(timestamp)},"trigger":${s(trigger)}}`;
}

/** Canonical JSON bytes of an index. */
export function encodeRunIndex(index: RunIndex): Uint8Array {
  assertRunIndexArgument(index, 'encodeRunIndex');
  const { checkpoints, ...rest } = index;
  if (Object.keys(rest).length !== 3 || !('run_id' in rest && 'checkpoint_count' in rest && 'last_updated' in rest))
    return utf8Encode(canonicalJson(index));
  // Members in canonical order: checkpoint_count, checkpoints, last_updated, run_id.
  const texts = new Array<string>(checkpoints.length);
  for (let i = 0; i < checkpoints.length; i++) texts[i] = textOfEntry(checkpoints[i]!);
  return utf8Encode(
    `{"checkpoint_count":${canonicalJson(index.checkpoint_count)},"checkpoints":[${texts.join(',')}],"last_updated":${canonicalJson(index.last_updated)},"run_id":${canonicalJson(index.run_id)}}`,
  );
}

/** Encodes run indexes one after the other, reusing the bytes of the entries the previous one shared. */
export interface RunIndexEncoder {
  /** Exactly {@link encodeRunIndex}'s bytes. */
  encode(index: RunIndex): Uint8Array;
}

/**
 * An encoder for the successive indexes of one run (the writer's). A run's index changes by
 * dropping its oldest entries (retention) and appending new ones, so the encoder keeps the
 * UTF-8 of the entries it last wrote in a private buffer, shifts out the dropped ones,
 * encodes only the new ones, and copies the rest: a rewrite costs one copy of the index
 * instead of joining and encoding every entry again. Only frozen entries are reused (the
 * writer freezes the entries it makes); anything else is encoded from scratch.
 */
export function createRunIndexEncoder(): RunIndexEncoder {
  let entries: readonly RunIndexEntry[] = [];
  /** Byte offset in `body` where each of `entries` ends; entries are separated by one comma. */
  let ends: number[] = [];
  let body = new Uint8Array(0);
  let bodyLength = 0;
  /** False once an entry that is not frozen was encoded: its bytes could go stale, so the next list is encoded from scratch. */
  let reusable = true;

  /** Index of `entries` the new list starts at, when it is entries[k..] followed by new ones; else -1. */
  const sharedFrom = (next: readonly RunIndexEntry[]): number => {
    if (!reusable || next.length === 0 || entries.length === 0) return -1;
    const k = entries.indexOf(next[0]!);
    if (k < 0 || next.length < entries.length - k) return -1;
    for (let i = k; i < entries.length; i++) if (next[i - k] !== entries[i]) return -1;
    return k;
  };

  const append = (entry: RunIndexEntry): void => {
    const frozen = Object.isFrozen(entry);
    if (!frozen) reusable = false;
    // Each entry is appended once and its bytes kept here: its text is not cached (a WeakMap
    // entry per checkpoint cost more than the text, and GC time besides).
    const text = frozen ? (entryJson(entry) ?? canonicalJson(entry)) : canonicalJson(entry);
    const need = bodyLength + 1 + text.length * 3;
    if (need > body.length) {
      const grown = new Uint8Array(Math.max(need, body.length * 2, 4096));
      grown.set(body.subarray(0, bodyLength));
      body = grown;
    }
    if (bodyLength > 0) body[bodyLength++] = 0x2c; // ','
    bodyLength += utf8EncodeInto(text, body.subarray(bodyLength)).written;
    ends.push(bodyLength);
  };

  return {
    encode(index) {
      assertRunIndexArgument(index, 'encodeRunIndex');
      const { checkpoints } = index;
      if (
        Object.keys(index).length !== 4 ||
        typeof index.checkpoint_count !== 'number' ||
        typeof index.last_updated !== 'string' ||
        typeof index.run_id !== 'string'
      ) {
        return encodeRunIndex(index);
      }
      const k = sharedFrom(checkpoints);
      if (k < 0) {
        bodyLength = 0;
        ends = [];
        reusable = true;
      } else if (k > 0) {
        const start = ends[k - 1]! + 1;
        body.copyWithin(0, start, bodyLength);
        bodyLength -= start;
        ends = ends.slice(k);
        for (let i = 0; i < ends.length; i++) ends[i]! -= start;
      }
      for (let i = k < 0 ? 0 : entries.length - k; i < checkpoints.length; i++) append(checkpoints[i]!);
      entries = checkpoints.slice();
      const head = `{"checkpoint_count":${canonicalJson(index.checkpoint_count)},"checkpoints":[`;
      const tail = `],"last_updated":${canonicalJson(index.last_updated)},"run_id":${canonicalJson(index.run_id)}}`;
      const out = new Uint8Array(head.length + bodyLength + tail.length);
      utf8EncodeInto(head, out); // digits: ASCII
      out.set(body.subarray(0, bodyLength), head.length);
      if (utf8EncodeInto(tail, out.subarray(head.length + bodyLength)).read === tail.length) return out;
      return encodeRunIndex(index); // a non-ASCII run id or time: not worth a second path
    },
  };
}

/** The writer may hold back up to 1/16 of the run's length in new entries. */
const DEFER_DIVISOR = 16;

/**
 * How many new entries the writer may hold back before it rewrites an index that lists
 * `indexed` entries. A complete `index.json` cannot be updated on a put-whole-value store
 * without rewriting all of it, so the writer rewrites it at a geometric cadence instead:
 * every max(1, n/16) checkpoints, which costs O(1) bytes per checkpoint amortized and keeps
 * the file spec-exact and at most 1/16 of the run behind (readers reconcile it with a
 * listing; the writer brings it up to date on a terminal status, a prune and
 * `flush()`/`close()`). Indexes under 32 entries are rewritten with every checkpoint.
 *
 * `written`, for a run the writer prunes as it goes (automatic per-run retention), is the
 * number of checkpoints the run has written: its index stays at the policy's size while the
 * run grows, and every prune rewrites it anyway, so counting the run rather than the index
 * lets a long run's index be rewritten by its prunes alone (every `slack` checkpoints)
 * instead of every third checkpoint — still at most 1/16 of the run behind, and never more
 * than the prune slack.
 */
export function indexDeferral(indexed: number, written = indexed): number {
  return Math.max(1, Math.floor(Math.max(indexed, written) / DEFER_DIVISOR));
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
  assertRunIndexArgument(index, 'mergeRunIndex');
  assertArrayArgument(entries, 'mergeRunIndex', 'entries');
  // The writer's usual case: new sequences after the last one, in order — an append.
  let last = index.checkpoints.at(-1)?.sequence ?? 0;
  let appends = index.checkpoints.every((e, i) => i === 0 || index.checkpoints[i - 1]!.sequence < e.sequence);
  for (const e of entries) {
    if (!appends || e.sequence <= last) {
      appends = false;
      break;
    }
    last = e.sequence;
  }
  if (appends) {
    const checkpoints = [...index.checkpoints, ...entries];
    return { run_id: index.run_id, checkpoint_count: checkpoints.length, checkpoints, last_updated: now };
  }
  const bySequence = new Map<number, RunIndexEntry>();
  for (const e of index.checkpoints) bySequence.set(e.sequence, e);
  for (const e of entries) bySequence.set(e.sequence, e);
  const checkpoints = [...bySequence.values()].sort((a, b) => a.sequence - b.sequence);
  return { run_id: index.run_id, checkpoint_count: checkpoints.length, checkpoints, last_updated: now };
}

/** Removes the entries whose `file_path` is in `paths` (retention), or rewrites them through `rename`. */
export function pruneRunIndex(index: RunIndex, remove: ReadonlySet<string>, now: string, rename?: ReadonlyMap<string, string>): RunIndex {
  assertRunIndexArgument(index, 'pruneRunIndex');
  if (!(remove instanceof Set)) assertObjectArgument(remove, 'pruneRunIndex', 'remove');
  const checkpoints = index.checkpoints
    .filter((e) => !remove.has(e.file_path))
    .map((e) => {
      const to = rename?.get(e.file_path);
      return to ? { ...e, file_path: to } : e;
    });
  return { run_id: index.run_id, checkpoint_count: checkpoints.length, checkpoints, last_updated: now };
}

/** Shape check of a run index passed to a public helper; its entries are checked by the schema where decoded. */
function assertRunIndexArgument(index: unknown, fn: string): void {
  assertObjectArgument(index, fn, 'index');
  assertArrayArgument((index as { checkpoints?: unknown }).checkpoints, fn, 'index.checkpoints');
}
