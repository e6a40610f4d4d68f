import type { Profile } from '../contract/profile.js';
import { readTooLarge } from '../contract/read-limit.js';
import type { StorageAdapter, StoredObject } from '../contract/storage.js';

/**
 * The most bytes a stored snapshot file (a history entry, `latest`, a batch file, a part) may
 * take: the profile's `maxSnapshotBytes`, which no document the writer stores exceeds, plus
 * room for gzip's framing of an incompressible document at the limit. Readers refuse a larger
 * file from its size, before reading it (a gzipped one is capped at the same limit as it inflates).
 */
export function documentReadLimit(profile: Pick<Profile<unknown>, 'maxSnapshotBytes'>): number {
  const max = profile.maxSnapshotBytes;
  return max + Math.ceil(max / 1024) + 64;
}

/**
 * The most bytes a run index may take: an index lists a run's history, one short entry per
 * snapshot, and may outgrow one snapshot on a profile that keeps whole runs.
 */
export function indexReadLimit(profile: Pick<Profile<unknown>, 'maxSnapshotBytes'>): number {
  return 16 * documentReadLimit(profile);
}

/**
 * `storage.get(key)` with a size limit: the adapter refuses a larger value from its size when it
 * can (fs: from `stat`, unread), and a value an adapter returned anyway is refused here, so every
 * store answers alike: `checkpoint_too_large` naming the key and the limit.
 */
export async function getBounded(storage: StorageAdapter, key: string, maxBytes: number): Promise<StoredObject | undefined> {
  const stored = await storage.get(key, { maxBytes });
  if (stored && stored.bytes.length > maxBytes) throw readTooLarge(key, stored.bytes.length, maxBytes, "the profile's read limit");
  return stored;
}
