/**
 * The fs journal under a full disk: a store whose file writes fail with ENOSPC answers with
 * typed errors, and closing it releases every file it holds even though its last checkpoint
 * fails (regression: the journal lock's token and the pooled temp files stayed open, and the
 * campaign's full tmpfs could not be unmounted).
 */
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CheckpointError } from 'savepoint';
import { utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
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
  });
});
