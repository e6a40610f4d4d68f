/**
 * Two instances of a journaled fsStorage on one directory (two processes, as far as the
 * journal is concerned) hand its lock over. An instance answers reads from its own records
 * only while the lock is its own; once it has renamed the lock away — its release is not
 * over yet — another instance may take the lock and commit, and a read must see that commit.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../src/storage/fs/fd.js';
import { createFsStorage } from '../../src/storage/fs/index.js';
import { gate } from '../support/rename-gate.js';
import { scratchDirs } from '../support/scratch.js';

const fresh = scratchDirs('fs-journal-handover');
const text = (s: string): Uint8Array => utf8Encode(s);
const gates: (() => void)[] = [];
afterEach(() => {
  for (const open of gates.splice(0)) open();
});

describe('fsStorage journal: reads right after an instance lets the journal lock go', () => {
  it("see the next holder's acknowledged write, not the file it has not applied yet (regression: the old value until the release was over)", async () => {
    const dir = fresh();
    const key = 'runs/b/latest.json';
    // The releasing instance: its clock jumps past the lock token's youth, so its release ends
    // by removing the token (an unlink through its io), which the gate holds.
    let ahead = 0;
    const clock: Clock = { ...systemClock, now: () => Date.now() + ahead };
    const unlinks = gate();
    gates.push(unlinks.open);
    let held = (): void => undefined;
    const atUnlink = new Promise<void>((r) => (held = r));
    const releasingIo: FsIo = {
      ...realIo,
      unlink: async (path) => {
        const waiting = unlinks.wait();
        if (waiting) {
          held();
          await waiting;
        }
        return realIo.unlink(path);
      },
    };
    const releasing = createFsStorage({ dir, journal: true, clock }, { io: releasingIo, journalLingerMs: 2 });
    // The next holder: its applies wait, so its write is in its journal record only.
    const renames = gate();
    gates.push(renames.open);
    const nextIo: FsIo = {
      ...realIo,
      rename: async (from, to) => {
        await renames.wait();
        return realIo.rename(from, to);
      },
    };
    const next = createFsStorage({ dir, journal: true }, { io: nextIo, journalLingerMs: 60_000 });
    await Promise.all([releasing.ready(), next.ready()]);

    await releasing.put(key, text('value 7'));
    ahead = 30 * 60_000;
    unlinks.close();
    renames.close();
    // The linger timer lets the lock go: renamed away, then the token's unlink waits at the gate.
    await atUnlink;
    await next.put(key, text('value 10'));
    expect(readFileSync(join(dir, key), 'utf8'), 'not applied yet').toBe('value 7');
    const seen = await releasing.get(key);
    expect(seen && utf8Decode(seen.bytes)).toBe('value 10');

    unlinks.open();
    renames.open();
    await Promise.all([releasing.flush!(), next.flush!()]);
    await Promise.all([releasing.close(), next.close()]);
    expect(readFileSync(join(dir, key), 'utf8')).toBe('value 10');
  });
});
