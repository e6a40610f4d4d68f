/**
 * The fs journal under a full disk: a store whose file writes fail with ENOSPC answers with
 * typed errors, and closing it releases every file it holds even though its last checkpoint
 * fails (regression: the journal lock's token and the pooled temp files stayed open, and the
 * campaign's full tmpfs could not be unmounted). And on a read-only disk: an empty journal
 * opens for reads, writes fail typed; a journal holding records refuses to open, saying what
 * to do (regression: every call failed with `cannot open fsStorage directory: EROFS`).
 */
import { closeSync, constants, openSync, readdirSync, readFileSync, readlinkSync, realpathSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from 'savepoint';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { encodeRecord, JOURNAL_NAME } from '../../../src/storage/fs/journal/index.js';
import { utf8Decode } from '../../../src/codec/utf8.js';
import { scratchDirs } from '../../support/scratch.js';

const fresh = scratchDirs('fs-journal-faults');

/** Descriptors of this process open on files under `dir`. */
function openUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(`${dir}/`)) out.push(target.slice(dir.length + 1));
    } catch {
      // closed meanwhile
    }
  }
  return out;
}

describe.runIf(process.platform === 'linux')('fsStorage journal on a full disk', () => {
  it('answers with CheckpointErrors and, closed, holds no file open', async () => {
    const dir = realpathSync(fresh());
    let full = false;
    const enospc = (): Error => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write' });
    const io: FsIo = {
      ...realIo,
      write: (fd, bytes) => (full ? Promise.reject(enospc()) : realIo.write(fd, bytes)),
      writeAt: (fd, bytes, at) => (full ? Promise.reject(enospc()) : realIo.writeAt(fd, bytes, at)),
    };
    const store = createFsStorage({ dir, journal: true }, { io, journalLingerMs: 1 });
    await store.put('runs/a/one', utf8Encode('1'));
    full = true;
    const failed = await store.put('runs/a/two', utf8Encode('2')).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failed).toBeInstanceOf(CheckpointError);
    await store.close().catch(() => undefined);
    expect(openUnder(dir)).toEqual([]);
    // Opened again on the full disk with a record it cannot replay: reads answer the record, writes fail typed, and closed it holds nothing open.
    const jfd = openSync(join(dir, JOURNAL_NAME), 'r+');
    writeSync(jfd, encodeRecord([['p', 'runs/a/one', 1, '1000.1.1']], [utf8Encode('3')], 9), 0, undefined, 0);
    closeSync(jfd);
    const again = createFsStorage({ dir, journal: true }, { io });
    expect(utf8Decode((await again.get('runs/a/one'))!.bytes)).toBe('3');
    await expect(again.put('runs/a/four', utf8Encode('4'))).rejects.toBeInstanceOf(CheckpointError);
    await again.close().catch(() => undefined);
    expect(openUnder(dir)).toEqual([]);
    // Room again: the record is replayed into the file.
    full = false;
    const roomy = createFsStorage({ dir, journal: true });
    expect(utf8Decode((await roomy.get('runs/a/one'))!.bytes)).toBe('3');
    await roomy.close();
    expect(readFileSync(join(dir, 'runs/a/one'), 'utf8')).toBe('3');
  });
});

const erofs = (syscall: string): Error => Object.assign(new Error(`EROFS: read-only file system, ${syscall}`), { code: 'EROFS', syscall });
/** The store's calls as on a read-only mount: nothing is created, written, renamed or removed. */
const readOnlyIo: FsIo = {
  ...realIo,
  open: (path, flags, mode) =>
    flags & (constants.O_CREAT | constants.O_WRONLY | constants.O_RDWR) ? Promise.reject(erofs('open')) : realIo.open(path, flags, mode),
  write: () => Promise.reject(erofs('write')),
  writeAt: () => Promise.reject(erofs('write')),
  rename: () => Promise.reject(erofs('rename')),
  unlink: () => Promise.reject(erofs('unlink')),
  mkdir: () => Promise.reject(erofs('mkdir')),
  futimes: () => Promise.reject(erofs('futimes')),
};

describe('fsStorage journal on a read-only disk', () => {
  it('with an empty journal: reads answer, writes fail with a CheckpointError', async () => {
    const dir = fresh();
    const rw = createFsStorage({ dir, journal: true });
    await rw.put('runs/a/one', utf8Encode('1'));
    await rw.close();
    const ro = createFsStorage({ dir, journal: true, cleanupOnOpen: false }, { io: readOnlyIo });
    try {
      expect(utf8Decode((await ro.get('runs/a/one'))!.bytes)).toBe('1');
      await expect(ro.put('runs/a/two', utf8Encode('2'))).rejects.toBeInstanceOf(CheckpointError);
    } finally {
      await ro.close().catch(() => undefined);
    }
  });

  it('with records not yet applied: opening is refused, saying to mount it read-write', async () => {
    const dir = fresh();
    const rw = createFsStorage({ dir, journal: true });
    await rw.put('runs/a/one', utf8Encode('1'));
    await rw.close();
    // A record a writer committed and did not apply before it stopped.
    const record = encodeRecord([['p', 'runs/a/one', 1]], [utf8Encode('2')], 7);
    writeFileSync(join(dir, JOURNAL_NAME), record);
    const ro = createFsStorage({ dir, journal: true, cleanupOnOpen: false }, { io: readOnlyIo });
    const err = await ro.get('runs/a/one').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CheckpointError);
    expect((err as CheckpointError).message).toMatch(/read-write/);
    await ro.close().catch(() => undefined);
  });
});
