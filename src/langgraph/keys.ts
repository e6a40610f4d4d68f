import { sha256Hex, toHex } from '../codec/sha256.js';
import { utf8Encode } from '../codec/utf8.js';
import { contentAddressingOf } from '../contract/content-address.js';
import { CheckpointError } from '../contract/errors.js';
import type { StorageAdapter } from '../contract/storage.js';

/** Folder of every LangGraph store file, below the adapter's root. */
export const LANGGRAPH_ROOT = 'langgraph';

/** Separates the thread's segment from the namespace's in a run id (never part of a segment). */
export const NS_SEPARATOR = '.';

// Plain segments exclude '_' and '.', so the encoded forms (`x_…`, `h_…`) and the
// namespace separator can never collide with an id that is used as it is.
const PLAIN = /^[A-Za-z0-9][A-Za-z0-9-]{0,59}$/;
const HEX_LIMIT_BYTES = 29;

/** Put before a long id when a store's keyed hash names it, so a segment never equals a content chunk's id. */
const SEGMENT_DOMAIN = utf8Encode('savepoint key segment\0');

/**
 * One path-safe segment for a LangGraph identifier (thread id, namespace, task id):
 * the id itself when it is short and plain (`1`, a UUID, `thread-7`), the hex of its UTF-8
 * as `x_<hex>` when short, else `h_<first 40 hex of its hash>`. Injective on the first
 * two forms; the hashed form is checked against the id stored in the document on read.
 *
 * The hash is SHA-256, or `storage`'s keyed hash when it names content its own way (an
 * encrypted store): an unkeyed hash in a key name would let anyone test a guessed id.
 */
export async function segmentOf(id: string, storage?: StorageAdapter): Promise<string> {
  if (PLAIN.test(id)) return id;
  const bytes = utf8Encode(id);
  if (bytes.length <= HEX_LIMIT_BYTES) return `x_${toHex(bytes)}`;
  const addressing = storage && contentAddressingOf(storage);
  if (addressing === undefined) return `h_${(await sha256Hex(bytes)).slice(0, 40)}`;
  const input = new Uint8Array(SEGMENT_DOMAIN.length + bytes.length);
  input.set(SEGMENT_DOMAIN);
  input.set(bytes, SEGMENT_DOMAIN.length);
  return `h_${(await addressing.id(input)).slice(0, 40)}`;
}

/** The segment of an id used as it is (see {@link segmentOf}), without a promise; undefined when it must be encoded. */
export function plainSegment(id: string): string | undefined {
  return PLAIN.test(id) ? id : undefined;
}

/**
 * The run id of one (thread, namespace) pair in `storage`: `<thread>` for the root namespace,
 * `<thread>.<ns>` otherwise. Pass the store the saver uses: on an encrypted store a long id's
 * segment is keyed (see {@link segmentOf}).
 */
export async function runIdOf(threadId: string, checkpointNs: string, storage?: StorageAdapter): Promise<string> {
  const thread = await segmentOf(threadId, storage);
  return checkpointNs === '' ? thread : `${thread}${NS_SEPARATOR}${await segmentOf(checkpointNs, storage)}`;
}

/** The thread segment of a run id written by {@link runIdOf}. */
export function threadSegmentOfRun(runId: string): string {
  const dot = runId.indexOf(NS_SEPARATOR);
  return dot < 0 ? runId : runId.slice(0, dot);
}

/** Keys of one run (a thread's namespace). */
export const runDir = (runId: string): string => `${LANGGRAPH_ROOT}/${runId}`;
/** The run's head: the sequence last claimed and its checkpoint (see head.ts). */
export const headKey = (runId: string): string => `${runDir(runId)}/head.json`;
/** A checkpoint's document, named by its id (LangGraph's uuid6 ids sort by time). */
export const checkpointKey = (runId: string, checkpointId: string): string => `${runDir(runId)}/history/${checkpointId}.json`;
/** The folder of a run's checkpoint documents (each {@link checkpointKey}). */
export const historyDir = (runId: string): string => `${runDir(runId)}/history/`;
/** The checkpoint id a {@link checkpointKey} of run `runId` names, or undefined for any other key. */
export function idOfCheckpointKey(runId: string, key: string): string | undefined {
  const prefix = historyDir(runId);
  if (!key.startsWith(prefix) || !key.endsWith('.json')) return undefined;
  const id = key.slice(prefix.length, -'.json'.length);
  return id.length > 0 && !id.includes('/') ? id : undefined;
}
/** Folder of the pending writes of the checkpoint with `sequence` (retention's part files go with their snapshot). */
export const writesDir = (runId: string, sequence: number): string => `${runDir(runId)}/parts/${sequence}/`;
/** The pending writes one task made against the checkpoint with `sequence`. */
export const writesKey = (runId: string, sequence: number, taskSegment: string): string =>
  `${writesDir(runId, sequence)}w_${taskSegment}.json`;

/** What a checkpoint id may be (LangGraph's uuid6 ids are): checked on every id given, and on the ids a head names (they become file names and the head's text). */
export const CHECKPOINT_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

/** Throws `checkpoint_key_invalid` unless `id` can name a checkpoint file. */
export function assertCheckpointId(id: unknown, field = 'checkpoint_id'): asserts id is string {
  if (typeof id !== 'string' || !CHECKPOINT_ID.test(id)) {
    throw new CheckpointError('checkpoint_key_invalid', `${field} must be 1-128 characters of [A-Za-z0-9-] (LangGraph's uuid6 ids are)`, {
      details: { field, length: typeof id === 'string' ? id.length : -1 },
    });
  }
}
