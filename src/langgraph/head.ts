import { parseJson } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode, utf8EncodeInto } from '../codec/utf8.js';
import type { StorageAdapter } from '../contract/storage.js';
import { CHECKPOINT_ID, headKey } from './keys.js';

/**
 * A run's head (`langgraph/<run_id>/head.json`): the sequence last claimed in the run and the
 * checkpoint it was claimed for, the newest checkpoint put, and the greatest id the run has held. Every saver that stores a new
 * checkpoint replaces it on the version it last read or wrote (created when absent), in the
 * same write step as the checkpoint: two savers on one thread (replicas, processes, machines)
 * cannot claim one sequence, and a saver that another one overtook finds out by that
 * conflict, learns the run again and claims the next sequence.
 */
export interface Head {
  readonly checkpointId: string;
  readonly sequence: number;
  /**
   * The greatest checkpoint id the run has held (`top_id`): no stored checkpoint's id is above
   * it, so a saver that learns the run from its head knows every id above it is new without
   * listing the run. Absent in heads written before it was kept: such a run is listed.
   */
  readonly topId?: string;
  /** The run's in-order range (`in_order`): absent where the run's claims no longer sort by id (see in-order.ts). */
  readonly inOrder?: InOrder;
}

/**
 * A head's `in_order` member: the run's checkpoints from `from_id` on were each claimed at the
 * sequence after the one before (`from_id` at `from_sequence`), with an id above every id the run
 * had held, so they sort by id as they were claimed; `ids_hash` is the XOR of a hash of each of
 * their ids still stored (see in-order.ts).
 */
export interface InOrder {
  readonly fromId: string;
  readonly fromSequence: number;
  readonly idsHash: number;
}

/** A head as read from the store, with the version a replace is conditioned on. */
export interface StoredHead {
  /** Undefined when the stored bytes are not a head (a torn or foreign file): its version is still what a replace needs. */
  readonly head: Head | undefined;
  readonly version: string;
}

/**
 * The metadata column of a head's bytes to a store that indexes it (a `KnownMetadata`'s `json`):
 * a JSON object naming no metadata. A head's ids are checkpoint ids (checked when given, read from
 * a stored head, or found by a listing: see `topIdWith`), which need no escaping.
 */
export const HEAD_METADATA_COLUMN = '{}';

/** The head's JSON text (checkpoint ids are `[A-Za-z0-9-]`: no escaping). */
function headText(head: Head): string {
  const top = head.topId === undefined ? '' : `,"top_id":"${head.topId}"`;
  const range = head.inOrder;
  const inOrder =
    range === undefined
      ? ''
      : `,"in_order":{"from_id":"${range.fromId}","from_sequence":${range.fromSequence},"ids_hash":"${range.idsHash.toString(16).padStart(8, '0')}"}`;
  return `{"checkpoint_id":"${head.checkpointId}","sequence":${head.sequence}${top}${inOrder}}`;
}

/** The head's bytes. */
export function encodeHead(head: Head): Uint8Array {
  return utf8Encode(headText(head));
}

/**
 * The head's bytes encoded into `scratch` from byte `from` on (a view of it), or undefined when
 * they do not fit there: for a store that copies them before its call returns.
 */
export function encodeHeadInto(head: Head, scratch: Uint8Array, from: number): Uint8Array | undefined {
  const text = headText(head);
  if (from + text.length > scratch.length) return undefined;
  const { read, written } = utf8EncodeInto(text, scratch.subarray(from));
  return read === text.length ? scratch.subarray(from, from + written) : undefined;
}

/** The head in `bytes`, or undefined when they do not hold one. */
export function decodeHead(bytes: Uint8Array, where: string): Head | undefined {
  try {
    const doc = parseJson(utf8Decode(bytes, where), where) as {
      checkpoint_id?: unknown;
      sequence?: unknown;
      top_id?: unknown;
      in_order?: unknown;
    };
    const { checkpoint_id: checkpointId, sequence, top_id: topId } = doc ?? {};
    if (
      typeof checkpointId !== 'string' ||
      !CHECKPOINT_ID.test(checkpointId) ||
      !Number.isSafeInteger(sequence) ||
      (sequence as number) < 1
    )
      return undefined;
    // A top id that is no checkpoint id (the next head's text carries it unescaped), or below the
    // head's own checkpoint (not an upper bound), is ignored: the run is listed.
    if (typeof topId !== 'string' || !CHECKPOINT_ID.test(topId) || topId < checkpointId)
      return { checkpointId, sequence: sequence as number };
    const inOrder = decodeInOrder(doc.in_order, checkpointId, sequence as number);
    return inOrder ? { checkpointId, sequence: sequence as number, topId, inOrder } : { checkpointId, sequence: sequence as number, topId };
  } catch {
    return undefined;
  }
}

/**
 * A head's `in_order` member, or undefined when it is absent or not one this head can carry: its
 * first checkpoint must be at or below the head's (id and sequence), as every claim in the range is.
 */
function decodeInOrder(value: unknown, checkpointId: string, sequence: number): InOrder | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { from_id: fromId, from_sequence: fromSequence, ids_hash: idsHash } = value as Record<string, unknown>;
  if (typeof fromId !== 'string' || !CHECKPOINT_ID.test(fromId) || fromId > checkpointId) return undefined;
  if (!Number.isSafeInteger(fromSequence) || (fromSequence as number) < 1 || (fromSequence as number) > sequence) return undefined;
  if (typeof idsHash !== 'string' || !/^[0-9a-f]{8}$/.test(idsHash)) return undefined;
  return { fromId, fromSequence: fromSequence as number, idsHash: Number.parseInt(idsHash, 16) };
}

/** The run's stored head, or undefined when it has none. */
export async function readHead(storage: StorageAdapter, runId: string): Promise<StoredHead | undefined> {
  const key = headKey(runId);
  const stored = await storage.get(key);
  return stored && { head: decodeHead(stored.bytes, key), version: stored.version };
}
