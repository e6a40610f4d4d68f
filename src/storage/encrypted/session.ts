import { isCheckpointError } from '../../contract/errors.js';
import type { StorageAdapter } from '../../contract/storage.js';
import type { EncryptionKey } from './encryption-key.js';
import { keyMissing } from './errors.js';
import {
  damaged,
  decodeKeyring,
  encodeKeyring,
  KEYRING_KEY,
  keyIdsOf,
  newDataKey,
  unwrapDataKey,
  wrapDataKey,
  type Keyring,
} from './keyring.js';
import { syncAead, type SyncAead } from './native-aead.js';
import { NoncePool } from './nonce-pool.js';
import { hkdfSha256, importAesKey, importHmacKey, KEY_BYTES } from './primitives.js';
import { NameTags } from './name-tag.js';
import { SyncSealer } from './sync-sealer.js';

/**
 * A session: the store's data key, opened, and the keys derived from it. One per encrypted
 * store instance, made on first use and kept: the data key never changes (rotating a user
 * key re-wraps it), so a session stays valid for the store's lifetime.
 */
export interface Session {
  readonly dataKeyId: string;
  readonly dataKeyIdBytes: Uint8Array;
  /** AES-256-GCM key for values. */
  readonly valueKey: CryptoKey;
  /** HMAC-SHA-256 key for content ids. */
  readonly contentIdKey: CryptoKey;
  /** HMAC-SHA-256 key for hidden run ids (a key of its own: a run id and a content id never share a MAC). */
  readonly runIdKey: CryptoKey;
  /** The storage keys' name tags, which bind a shared value to its two keys. */
  readonly nameTags: NameTags;
  /** The same keys for the runtime's synchronous implementation, where it has one (Node). */
  readonly sync: SyncAead | undefined;
  /** Where the values' nonces come from. */
  readonly nonces: NoncePool;
  /** Seals values through `sync`, where there is one. */
  readonly sealer: SyncSealer | undefined;
}

/** What an encrypted store keeps between calls. */
export interface EncryptedState {
  readonly inner: StorageAdapter;
  /** The user keys: the first wraps a new store's data key; all are tried to open it. */
  readonly keys: readonly EncryptionKey[];
  /** The opened session, once one was made; a failed attempt is not kept, so a later call tries again. */
  session: Promise<Session> | undefined;
  /** The session once opened, for the synchronous start of a put (WebCrypto copies its input when called). */
  ready: Session | undefined;
  closed: boolean;
  /** Calls under way, which `close()` lets finish before closing the inner store (their inner call may still be to come). */
  readonly inFlight: Set<Promise<unknown>>;
}

/** Runs `op`, keeping it in `state.inFlight` until it settles. */
export function track<T>(state: EncryptedState, op: Promise<T>): Promise<T> {
  state.inFlight.add(op);
  const done = (): void => void state.inFlight.delete(op);
  op.then(done, done);
  return op;
}

const encoder = new TextEncoder();
const VALUE_INFO = encoder.encode('savepoint/value-aes-256-gcm/v1');
const CONTENT_ID_INFO = encoder.encode('savepoint/content-id-hmac-sha256/v1');
const RUN_ID_INFO = encoder.encode('savepoint/run-id-hmac-sha256/v1');
const NAME_TAG_INFO = encoder.encode('savepoint/name-tag-siphash24/v1');
/** Bytes of the name tags' key (SipHash-2-4 takes 128 bits). */
const NAME_KEY_BYTES = 16;

/** The session of data key `dataKeyId`; `native: false` keeps to WebCrypto (tests compare the two). */
export async function sessionOf(dataKeyId: string, dataKey: Uint8Array, native = true): Promise<Session> {
  const salt = hexBytes(dataKeyId);
  const [valueRaw, idRaw, runIdRaw, nameTagRaw] = await Promise.all([
    hkdfSha256(dataKey, salt, VALUE_INFO, KEY_BYTES),
    hkdfSha256(dataKey, salt, CONTENT_ID_INFO, KEY_BYTES),
    hkdfSha256(dataKey, salt, RUN_ID_INFO, KEY_BYTES),
    hkdfSha256(dataKey, salt, NAME_TAG_INFO, NAME_KEY_BYTES),
  ]);
  const [valueKey, contentIdKey, runIdKey] = await Promise.all([importAesKey(valueRaw), importHmacKey(idRaw), importHmacKey(runIdRaw)]);
  const nameTags = new NameTags(nameTagRaw);
  const sync = native ? syncAead(valueRaw, idRaw) : undefined;
  const nonces = new NoncePool();
  return {
    dataKeyId,
    dataKeyIdBytes: salt,
    valueKey,
    contentIdKey,
    runIdKey,
    nameTags,
    sync,
    nonces,
    sealer: sync ? new SyncSealer(sync, nonces, nameTags, salt) : undefined,
  };
}

/** The stored keyring and its version, or `undefined` when the store has none yet. */
export async function readKeyring(inner: StorageAdapter): Promise<{ readonly keyring: Keyring; readonly version: string } | undefined> {
  const stored = await inner.get(KEYRING_KEY);
  return stored ? { keyring: decodeKeyring(stored.bytes), version: stored.version } : undefined;
}

/** The data key opened from `keyring` with `keys`, or `checkpoint_encryption_key_missing` naming the key ids it needs. */
export async function openKeyring(
  keyring: Keyring,
  keys: readonly EncryptionKey[],
  what: string,
): Promise<{ dataKey: Uint8Array; keyId: string }> {
  const opened = await unwrapDataKey(keyring, keys);
  if (opened === 'damaged') throw damaged('the wrap of a key given fails authentication');
  if (opened) return opened;
  throw keyMissing(what, { dataKeyId: keyring.dataKeyId, wrapKeyIds: keyring.wraps.map((w) => w.keyId) }, await keyIdsOf(keys, keyring));
}

/** Opens the store's keyring, or creates one (a new data key wrapped by the first key) when `create` and there is none. */
async function loadSession(state: EncryptedState, create: boolean): Promise<Session | undefined> {
  for (let attempt = 0; ; attempt++) {
    const found = await readKeyring(state.inner);
    if (found) {
      const { dataKey } = await openKeyring(found.keyring, state.keys, 'the encrypted store');
      return sessionOf(found.keyring.dataKeyId, dataKey);
    }
    if (!create) return undefined;
    if (state.keys.length === 0) throw keyMissing('a new encrypted store', { dataKeyId: '-', wrapKeyIds: [] }, []);
    const { dataKeyId, dataKey } = newDataKey();
    const keyring: Keyring = { dataKeyId, wraps: [await wrapDataKey(dataKeyId, dataKey, state.keys[0]!)] };
    try {
      await state.inner.put(KEYRING_KEY, encodeKeyring(keyring), { ifAbsent: true });
      return sessionOf(dataKeyId, dataKey);
    } catch (err) {
      // Another writer created the keyring first: use theirs.
      if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= 3) throw err;
    }
  }
}

/** The session for a write: opens the keyring, creating it on a new store. */
export function writeSession(state: EncryptedState): Promise<Session> {
  if (!state.session) {
    const loading = (loadSession(state, true) as Promise<Session>).then((session) => (state.ready = session));
    state.session = loading;
    loading.catch(() => {
      if (state.session === loading) state.session = undefined;
    });
  }
  return state.session;
}

/** The session for a read, or `undefined` while the store has no keyring (then it holds no encrypted value either). */
export async function readSession(state: EncryptedState): Promise<Session | undefined> {
  if (state.session) return state.session;
  const loaded = await loadSession(state, false);
  if (loaded && !state.session) {
    state.session = Promise.resolve(loaded);
    state.ready = loaded;
  }
  return loaded;
}

function hexBytes(text: string): Uint8Array {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return out;
}
