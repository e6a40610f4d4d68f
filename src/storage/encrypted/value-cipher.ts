import { handOver } from '../handed-over.js';
import type { Session } from './session.js';
import { valueDamaged } from './errors.js';
import { aesGcmOpen, aesGcmSeal, TAG_BYTES } from './primitives.js';
import { associatedData, HEADER_BYTES, readHeader, writeHeader } from './value-format.js';

/**
 * Encrypts `plaintext` for storage under `key`: header, then AES-256-GCM ciphertext and tag.
 * Synchronous where the runtime can encrypt synchronously (Node), a promise otherwise.
 */
export function sealValue(session: Session, key: string, plaintext: Uint8Array): Uint8Array | Promise<Uint8Array> {
  const nonce = session.nonces.next();
  if (session.sync) {
    const out = new Uint8Array(HEADER_BYTES + plaintext.length + TAG_BYTES);
    writeHeader(out, session.dataKeyIdBytes, nonce);
    session.sync.sealInto(nonce, associatedData(out.subarray(0, HEADER_BYTES), key), plaintext, out, HEADER_BYTES);
    // Made here and never touched again: the inner store may keep it rather than copy it.
    return handOver(out);
  }
  return sealWithWebCrypto(session, key, plaintext, nonce);
}

async function sealWithWebCrypto(session: Session, key: string, plaintext: Uint8Array, nonce: Uint8Array): Promise<Uint8Array> {
  const header = new Uint8Array(HEADER_BYTES);
  writeHeader(header, session.dataKeyIdBytes, nonce);
  const sealed = await aesGcmSeal(session.valueKey, nonce, associatedData(header, key), plaintext);
  const out = new Uint8Array(HEADER_BYTES + sealed.length);
  out.set(header, 0);
  out.set(sealed, HEADER_BYTES);
  return handOver(out);
}

/** The data key id a stored value names, or a `checkpoint_integrity_mismatch` when it is not an encrypted value. */
export function dataKeyIdOf(key: string, stored: Uint8Array): string {
  const header = readHeader(stored);
  if (typeof header === 'string') throw valueDamaged(key, header);
  return header.dataKeyId;
}

/** Decrypts a stored value read under `key`; `checkpoint_integrity_mismatch` if anything about it changed. */
export async function openValue(session: Session, key: string, stored: Uint8Array): Promise<Uint8Array> {
  const header = readHeader(stored);
  if (typeof header === 'string') throw valueDamaged(key, header);
  if (header.dataKeyId !== session.dataKeyId) throw valueDamaged(key, 'foreign-data-key', header.dataKeyId);
  const aad = associatedData(stored.subarray(0, HEADER_BYTES), key);
  const body = stored.subarray(HEADER_BYTES);
  // Synchronous where the runtime can (Node): a WebCrypto call costs a round trip through a worker job.
  const plaintext = session.sync ? session.sync.open(header.nonce, aad, body) : await aesGcmOpen(session.valueKey, header.nonce, aad, body);
  if (!plaintext) throw valueDamaged(key, 'authentication');
  return plaintext;
}
