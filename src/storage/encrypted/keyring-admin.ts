import { CheckpointError, isCheckpointError } from '../../contract/errors.js';
import { EncryptionKey } from './encryption-key.js';
import { encodeKeyring, KEYRING_KEY, keyIdsOf, wrapDataKey, type Keyring } from './keyring.js';
import { openKeyring, readKeyring, type EncryptedState } from './session.js';

/** One user key the keyring holds a wrap for. */
export interface KeyringEntry {
  /** The key's id (16 hex digits, a one-way digest of the key). */
  readonly keyId: string;
  readonly kind: 'raw' | 'passphrase';
  /** True when one of the keys this store was given is this key. */
  readonly given: boolean;
}

/** What `keyring.list()` reports. */
export interface KeyringListing {
  /** The store's data key id, or `undefined` for a store not written yet (no keyring). */
  readonly dataKeyId: string | undefined;
  readonly keys: readonly KeyringEntry[];
}

/** Key management of an encrypted store. Every change is one conditional write of the keyring; checkpoints are never rewritten. */
export interface EncryptedKeyring {
  /** The keys that can open the store (needs no key: ids are public). */
  list(): Promise<KeyringListing>;
  /** Wraps the data key under `key` too, so it opens the store as well; needs a key that already opens it. Returns the new key's id. */
  add(key: EncryptionKey): Promise<string>;
  /** Drops the wrap of key `keyId`; refuses to drop the last one. */
  remove(keyId: string): Promise<void>;
  /**
   * Replaces every wrap with one under `key`: first adds it, then removes the others, each
   * one conditional write, so a crash between them leaves both keys working.
   */
  rotate(key: EncryptionKey): Promise<{ readonly added: string; readonly removed: readonly string[] }>;
}

const ATTEMPTS = 5;

function noKeyring(): CheckpointError {
  return new CheckpointError('checkpoint_not_found', 'the encrypted store has no keyring yet: it is created by the first write');
}

/** Reads the keyring, applies `change` and writes it back conditioned on the version read, again on a lost race. */
async function updateKeyring(state: EncryptedState, change: (keyring: Keyring) => Promise<Keyring | undefined>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const found = await readKeyring(state.inner);
    if (!found) throw noKeyring();
    const next = await change(found.keyring);
    if (!next) return;
    try {
      await state.inner.put(KEYRING_KEY, encodeKeyring(next), { ifVersion: found.version });
      return;
    } catch (err) {
      if (!isCheckpointError(err, 'checkpoint_conflict') || attempt >= ATTEMPTS) throw err;
    }
  }
}

async function addKey(state: EncryptedState, key: EncryptionKey): Promise<string> {
  if (!(key instanceof EncryptionKey)) throw new CheckpointError('checkpoint_config_invalid', 'keyring.add: key must be an EncryptionKey');
  let added = '';
  await updateKeyring(state, async (keyring) => {
    const ids = await keyIdsOf([key], keyring);
    const present = key.kind === 'raw' ? keyring.wraps.find((w) => ids.includes(w.keyId)) : undefined;
    if (present) {
      added = present.keyId;
      return undefined;
    }
    const { dataKey } = await openKeyring(keyring, state.keys, 'keyring.add');
    const wrap = await wrapDataKey(keyring.dataKeyId, dataKey, key);
    added = wrap.keyId;
    return { dataKeyId: keyring.dataKeyId, wraps: [...keyring.wraps.filter((w) => w.keyId !== wrap.keyId), wrap] };
  });
  return added;
}

async function removeKey(state: EncryptedState, keyId: string): Promise<void> {
  await updateKeyring(state, async (keyring) => {
    if (!keyring.wraps.some((w) => w.keyId === keyId))
      throw new CheckpointError('checkpoint_not_found', `keyring.remove: the keyring has no key id ${keyId}`);
    if (keyring.wraps.length === 1)
      throw new CheckpointError(
        'checkpoint_unsupported',
        'keyring.remove: refusing to remove the last key (the store would be unreadable)',
      );
    return { dataKeyId: keyring.dataKeyId, wraps: keyring.wraps.filter((w) => w.keyId !== keyId) };
  });
}

async function rotateKey(state: EncryptedState, key: EncryptionKey): Promise<{ added: string; removed: string[] }> {
  const added = await addKey(state, key);
  let removed: string[] = [];
  await updateKeyring(state, async (keyring) => {
    removed = keyring.wraps.filter((w) => w.keyId !== added).map((w) => w.keyId);
    const kept = keyring.wraps.filter((w) => w.keyId === added);
    return removed.length > 0 && kept.length > 0 ? { dataKeyId: keyring.dataKeyId, wraps: kept } : undefined;
  });
  return { added, removed };
}

async function listKeys(state: EncryptedState): Promise<KeyringListing> {
  const found = await readKeyring(state.inner);
  if (!found) return { dataKeyId: undefined, keys: [] };
  const given = new Set(await keyIdsOf(state.keys, found.keyring));
  return {
    dataKeyId: found.keyring.dataKeyId,
    keys: found.keyring.wraps.map((w) => ({ keyId: w.keyId, kind: w.kdf ? 'passphrase' : 'raw', given: given.has(w.keyId) })),
  };
}

/** The key management of the store `state` describes. */
export function keyringOf(state: EncryptedState): EncryptedKeyring {
  return {
    list: () => listKeys(state),
    add: (key) => addKey(state, key),
    remove: (keyId) => removeKey(state, keyId),
    rotate: (key) => rotateKey(state, key),
  };
}
