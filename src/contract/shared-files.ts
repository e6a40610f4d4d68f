import { CheckpointError } from './errors.js';
import type { Profile } from './profile.js';
import type { StorageAdapter } from './storage.js';

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
