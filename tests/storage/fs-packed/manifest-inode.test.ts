/**
 * A process tells a rewritten manifest (another process rotated or compacted) by its inode. A file
 * system gives a freed inode's number to a new file (ext4 does, soon after the old file went): a
 * manifest written after the one a process read may carry that number. The process must still see
 * the new manifest — else, holding the lock, it appends to a segment the other process sealed
 * (past its sealed length, where nobody reads: acknowledged writes lost) and misses what the other
 * wrote. The file system here reuses numbers as harshly as it may: a new manifest takes the number
 * of an earlier manifest whose file is gone (no name, no open descriptor).
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BigIntStats } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { LOCK_NAME, SEAL_OWED_NAME } from '../../../src/storage/fs-packed/lock.js';
import { MANIFEST_NAME } from '../../../src/storage/fs-packed/manifest.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('packed-manifest-inode');

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

/** The packed io of every store on `dir`, on a file system that gives a new manifest a gone manifest's inode number. */
function reusingManifestInodes(dir: string): PackedIo {
  const manifestPath = join(dir, MANIFEST_NAME);
  const openFds = new Map<number, { path: string; ino: bigint }>();
  const shown = new Map<bigint, bigint>(); // real inode → the number shown
  const manifests: bigint[] = []; // real inodes that were manifests, oldest first
  const renamedOver = new Set<bigint>(); // manifests a rename replaced: no name left
  // Gone: replaced, and not open through a descriptor opened at the manifest's name.
  const gone = (real: bigint): boolean =>
    renamedOver.has(real) && ![...openFds.values()].some((f) => f.path === manifestPath && f.ino === real);
  const shownFor = (real: bigint, isManifest: boolean): bigint => {
    let number = shown.get(real);
    if (number === undefined) {
      const reused = isManifest ? manifests.find(gone) : undefined;
      number = reused === undefined ? real : shown.get(reused)!;
      shown.set(real, number);
      if (isManifest) manifests.push(real);
    }
    return number;
  };
  const withIno = (st: BigIntStats, ino: bigint): BigIntStats =>
    new Proxy(st, { get: (target, key) => (key === 'ino' ? ino : Reflect.get(target, key)) as unknown });
  return {
    ...realPackedIo,
    async open(path, flags, mode) {
      const fd = await realPackedIo.open(path, flags, mode);
      openFds.set(fd, { path, ino: (await realPackedIo.fstat(fd)).ino });
      return fd;
    },
    async close(fd) {
      openFds.delete(fd);
      await realPackedIo.close(fd);
    },
    async rename(from, to) {
      const replaced = to === manifestPath ? realPackedIo.inodeSync(to) : undefined;
      await realPackedIo.rename(from, to);
      if (replaced !== undefined) renamedOver.add(replaced);
    },
    async fstat(fd) {
      const st = await realPackedIo.fstat(fd);
      return withIno(st, shownFor(st.ino, openFds.get(fd)?.path === manifestPath));
    },
    async stat(path) {
      const st = await realPackedIo.stat(path);
      return withIno(st, shownFor(st.ino, path === manifestPath));
    },
    inodeSync(path) {
      const ino = realPackedIo.inodeSync(path);
      return ino === undefined ? undefined : shownFor(ino, path === manifestPath);
    },
  };
}

/** Resolves once no store holds the lock (each lets it go lingerMs after its last group). */
async function lockFree(dir: string): Promise<void> {
  while (existsSync(join(dir, LOCK_NAME))) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe('the packed store, on a file system that reuses inode numbers', () => {
  it("a process sees another's rotation whatever inode number the new manifest has: its writes land in the active segment, and it reads the other's", async () => {
    const dir = mkdtempSync(join(base, 'reuse-'));
    const io = reusingManifestInodes(dir);
    const a = createPackedFsStorage({ dir, lingerMs: 0 }, { io });
    const b = createPackedFsStorage({ dir, lingerMs: 0 }, { io });
    try {
      await a.put('k0', bytes('0'));
      await b.put('k1', bytes('1'));
      await lockFree(dir);
      // A seal owed (as after a broken lock): b's next hold seals the active segment and writes a new manifest.
      writeFileSync(join(dir, SEAL_OWED_NAME), '');
      await b.put('k2', bytes('2'));
      await lockFree(dir);
      await a.put('k3', bytes('3'));

      const fresh = createPackedFsStorage({ dir });
      try {
        for (const n of [0, 1, 2, 3]) expect(text((await fresh.get(`k${n}`))?.bytes), `k${n}`).toBe(String(n));
      } finally {
        await fresh.close();
      }
      expect(text((await a.get('k2'))?.bytes)).toBe('2');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
