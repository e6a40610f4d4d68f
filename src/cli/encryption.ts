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
 * parses, and every value carries a well-formed header naming the store's data key (a shared
 * value names its two keys' tags instead, which only a key checks) — and a
 * plain statement that the contents are encrypted and were not verified.
 */
export async function verifyWithoutKey(storage: EncryptedStorage, profile: string, io: CliIo, json: boolean): Promise<number> {
  const inner = storage.inner;
  const keyring = decodeKeyring((await inner.get(KEYRING_KEY))!.bytes);
  const findings: { key: string; level: 'problem'; reasonCode: 'checkpoint_integrity_mismatch'; message: string }[] = [];
  let checked = 0;
  for await (const entry of inner.list('')) {
    if (entry.key === KEYRING_KEY) continue;
    const stored = await inner.get(entry.key);
    if (!stored) continue;
    checked++;
    const header = readHeader(stored.bytes);
    const problem =
      typeof header === 'string'
        ? `not an encrypted value (${header})`
        : 'dataKeyId' in header && header.dataKeyId !== keyring.dataKeyId
          ? `names data key ${header.dataKeyId}, not the store's`
          : undefined;
    if (problem) findings.push({ key: entry.key, level: 'problem', reasonCode: 'checkpoint_integrity_mismatch', message: problem });
  }
  const keyIds = keyring.wraps.map((w) => w.keyId);
  const hint = `the contents are encrypted and were not verified: give the key (--key-file PATH or SAVEPOINT_KEY) to verify them`;
  if (json)
    printJson(io, {
      profile,
      checked,
      problems: findings.length,
      hint,
      findings,
      encrypted: true,
      contentsVerified: false,
      dataKeyId: keyring.dataKeyId,
      keyIds,
    });
  else {
    for (const f of findings) io.stdout.write(`${f.key}: ${f.message}\n`);
    io.stdout.write(
      `encrypted store (data key ${keyring.dataKeyId}, opened by key id ${keyIds.join(', ')}): ${checked} values, ` +
        `${findings.length} with a bad header; ${hint}.\n`,
    );
  }
  return findings.length > 0 ? EXIT.failed : EXIT.ok;
}

/** A store's keyring commands need an encrypted store. */
export function requireEncrypted(storage: StorageAdapter): EncryptedStorage {
  if (!('keyring' in storage))
    throw new CliError('this store is not encrypted (no keyring); give --key-file or SAVEPOINT_KEY to write an encrypted one');
  return storage as EncryptedStorage;
}
