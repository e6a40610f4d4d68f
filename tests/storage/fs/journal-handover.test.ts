/**
 * Two instances of a journaled fsStorage on one directory (two processes, as far as the
 * journal is concerned) hand its lock over. An instance answers reads from its own records
 * only while the lock is its own; once it has renamed the lock away — its release is not
 * over yet — another instance may take the lock and commit, and a read must see that commit.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock, type Clock } from 'savepoint';
import { utf8Decode, utf8Encode } from '../../../src/codec/utf8.js';
import { realIo, type FsIo } from '../../../src/storage/fs/fd.js';
import { createFsStorage } from '../../../src/storage/fs/index.js';
import { gate, heldAt } from '../../support/rename-gate.js';
import { scratchDirs } from '../../support/scratch.js';

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
    const releasingIo: FsIo = { ...realIo, unlink: heldAt(unlinks, realIo.unlink, () => held()) };
    const releasing = createFsStorage({ dir, journal: true, clock }, { io: releasingIo, journalLingerMs: 2 });
    // The next holder: its applies wait, so its write is in its journal record only.
    const renames = gate();
    gates.push(renames.open);
    const nextIo: FsIo = { ...realIo, rename: heldAt(renames, realIo.rename) };
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

  it('come after every commit of the releasing holder is applied, one made while its release waited for a checkpoint included (regression: released with that commit unapplied)', async () => {
    const dir = fresh();
    const fsyncs = gate();
    const renames = gate();
    gates.push(fsyncs.open, renames.open);
    let syncing = 0;
    const releasingIo: FsIo = { ...realIo, fsync: heldAt(fsyncs, realIo.fsync, () => syncing++), rename: heldAt(renames, realIo.rename) };
    // Small journal files: the first put fills one, and its checkpoint runs in the background.
    const releasing = createFsStorage({ dir, journal: true, journalCheckpointBytes: 150 }, { io: releasingIo, journalLingerMs: 2 });
    const other = createFsStorage({ dir, journal: true }, { journalLingerMs: 2 });
    await Promise.all([releasing.ready(), other.ready()]);
    const lockFile = join(dir, '.sp\\lock-\\journal');

    fsyncs.close();
    await releasing.put('runs/a/latest.json', text(`first ${'x'.repeat(200)}`));
    // The background checkpoint is at its fsyncs; the linger timer's release waits for it.
    for (let i = 0; i < 20_000 && syncing === 0; i++) await new Promise((r) => setImmediate(r));
    expect(syncing).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 20));
    // A commit while the release waits: acknowledged, its apply held back.
    renames.close();
    await releasing.put('runs/b/latest.json', text('second'));
    expect(existsSync(join(dir, 'runs/b/latest.json'))).toBe(false);
    // The checkpoint ends; the release goes on, and must not let the lock go before that commit's file is there.
    fsyncs.open();
    for (let i = 0; i < 50 && existsSync(lockFile); i++) await new Promise((r) => setTimeout(r, 2));
    const seen = await other.get('runs/b/latest.json');
    expect(seen && utf8Decode(seen.bytes)).toBe('second');

    renames.open();
    await Promise.all([releasing.flush!(), other.flush!()]);
    await Promise.all([releasing.close(), other.close()]);
    expect(readFileSync(join(dir, 'runs/b/latest.json'), 'utf8')).toBe('second');
  });
});
