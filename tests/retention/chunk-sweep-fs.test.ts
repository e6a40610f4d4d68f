/**
 * How a chunk sweep acts on fs: on the journal it hides chunks by move (a rename of the chunk's
 * file, through a journal record of its own), where it once copied each chunk and removed it;
 * in direct mode (no batch, no move) one call at a time. Either way every kept checkpoint reads back, and a later sweep deletes the copies.
 * Many unreferenced chunks go in a few records (`moveMany`, 64 a record), not one a chunk.
 */
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, memoryStorage, sweepChunks, type JsonValue, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { fsStorage } from 'savepoint/fs';
import { manualClock } from 'savepoint/testing';
import { CHUNK_PREFIX, chunkKey } from '../../src/codec/chunking.js';
import { forgetChunks } from '../../src/snapshot-io/chunk-store.js';
import { createFsStorage } from '../../src/storage/fs/index.js';
import { canBatch } from '../../src/retention/chunk-sweep-batches.js';
import { countingIo } from '../support/journal-records.js';
import { prose } from '../support/prose.js';
import { scratchDirs } from '../support/scratch.js';

const fresh = scratchDirs('chunk-sweep-fs');
const GRACE = 60 * 60 * 1000;

/** Six checkpoints of one run, each replacing three messages; the first four deleted: what only they referenced is unreferenced. */
async function scene(storage: StorageAdapter): Promise<Map<string, JsonValue>> {
  const writer = createWriter({
    storage,
    profile: defaultProfile,
    runId: 'r',
    heartbeatIntervalMs: false,
    lock: false,
    autoRetention: false,
  });
  const messages = Array.from({ length: 12 }, (_, i) => prose(i + 1, 1800));
  const kept = new Map<string, JsonValue>();
  for (let n = 0; n < 6; n++) {
    // Three messages a checkpoint: a replaced message's leaves end where it does, so each leaves little else unreferenced.
    for (let k = 0; k < 3; k++) messages[(n * 5 + k * 4) % messages.length] = prose(100 + n * 3 + k, 1800);
    const payload = { messages: [...messages], n };
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload });
    if (!r.ok) throw r.error;
    kept.set(r.key!, payload);
  }
  await writer.close();
  for (const key of [...kept.keys()].slice(0, 4)) {
    await storage.delete(key);
    kept.delete(key);
  }
  kept.set('checkpoints/r/latest.json', [...kept.values()].at(-1)!);
  return kept;
}

async function expectKept(storage: StorageAdapter, kept: Map<string, JsonValue>): Promise<void> {
  forgetChunks(storage);
  for (const [key, payload] of kept) expect((await readSnapshot(storage, defaultProfile, key))?.payload, key).toEqual(payload);
}

describe('chunk sweep on fs', () => {
  it('goes in batches on a store whose acknowledged batch is durable (fs journal, memory), one call at a time where writes are held or there is no batch', async () => {
    const journal = fsStorage({ layout: 'files', dir: fresh() });
    const direct = fsStorage({ dir: fresh(), journal: false });
    const memory = memoryStorage();
    // A store that holds acknowledged writes until flush() (as GitHub's): a copy must be durable before its chunk goes.
    const holding: StorageAdapter = { ...memory, flush: () => Promise.resolve() } as StorageAdapter;
    // One whose flush() only waits for what it made durable already (as fs's journal): it holds nothing.
    const applying: StorageAdapter = { ...memory, flush: () => Promise.resolve(), applied: () => Promise.resolve() } as StorageAdapter;
    try {
      expect(canBatch(journal)).toBe(true);
      expect(canBatch(direct)).toBe(false);
      expect(canBatch(holding)).toBe(false);
      expect(canBatch(applying)).toBe(true);
    } finally {
      await Promise.all([journal.close(), direct.close()]);
    }
  });

  it("on the journal, hides chunks by move: each hidden copy is the chunk's file renamed (no new file, no copy of the bytes), and every kept checkpoint reads back", async () => {
    const dir = fresh();
    const seeding = fsStorage({ layout: 'files', dir });
    const kept = await scene(seeding);
    await seeding.close();
    const inodes = new Map<string, number>();
    const counted = countingIo();
    const storage = createFsStorage({ layout: 'files', dir }, { io: counted.io });
    for (const e of await listAll(storage, CHUNK_PREFIX)) inodes.set(e.key, statSync(join(dir, e.key)).ino);
    const clock = manualClock(0);
    try {
      const before = counted.records();
      const report = await sweepChunks(storage, { clock, graceMs: GRACE });
      const records = counted.records() - before;
      expect(report.hidden.length).toBeGreaterThan(8);
      // By copy, one call per chunk made two records per chunk that no group commit shared (8 here, for some 10 chunks).
      expect(records).toBeLessThan(report.hidden.length);
      await storage.flush!();
      const chunks = (await listAll(storage, CHUNK_PREFIX)).map((e) => e.key);
      for (const id of report.hidden) {
        const mine = chunks.filter((k) => k.includes(id));
        expect(mine).toHaveLength(1);
        expect(mine[0]).toContain('.hidden-');
        const home = [...inodes.keys()].find((k) => k.includes(id))!;
        expect(statSync(join(dir, mine[0]!)).ino, id).toBe(inodes.get(home));
      }
      await expectKept(storage, kept);
      await clock.advance(GRACE);
      const later = await sweepChunks(storage, { clock, graceMs: GRACE });
      expect(later.deleted).toHaveLength(report.hidden.length);
      expect((await listAll(storage, CHUNK_PREFIX)).filter((e) => e.key.includes('.hidden-'))).toEqual([]);
      await expectKept(storage, kept);
    } finally {
      await storage.close();
    }
    // Opened again (the journal replayed): the same.
    const reopened = fsStorage({ layout: 'files', dir });
    try {
      expect((await listAll(reopened, CHUNK_PREFIX)).filter((e) => e.key.includes('.hidden-'))).toEqual([]);
    } finally {
      await reopened.close();
    }
  });

  it('on the journal, hides many unreferenced chunks in a few records (many moves a record), not one a chunk', async () => {
    const dir = fresh();
    const counted = countingIo();
    const storage = createFsStorage({ layout: 'files', dir }, { io: counted.io });
    try {
      const ids = Array.from({ length: 150 }, (_, i) => createHash('sha256').update(`chunk ${i}`).digest('hex'));
      await storage.batch!(ids.map((id, i) => ({ type: 'put' as const, key: chunkKey(id), bytes: new Uint8Array(600).fill(i) })));
      const before = counted.records();
      const report = await sweepChunks(storage, { clock: manualClock(0), graceMs: GRACE });
      expect(report.hidden).toHaveLength(ids.length);
      expect(counted.records() - before).toBeLessThanOrEqual(Math.ceil(ids.length / 64));
      await storage.flush!();
      expect((await listAll(storage, CHUNK_PREFIX)).every((e) => e.key.includes('.hidden-'))).toBe(true);
    } finally {
      await storage.close();
    }
  });
});
