import { handOver } from '../handed-over.js';
import type { Session } from './session.js';
import { valueDamaged } from './errors.js';
import { aesGcmOpen, aesGcmSeal } from './primitives.js';
import { associatedData, HEADER_BYTES, readHeader, sharedAssociatedData, SINGLE_KEY_FORMAT, writeHeader } from './value-format.js';

/**
 * Encrypts `plaintext` for storage under `key`: header, then AES-256-GCM ciphertext and tag.
 * Synchronous where the runtime can encrypt synchronously (Node), a promise otherwise.
 */
export function sealValue(session: Session, key: string, plaintext: Uint8Array): Uint8Array | Promise<Uint8Array> {
  if (session.sealer) return session.sealer.single(key, plaintext);
  return sealWithWebCrypto(session, key, plaintext, session.nonces.next());
}

/**
 * Encrypts `plaintext` once for storage under both `a` and `b` (a shared value, format 2), where
 * the runtime encrypts synchronously; else `undefined` (the caller seals each).
 * A checkpoint puts the same bytes to its history file and to `latest`: one sealing, not two.
 */
export function sealSharedSync(session: Session, a: string, b: string, plaintext: Uint8Array): Uint8Array | undefined {
  return session.sealer?.shared(a, b, plaintext);
}

async function sealWithWebCrypto(session: Session, key: string, plaintext: Uint8Array, nonce: Uint8Array): Promise<Uint8Array> {
  const header = new Uint8Array(HEADER_BYTES);
  writeHeader(header, SINGLE_KEY_FORMAT, session.dataKeyIdBytes, nonce);
  const sealed = await aesGcmSeal(session.valueKey, nonce, associatedData(header, key), plaintext);
  const out = new Uint8Array(HEADER_BYTES + sealed.length);
  out.set(header, 0);
  out.set(sealed, HEADER_BYTES);
  return handOver(out);
}

/**
 * The data key id a stored value names (`undefined` for a shared value, whose header names its
 * keys instead), or a `checkpoint_integrity_mismatch` when it is not an encrypted value.
 */
export function dataKeyIdOf(key: string, stored: Uint8Array): string | undefined {
  const header = readHeader(stored);
  if (typeof header === 'string') throw valueDamaged(key, header);
  return header.version === SINGLE_KEY_FORMAT ? header.dataKeyId : undefined;
}

/** Decrypts a stored value read under `key`; `checkpoint_integrity_mismatch` if anything about it changed. */
export async function openValue(session: Session, key: string, stored: Uint8Array): Promise<Uint8Array> {
  const header = readHeader(stored);
  if (typeof header === 'string') throw valueDamaged(key, header);
  const headerBytes = stored.subarray(0, HEADER_BYTES);
  let aad: Uint8Array;
  if (header.version === SINGLE_KEY_FORMAT) {
    if (header.dataKeyId !== session.dataKeyId) throw valueDamaged(key, 'foreign-data-key', header.dataKeyId);
    aad = associatedData(headerBytes, key);
  } else {
    // A shared value from another store, or moved here from a third key, fails authentication below.
    aad = sharedAssociatedData(headerBytes, session.nameTags.of(key), header.pairTag);
  }
  const body = stored.subarray(HEADER_BYTES);
  // Synchronous where the runtime can (Node): a WebCrypto call costs a round trip through a worker job.
  const plaintext = session.sync ? session.sync.open(header.nonce, aad, body) : await aesGcmOpen(session.valueKey, header.nonce, aad, body);
  if (!plaintext) throw valueDamaged(key, 'authentication');
  return plaintext;
}
