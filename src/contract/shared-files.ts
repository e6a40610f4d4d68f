import { CheckpointError } from './errors.js';
import type { Profile } from './profile.js';
import { declareReadersOf, type StorageAdapter, type StoreReaders } from './storage.js';

/**
 * Refuses a profile whose files other tools read (`profile.sharedFiles`) on a store that
 * holds values no other tool can read (`capabilities.opaqueValues`), unless the store's user
 * accepted it (`capabilities.sharedFilesAccepted`): the writer and resume call it, so neither
 * knows which stores are opaque nor which profiles are shared.
 */
export function assertStoreServesProfile(storage: StorageAdapter, profile: Pick<Profile, 'name' | 'sharedFiles'>, where: string): void {
  const caps = storage.capabilities;
  if (profile.sharedFiles === undefined || caps?.opaqueValues !== true || caps.sharedFilesAccepted === true) return;
  throw new CheckpointError(
    'checkpoint_unsupported',
    `${where}: profile "${profile.name}" writes files other tools read (${profile.sharedFiles}), and store "${storage.name}" ` +
      `holds them in a form those tools cannot read (encrypted, or packed into segment files). Use a profile savepoint alone reads ` +
      `(defaultProfile, jsonProfile, langGraphProfile), or accept it on the store where it offers that (encryptedStorage's sharedFiles: 'accept')`,
    { details: { profile: profile.name, storage: storage.name } },
  );
}

/** Who reads what `profile` writes: other tools too when its files are shared (`sharedFiles`), else savepoint alone. */
export function readersOfProfile(profile: Pick<Profile, 'sharedFiles'>): StoreReaders {
  return profile.sharedFiles === undefined ? 'savepoint' : 'other-tools';
}

/**
 * Tells `storage` who reads what `profile` writes ({@link StorageAdapter.declareReaders}), then
 * refuses the pair as {@link assertStoreServesProfile} does: the entries that write or resume with
 * a profile call it before they read the store's capabilities.
 */
export function declareAndAssertProfileStore(storage: StorageAdapter, profile: Pick<Profile, 'name' | 'sharedFiles'>, where: string): void {
  declareReadersOf(storage, readersOfProfile(profile));
  assertStoreServesProfile(storage, profile, where);
}
