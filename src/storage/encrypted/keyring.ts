import { CheckpointError } from '../../contract/errors.js';
import { fromBase64, toBase64 } from '../../codec/base64.js';
import { canonicalJson } from '../../codec/canonical-json.js';
import { toHex } from '../../codec/sha256.js';
import {
  EncryptionKey,
  MAX_PBKDF2_ITERATIONS,
  MIN_PBKDF2_ITERATIONS,
  type KeyEncryptionKey,
  type PassphraseKdf,
} from './encryption-key.js';
import { aesGcmOpen, aesGcmSeal, KEY_BYTES, NONCE_BYTES, randomBytes, TAG_BYTES } from './primitives.js';
import { DATA_KEY_ID_BYTES } from './value-format.js';

/**
 * The keyring: the store's one data key, wrapped (AES-256-GCM) by each user key that may
 * open it. Stored as canonical JSON under {@link KEYRING_KEY} in the store it protects.
 * Adding or removing a user key rewrites this one small document (a conditional put);
 * checkpoints, encrypted under the data key, are never rewritten.
 */

/** Where the keyring lives in the wrapped store. Hidden from the encrypted store's users. */
export const KEYRING_KEY = 'savepoint-keyring.json';
const FORMAT = 'savepoint-keyring';
const VERSION = 1;

/** The data key wrapped by one user key. */
export interface KeyWrap {
  /** The user key's id (see {@link KeyEncryptionKey.id}). */
  readonly keyId: string;
  /** How the user key was derived from a passphrase; absent for a raw key. */
  readonly kdf?: PassphraseKdf;
  readonly nonce: Uint8Array;
  /** The data key under the user key, with its GCM tag. */
  readonly wrapped: Uint8Array;
}

/** A parsed keyring. */
export interface Keyring {
  /** The data key's id, 16 hex digits, written in every value's header. */
  readonly dataKeyId: string;
  readonly wraps: readonly KeyWrap[];
}

const encoder = new TextEncoder();

function wrapAad(dataKeyId: string, keyId: string): Uint8Array {
  return encoder.encode(`savepoint/keyring/v${VERSION}\n${dataKeyId}\n${keyId}`);
}

/** A new data key and its id. */
export function newDataKey(): { readonly dataKeyId: string; readonly dataKey: Uint8Array } {
  return { dataKeyId: toHex(randomBytes(DATA_KEY_ID_BYTES)), dataKey: randomBytes(KEY_BYTES) };
}

/** Wraps `dataKey` under `key` (a new salt for a passphrase key). */
export async function wrapDataKey(dataKeyId: string, dataKey: Uint8Array, key: EncryptionKey): Promise<KeyWrap> {
  const kdf = key.newKdf();
  const kek = await key.resolve(kdf)!;
  const nonce = randomBytes(NONCE_BYTES);
  const wrapped = await aesGcmSeal(kek.kek, nonce, wrapAad(dataKeyId, kek.id), dataKey);
  return { keyId: kek.id, ...(kdf ? { kdf } : {}), nonce, wrapped };
}

/**
 * The data key, opened with the first of `keys` that opens a wrap, and that wrap's key id;
 * `'damaged'` when a wrap of one of `keys` (same key id) fails to open; `undefined` when no key has a wrap.
 */
export async function unwrapDataKey(
  keyring: Keyring,
  keys: readonly EncryptionKey[],
): Promise<{ readonly dataKey: Uint8Array; readonly keyId: string } | 'damaged' | undefined> {
  let damagedWrap = false;
  for (const key of keys) {
    for (const wrap of keyring.wraps) {
      const kek: KeyEncryptionKey | undefined = await key.resolve(wrap.kdf);
      if (!kek || kek.id !== wrap.keyId) continue;
      const dataKey = await aesGcmOpen(kek.kek, wrap.nonce, wrapAad(keyring.dataKeyId, wrap.keyId), wrap.wrapped);
      if (dataKey && dataKey.length === KEY_BYTES) return { dataKey, keyId: wrap.keyId };
      damagedWrap = true;
    }
  }
  return damagedWrap ? 'damaged' : undefined;
}

/** The ids of `keys` as the keyring would name them (passphrase keys: under each wrap's salt that they open). */
export async function keyIdsOf(keys: readonly EncryptionKey[], keyring: Keyring | undefined): Promise<string[]> {
  const ids = new Set<string>();
  for (const key of keys) {
    const raw = key.resolve(undefined);
    if (raw) ids.add((await raw).id);
    else for (const wrap of keyring?.wraps ?? []) if (wrap.kdf) ids.add((await key.resolve(wrap.kdf)!).id);
    if (!raw && !keyring?.wraps.some((w) => w.kdf)) ids.add('passphrase');
  }
  return [...ids];
}

/** The keyring's stored bytes. */
export function encodeKeyring(keyring: Keyring): Uint8Array {
  const wraps = keyring.wraps.map((w) => ({
    key_id: w.keyId,
    ...(w.kdf ? { kdf: { name: w.kdf.name, iterations: w.kdf.iterations, salt: toBase64(w.kdf.salt) } } : {}),
    nonce: toBase64(w.nonce),
    wrapped: toBase64(w.wrapped),
  }));
  return encoder.encode(canonicalJson({ format: FORMAT, version: VERSION, cipher: 'AES-256-GCM', data_key_id: keyring.dataKeyId, wraps }));
}

/** The keyring's bytes are not a keyring, or a wrap was changed. */
export function damaged(why: string): CheckpointError {
  return new CheckpointError('checkpoint_integrity_mismatch', `the encrypted store's keyring (${KEYRING_KEY}) is damaged: ${why}`, {
    details: { key: KEYRING_KEY },
  });
}

type Loose = Record<string, unknown>;

function parseWrap(value: unknown): KeyWrap {
  const w = (typeof value === 'object' && value !== null ? value : {}) as Loose;
  const nonce = typeof w.nonce === 'string' ? fromBase64(w.nonce) : undefined;
  const wrapped = typeof w.wrapped === 'string' ? fromBase64(w.wrapped) : undefined;
  if (typeof w.key_id !== 'string' || !/^[0-9a-f]{16}$/.test(w.key_id)) throw damaged('a wrap has no valid key_id');
  if (!nonce || nonce.length !== NONCE_BYTES || !wrapped || wrapped.length !== KEY_BYTES + TAG_BYTES) throw damaged('a wrap is malformed');
  if (w.kdf === undefined) return { keyId: w.key_id, nonce, wrapped };
  const k = (typeof w.kdf === 'object' && w.kdf !== null ? w.kdf : {}) as Loose;
  const salt = typeof k.salt === 'string' ? fromBase64(k.salt) : undefined;
  const iterations = k.iterations;
  if (k.name !== 'PBKDF2-SHA-256' || !salt || salt.length < 8 || typeof iterations !== 'number' || !Number.isInteger(iterations))
    throw damaged('a wrap names an unknown key derivation');
  if (iterations < MIN_PBKDF2_ITERATIONS || iterations > MAX_PBKDF2_ITERATIONS)
    throw damaged('a wrap asks for an out-of-range iteration count');
  return { keyId: w.key_id, kdf: { name: 'PBKDF2-SHA-256', iterations, salt }, nonce, wrapped };
}

/** Parses stored keyring bytes; `checkpoint_integrity_mismatch` when they are not a keyring this code reads. */
export function decodeKeyring(bytes: Uint8Array): Keyring {
  let doc: Loose;
  try {
    doc = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)) as Loose;
  } catch {
    throw damaged('not JSON');
  }
  if (typeof doc !== 'object' || doc === null || doc.format !== FORMAT) throw damaged('not a keyring');
  if (doc.version !== VERSION) throw damaged(`format version ${String(doc.version)} is not one this version of savepoint reads`);
  if (typeof doc.data_key_id !== 'string' || !/^[0-9a-f]{16}$/.test(doc.data_key_id)) throw damaged('no valid data_key_id');
  if (!Array.isArray(doc.wraps) || doc.wraps.length === 0 || doc.wraps.length > 1000) throw damaged('no wraps');
  return { dataKeyId: doc.data_key_id, wraps: doc.wraps.map(parseWrap) };
}
