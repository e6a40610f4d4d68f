import { CheckpointError } from '../../contract/errors.js';

/**
 * The cryptographic primitives of encrypted stores, all through WebCrypto
 * (`globalThis.crypto.subtle`): AES-256-GCM, HMAC-SHA-256, HKDF-SHA-256 and PBKDF2-SHA-256.
 * No `node:` import, so the encrypted store runs wherever the root entry does.
 */

/** Bytes of an AES-GCM nonce (96 bits, the size GCM is specified for). */
export const NONCE_BYTES = 12;
/** Bytes of an AES-GCM authentication tag. */
export const TAG_BYTES = 16;
/** Bytes of every symmetric key here (AES-256, HMAC-SHA-256 keys, data keys). */
export const KEY_BYTES = 32;

function subtle(): SubtleCrypto {
  const s = globalThis.crypto?.subtle;
  if (!s)
    throw new CheckpointError(
      'checkpoint_unsupported',
      'encrypted storage needs WebCrypto (globalThis.crypto.subtle): a secure context in browsers, Node 20+',
    );
  return s;
}

/** `n` bytes from the platform's cryptographic random generator. */
export function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n);
  globalThis.crypto.getRandomValues(out);
  return out;
}

/** An AES-256-GCM key for sealing and opening values (not extractable). */
export function importAesKey(raw: Uint8Array): Promise<CryptoKey> {
  return subtle().importKey('raw', raw as Uint8Array<ArrayBuffer>, { name: 'AES-GCM' }, false, ['encrypt', 'decrypt']);
}

/** An HMAC-SHA-256 key (not extractable). */
export function importHmacKey(raw: Uint8Array): Promise<CryptoKey> {
  return subtle().importKey('raw', raw as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
}

/** AES-GCM encryption: ciphertext followed by the 16-byte tag. */
export async function aesGcmSeal(key: CryptoKey, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Promise<Uint8Array> {
  const params = { name: 'AES-GCM', iv: nonce as Uint8Array<ArrayBuffer>, additionalData: aad as Uint8Array<ArrayBuffer>, tagLength: 128 };
  return new Uint8Array(await subtle().encrypt(params, key, plaintext as Uint8Array<ArrayBuffer>));
}

/** AES-GCM decryption; `undefined` when authentication fails (wrong key, changed bytes or associated data). */
export async function aesGcmOpen(key: CryptoKey, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Promise<Uint8Array | undefined> {
  const params = { name: 'AES-GCM', iv: nonce as Uint8Array<ArrayBuffer>, additionalData: aad as Uint8Array<ArrayBuffer>, tagLength: 128 };
  try {
    return new Uint8Array(await subtle().decrypt(params, key, sealed as Uint8Array<ArrayBuffer>));
  } catch {
    return undefined;
  }
}

/** HMAC-SHA-256 of `data` under `key`. */
export async function hmacSha256(key: CryptoKey, data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await subtle().sign('HMAC', key, data as Uint8Array<ArrayBuffer>));
}

/** HKDF-SHA-256 (RFC 5869): `length` bytes from `ikm`, `salt` and `info`. */
export async function hkdfSha256(ikm: Uint8Array, salt: Uint8Array, info: Uint8Array, length: number): Promise<Uint8Array> {
  const base = await subtle().importKey('raw', ikm as Uint8Array<ArrayBuffer>, 'HKDF', false, ['deriveBits']);
  const params = { name: 'HKDF', hash: 'SHA-256', salt: salt as Uint8Array<ArrayBuffer>, info: info as Uint8Array<ArrayBuffer> };
  return new Uint8Array(await subtle().deriveBits(params, base, length * 8));
}

/** PBKDF2-HMAC-SHA-256 (RFC 8018): `length` bytes from a password. */
export async function pbkdf2Sha256(password: Uint8Array, salt: Uint8Array, iterations: number, length: number): Promise<Uint8Array> {
  const base = await subtle().importKey('raw', password as Uint8Array<ArrayBuffer>, 'PBKDF2', false, ['deriveBits']);
  const params = { name: 'PBKDF2', hash: 'SHA-256', salt: salt as Uint8Array<ArrayBuffer>, iterations };
  return new Uint8Array(await subtle().deriveBits(params, base, length * 8));
}

/** Constant-time equality of two byte arrays of public length. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}
