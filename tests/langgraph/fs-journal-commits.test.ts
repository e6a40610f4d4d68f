/**
 * What SavepointSaver costs fsStorage's journal per superstep, counted in journal records: each
 * one is a durable write (O_DSYNC) the superstep waits for, as a statement is on PostgreSQL
 * (postgres-cost.process.test.ts). The journal holds no write (its flush only waits for files
 * already durable in it), so a checkpoint's head claim rides in the checkpoint's own batch, also
 * through encryptedStorage over it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { encryptedStorage, EncryptionKey } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { createFsStorage, type FsStorage } from '../../src/storage/fs/index.js';
import { scratchDirs } from '../support/scratch.js';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';
import { countingIo } from '../support/journal-records.js';

const fresh = scratchDirs('lg-fs-commits');

const stores: FsStorage[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

describe('SavepointSaver on fsStorage (journal): journal records per superstep', () => {
  it('two: the writes, and the checkpoint with its head claim in one batch (not a commit of its own)', async () => {
    const counted = countingIo();
    const storage = createFsStorage({ layout: 'files', dir: fresh() }, { io: counted.io });
    stores.push(storage);
    const saver = new SavepointSaver({ storage });
    const cursor: Cursor = { config: { configurable: { thread_id: 'known', checkpoint_ns: '' } }, step: 0 };
    for (let i = 0; i < 3; i++) await superstep(saver, cursor);
    const before = counted.records();
    for (let i = 0; i < 10; i++) await superstep(saver, cursor);
    expect(counted.records() - before).toBe(20);
    // The claims held: a fresh saver (and a fresh store on the directory) finds the newest checkpoint at its sequence.
    const newest = await new SavepointSaver({ storage }).getTuple({ configurable: { thread_id: 'known' } });
    expect(newest?.config.configurable?.['checkpoint_id']).toBe(cursor.config.configurable?.['checkpoint_id']);
  });

  it('encryptedStorage over the journal: two as well (regression: the claim cost a record of its own, three a superstep)', async () => {
    const counted = countingIo();
    const storage = createFsStorage({ layout: 'files', dir: fresh() }, { io: counted.io });
    stores.push(storage);
    const saver = new SavepointSaver({ storage: encryptedStorage(storage, { keys: [EncryptionKey.generate()] }) });
    const cursor: Cursor = { config: { configurable: { thread_id: 'sealed', checkpoint_ns: '' } }, step: 0 };
    for (let i = 0; i < 3; i++) await superstep(saver, cursor);
    const before = counted.records();
    for (let i = 0; i < 10; i++) await superstep(saver, cursor);
    expect(counted.records() - before).toBe(20);
  });

  it('a new thread: its first checkpoint (head created with it) is one record', async () => {
    const counted = countingIo();
    const storage = createFsStorage({ layout: 'files', dir: fresh() }, { io: counted.io });
    stores.push(storage);
    const saver = new SavepointSaver({ storage });
    const thread = { configurable: { thread_id: 'new-thread', checkpoint_ns: '' } };
    expect(await saver.getTuple(thread)).toBeUndefined();
    const cursor: Cursor = { config: thread, step: 0 };
    const before = counted.records();
    await superstep(saver, cursor);
    expect(counted.records() - before).toBe(1);
  });
});
