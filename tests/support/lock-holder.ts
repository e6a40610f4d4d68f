/**
 * Whether process `pid` holds the lock at `lockPath`: the fs store's locks (key locks, the
 * journal lock, the packed store's lock) are a hard link of the holder's temp file
 * (`.sp\\tmp-<...>-<pid>-...`) in `dir`, so the holder is the process whose temp file has the lock's inode.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function lockHeldBy(dir: string, lockPath: string, pid: number): boolean {
  let ino: bigint;
  try {
    ino = lstatSync(lockPath, { bigint: true }).ino;
  } catch {
    return false;
  }
  return readdirSync(dir).some((name) => {
    if (!name.startsWith('.sp\\tmp-') || name.split('-')[2] !== String(pid)) return false;
    try {
      return lstatSync(join(dir, name), { bigint: true }).ino === ino;
    } catch {
      return false;
    }
  });
}
