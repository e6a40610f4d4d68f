import { CheckpointError } from '../../contract/errors.js';
import { KEYRING_KEY } from './keyring.js';
import type { MalformedValue } from './value-format.js';

/**
 * The errors of an encrypted store. They name keys by their ids (one-way digests) and
 * values by their storage keys; never a key's bytes, a passphrase or any plaintext.
 */

/** No key given opens the store's data key. */
export function keyMissing(
  what: string,
  needed: { readonly dataKeyId: string; readonly wrapKeyIds: readonly string[] },
  given: readonly string[],
): CheckpointError {
  const wraps =
    needed.wrapKeyIds.length > 0
      ? `key id ${needed.wrapKeyIds.join(' or key id ')}`
      : `a key that wraps data key ${needed.dataKeyId} (the store has no keyring)`;
  const have = given.length > 0 ? `the keys given have id ${given.join(', ')}` : 'no key was given';
  return new CheckpointError('checkpoint_encryption_key_missing', `${what} needs ${wraps}; ${have}`, {
    details: { data_key_id: needed.dataKeyId, needs_key_ids: needed.wrapKeyIds, given_key_ids: given },
  });
}

const MALFORMED: Record<MalformedValue, string> = {
  'too-short': 'too short to be an encrypted value',
  'not-encrypted': 'not in the encrypted format (a plain value written without encryption, or damaged)',
  'unknown-version': 'written in an encrypted format version this version of savepoint does not read (or damaged)',
};

/** A stored value that does not open: changed, damaged, moved from another key, or not encrypted. */
export function valueDamaged(
  key: string,
  why: MalformedValue | 'authentication' | 'foreign-data-key',
  dataKeyId?: string,
): CheckpointError {
  const text =
    why === 'authentication'
      ? 'failed authentication: its bytes were changed, or it was moved here from another key'
      : why === 'foreign-data-key'
        ? `names data key ${dataKeyId ?? '?'}, which is not the store's (changed, or copied from another store)`
        : MALFORMED[why];
  return new CheckpointError('checkpoint_integrity_mismatch', `encrypted value under ${key} ${text}`, { details: { key, cause: why } });
}

/** The keyring's own name is not a key users may read or write. */
export function reservedKey(): CheckpointError {
  return new CheckpointError('checkpoint_key_invalid', `invalid storage key: ${KEYRING_KEY} is reserved for the encrypted store's keyring`);
}
