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
  const waiting = new Map<Uint8Array, number>();
  for (let i = 0; i < operations.length; i++) {
    const op = operations[i];
    if (op?.type !== 'put') continue;
    const first = waiting.get(op.bytes);
    if (first !== undefined && operations[first]!.key !== op.key) {
      partner[i] = first;
      partner[first] = i;
      waiting.delete(op.bytes);
    } else waiting.set(op.bytes, i);
  }
  return partner;
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
  for (const op of operations) {
    if (op?.key === KEYRING_KEY) throw reservedKey();
    if (op?.type !== 'put') continue;
    assertKey(op.key);
    if (!(op.bytes instanceof Uint8Array)) throw notBytes(op.key);
  }
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
