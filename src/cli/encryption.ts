import { readFile } from 'node:fs/promises';
import type { StorageAdapter } from '../contract/storage.js';
import { encryptedStorage, holdsEncryptedStore, type EncryptedStorage } from '../storage/encrypted/encrypted-storage.js';
import { EncryptionKey } from '../storage/encrypted/encryption-key.js';
import { decodeKeyring, KEYRING_KEY } from '../storage/encrypted/keyring.js';
import { readHeader } from '../storage/encrypted/value-format.js';
import { CliError, EXIT, printJson, type CliIo } from './io.js';

/**
 * The CLI's side of encrypted stores: the key from `--key-file` or `SAVEPOINT_KEY`, the store
 * opened through `encryptedStorage` when it holds a keyring (or a key is given), and what
 * `verify` checks without a key. No key, passphrase or plaintext is ever printed.
 */

/** The user key given to the CLI, if any: `--key-file PATH` (its text) or `SAVEPOINT_KEY`. */
export async function cliKey(
  values: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): Promise<EncryptionKey | undefined> {
  const file = values['key-file'];
  if (typeof file === 'string') {
    const text = await readFile(file, 'utf8').catch(() => {
      throw new CliError(`--key-file: cannot read ${file}`);
    });
    return EncryptionKey.fromText(text);
  }
  const text = env.SAVEPOINT_KEY;
  return text !== undefined && text !== '' ? EncryptionKey.fromText(text) : undefined;
}

/** Encrypted stores the CLI opened without a key: reads of their values fail with checkpoint_encryption_key_missing. */
const keyless = new WeakSet<StorageAdapter>();

/** The store as commands see it: `inner` through `encryptedStorage` when it is encrypted or a key is given, else `inner` itself. */
export async function openEncrypted(inner: StorageAdapter, key: EncryptionKey | undefined): Promise<StorageAdapter> {
  if (!key && !(await holdsEncryptedStore(inner))) return inner;
  // The CLI inspects what the user names: it serves any profile, spec profiles included.
  const store = encryptedStorage(inner, { keys: key ? [key] : [], sharedFiles: 'accept' });
  if (!key) keyless.add(store);
  return store;
}

/** True when `storage` is an encrypted store the CLI opened without a key. */
export function lockedEncrypted(storage: StorageAdapter): storage is EncryptedStorage {
  return keyless.has(storage);
}

/**
 * `verify` on an encrypted store without a key: what can be checked without it — the keyring
 * parses, and every value carries a well-formed header naming the store's data key — and a
 * plain statement that the contents are encrypted and were not verified.
 */
export async function verifyWithoutKey(storage: EncryptedStorage, io: CliIo, json: boolean): Promise<number> {
  const inner = storage.inner;
  const keyring = decodeKeyring((await inner.get(KEYRING_KEY))!.bytes);
  const problems: { key: string; problem: string }[] = [];
  let values = 0;
  for await (const entry of inner.list('')) {
    if (entry.key === KEYRING_KEY) continue;
    values++;
    const stored = await inner.get(entry.key);
    if (!stored) continue;
    const header = readHeader(stored.bytes);
    if (typeof header === 'string') problems.push({ key: entry.key, problem: `not an encrypted value (${header})` });
    else if (header.dataKeyId !== keyring.dataKeyId)
      problems.push({ key: entry.key, problem: `names data key ${header.dataKeyId}, not the store's` });
  }
  const keyIds = keyring.wraps.map((w) => w.keyId);
  if (json) printJson(io, { encrypted: true, contentsVerified: false, dataKeyId: keyring.dataKeyId, keyIds, values, problems });
  else {
    for (const p of problems) io.stdout.write(`${p.key}: ${p.problem}\n`);
    io.stdout.write(
      `encrypted store (data key ${keyring.dataKeyId}, opened by key id ${keyIds.join(', ')}): ${values} values, ` +
        `${problems.length} with a bad header. Their contents are encrypted and were not verified: ` +
        `give the key (--key-file PATH or SAVEPOINT_KEY) to verify them.\n`,
    );
  }
  return problems.length > 0 ? EXIT.failed : EXIT.ok;
}

/** A store's keyring commands need an encrypted store. */
export function requireEncrypted(storage: StorageAdapter): EncryptedStorage {
  if (!('keyring' in storage))
    throw new CliError('this store is not encrypted (no keyring); give --key-file or SAVEPOINT_KEY to write an encrypted one');
  return storage as EncryptedStorage;
}
