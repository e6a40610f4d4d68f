import { CheckpointError } from '../../contract/errors.js';
import type { BatchOperation } from '../../contract/storage.js';
import { assertKey } from '../keys.js';
import { reservedKey } from './errors.js';
import { KEYRING_KEY } from './keyring.js';
import type { Session } from './session.js';
import { sealSharedSync, sealValue } from './value-cipher.js';

type Put = Extract<BatchOperation, { type: 'put' }>;

/**
 * For each put of a batch, the index of the other put it shares its bytes with (the very same
 * buffer, under another key), or -1. A checkpoint puts one buffer to its history file and to
 * `latest`; a put takes at most one partner, so a value is shared by two keys at most.
 */
export function sharedPartners(operations: readonly BatchOperation[]): Int32Array {
  const partner = new Int32Array(operations.length).fill(-1);
  // A writer's batch holds a few puts: a scan of the earlier ones costs less than a map.
  const earlier = operations.length <= SCAN_LIMIT ? scanEarlier : mapEarlier();
  for (let i = 0; i < operations.length; i++) {
    const op = operations[i];
    if (op?.type !== 'put') continue;
    const first = earlier(operations, partner, i);
    if (first !== -1) {
      partner[i] = first;
      partner[first] = i;
    }
  }
  return partner;
}

/** Batches up to this many operations find partners by scanning. */
const SCAN_LIMIT = 8;

type FindEarlier = (operations: readonly BatchOperation[], partner: Int32Array, i: number) => number;

/** The first earlier put of the same buffer under another key that has no partner yet, or -1. */
const scanEarlier: FindEarlier = (operations, partner, i) => {
  const op = operations[i] as Put;
  for (let j = 0; j < i; j++) {
    const other = operations[j];
    if (other?.type === 'put' && other.bytes === op.bytes && partner[j] === -1 && other.key !== op.key) return j;
  }
  return -1;
};

/** As {@link scanEarlier}, through a map of the latest unpaired put of each buffer. */
function mapEarlier(): FindEarlier {
  const waiting = new Map<Uint8Array, number>();
  return (operations, _partner, i) => {
    const op = operations[i] as Put;
    const first = waiting.get(op.bytes);
    if (first !== undefined && operations[first]!.key !== op.key) {
      waiting.delete(op.bytes);
      return first;
    }
    waiting.set(op.bytes, i);
    return -1;
  };
}

/** A put's bytes must be a Uint8Array (the error a put of anything else gets). */
export function notBytes(key: string): CheckpointError {
  return new CheckpointError('checkpoint_schema_invalid', `value of ${key} is not a Uint8Array`, { details: { key } });
}

/**
 * The batch with every put's bytes sealed synchronously (`session.sync` is set): two puts of one
 * buffer share one sealing (format 2), any other put is sealed alone. Checks each operation's
 * key first, as the inner store would, and refuses the keyring's key.
 */
export function sealBatchSync(session: Session, operations: readonly BatchOperation[]): BatchOperation[] {
  // An index loop, not for-of: this runs once a checkpoint, often before the code is optimized, where for-of runs the iterator protocol.
  for (let i = 0; i < operations.length; i++) {
    const op = operations[i];
    if (op?.key === KEYRING_KEY) throw reservedKey();
    if (op?.type !== 'put') continue;
    assertKey(op.key);
    if (!(op.bytes instanceof Uint8Array)) throw notBytes(op.key);
  }
  const pair = sharedPair(session, operations);
  if (pair) return pair;
  const partner = sharedPartners(operations);
  const sealed = operations.slice();
  for (let i = 0; i < operations.length; i++) {
    const op = operations[i]!;
    const j = partner[i]!;
    if (op.type !== 'put' || (j !== -1 && j < i)) continue;
    const shared = j === -1 ? undefined : sealSharedSync(session, op.key, operations[j]!.key, op.bytes);
    sealed[i] = { ...op, bytes: shared ?? (sealValue(session, op.key, op.bytes) as Uint8Array) };
    if (j !== -1)
      sealed[j] = { ...(operations[j] as Put), bytes: shared ?? (sealValue(session, operations[j]!.key, op.bytes) as Uint8Array) };
  }
  return sealed;
}

/**
 * A checkpoint's usual batch, sealed: exactly two puts of one buffer under two keys (its
 * history file and `latest`), one sealing shared by both. `undefined` for any other batch.
 * The general path finds the same pairing; this one skips the search.
 */
function sharedPair(session: Session, operations: readonly BatchOperation[]): BatchOperation[] | undefined {
  if (operations.length !== 2) return undefined;
  const [a, b] = operations as [BatchOperation, BatchOperation];
  if (a.type !== 'put' || b.type !== 'put' || a.bytes !== b.bytes || a.key === b.key) return undefined;
  const shared = sealSharedSync(session, a.key, b.key, a.bytes);
  return shared
    ? [
        { ...a, bytes: shared },
        { ...b, bytes: shared },
      ]
    : undefined;
}
