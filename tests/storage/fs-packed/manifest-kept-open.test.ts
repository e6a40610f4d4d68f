/**
 * The manifest a process read is kept open (manifest-inode.test.ts says why). A read that finds
 * another's new manifest while the store closes must not leave that descriptor (or the segments
 * it opens) open; a read whose rebuild of the index from a new manifest failed half way must read
 * that manifest again next time, not trust the index it left.
 */
import { constants, existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createPackedFsStorage } from '../../../src/storage/fs-packed/index.js';
import { realPackedIo, type PackedIo } from '../../../src/storage/fs-packed/io.js';
import { LOCK_NAME, SEAL_OWED_NAME } from '../../../src/storage/fs-packed/lock.js';
import { MANIFEST_NAME } from '../../../src/storage/fs-packed/manifest.js';
import { scratchFolder } from '../../support/scratch.js';

const base = scratchFolder('packed-manifest-kept');

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | undefined): string | undefined => (b ? new TextDecoder().decode(b) : undefined);

/** A promise and its resolve. */
function gate(): { readonly open: () => void; readonly opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** Resolves once no store holds the lock. */
async function lockFree(dir: string): Promise<void> {
  while (existsSync(join(dir, LOCK_NAME))) await new Promise((resolve) => setTimeout(resolve, 1));
}

/** The real calls, with the descriptors open counted and one open that `hook` may hold or fail. */
function watchedIo(hook: (path: string, flags: number) => Promise<void> | undefined): { io: PackedIo; open: Set<number> } {
  const open = new Set<number>();
  const io: PackedIo = {
    ...realPackedIo,
    async open(path, flags, mode) {
      await hook(path, flags);
      const fd = await realPackedIo.open(path, flags, mode);
      open.add(fd);
      return fd;
    },
    async close(fd) {
      open.delete(fd);
      await realPackedIo.close(fd);
    },
  };
  return { io, open };
}

/** Writes `k0` by `a` and has `a` write a new manifest (a seal owed, as after a broken lock: a rotation) with `k1`. */
async function rotateByOther(dir: string, a: ReturnType<typeof createPackedFsStorage>, before: () => Promise<void>): Promise<void> {
  await a.put('k0', bytes('0'));
  await before();
  await lockFree(dir);
  writeFileSync(join(dir, SEAL_OWED_NAME), '');
  await a.put('k1', bytes('1'));
  await lockFree(dir);
}

describe('the manifest kept open', () => {
  it('a read that finds a new manifest while the store closes leaves no descriptor open', async () => {
    const dir = mkdtempSync(join(base, 'close-'));
    let hold: Promise<void> | undefined;
    const reached = gate();
    const { io, open } = watchedIo((path, flags) => {
      if (!hold || !path.endsWith(MANIFEST_NAME) || flags !== constants.O_RDONLY) return undefined;
      reached.open();
      return hold;
    });
    const a = createPackedFsStorage({ dir, lingerMs: 0 });
    const b = createPackedFsStorage({ dir, lingerMs: 0 }, { io });
    try {
      await rotateByOther(dir, a, async () => void (await b.get('k0')));
      const letGo = gate();
      hold = letGo.opened;
      const read = b.get('k1').catch(() => undefined);
      await reached.opened;
      // The close goes as far as it goes without the read (all the way, when it does not wait for it).
      const closed = b.close();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 50))]);
      letGo.open();
      await Promise.all([read, closed]);

      expect([...open]).toEqual([]);
    } finally {
      await a.close();
    }
  });

  it('a read whose rebuild from a new manifest failed half way reads that manifest again next time', async () => {
    const dir = mkdtempSync(join(base, 'reload-'));
    let failNextSegment = false;
    const { io } = watchedIo((path) => {
      if (!failNextSegment || !path.includes('seg-')) return undefined;
      failNextSegment = false;
      return Promise.reject(Object.assign(new Error('injected fault in open'), { code: 'EIO', syscall: 'open' }));
    });
    const a = createPackedFsStorage({ dir, lingerMs: 0 });
    const b = createPackedFsStorage({ dir, lingerMs: 0 }, { io });
    try {
      await rotateByOther(dir, a, async () => void (await b.get('k0')));
      failNextSegment = true;
      await expect(b.get('k1')).rejects.toThrow(/injected fault/);

      expect(text((await b.get('k1'))?.bytes)).toBe('1');
      expect(text((await b.get('k0'))?.bytes)).toBe('0');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
