/**
 * A writer's recovery of a run reads `latest`, the index and the run's listing through the
 * store's linked read where it has one (the packed fs layout, PostgreSQL), in one round trip: a
 * missing `latest` comes with the run's keys, and a run with no file but its lock is not read
 * further. What it recovers must be what the reads one by one recover, whatever the run holds.
 */
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, type JsonValue, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { recoverRun } from '../../src/writer/sequence-recovery.js';
import { utf8Encode } from '../../src/codec/utf8.js';
import { manualClock } from '../support/clock.js';
import { countingReads } from '../support/counting-storage.js';
import { scratchFolder } from '../support/scratch.js';

const base = scratchFolder('recovery-linked');
let dirs = 0;

/** The same store without its linked read: recovery reads `latest`, the index and the listing one by one. */
function withoutLinkedRead(store: StorageAdapter): StorageAdapter {
  return {
    name: store.name,
    capabilities: { ...store.capabilities, linkedRead: false },
    get: (key, options) => store.get(key, options),
    put: (key, bytes, options) => store.put(key, bytes, options),
    delete: (key, options) => store.delete(key, options),
    list: (prefix) => store.list(prefix),
    batch: (operations) => store.batch!(operations),
    close: async () => undefined,
  };
}

async function writeRun(storage: StorageAdapter, runId: string, count: number): Promise<void> {
  const clock = manualClock();
  const w = createWriter<JsonValue>({ storage, profile: defaultProfile, runId, clock, heartbeatIntervalMs: false });
  for (let i = 1; i <= count; i++) {
    const r = await w.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: i } });
    if (!r.ok) throw r.error;
    await clock.advance(10_000);
  }
  await w.close();
}

const garbage = utf8Encode('{"not": "a snapshot"');

describe('recovery through the linked read', () => {
  it('property: a run with any of its files gone or unreadable (the index and latest too), another run beside it, a key named after the index: the same as the reads one by one', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.nat(4),
        fc.boolean(),
        fc.array(fc.tuple(fc.nat(), fc.constantFrom('delete', 'garbage')), { maxLength: 4 }),
        fc.boolean(),
        fc.boolean(),
        async (count, dropLatest, changes, neighbour, indexSibling) => {
          const storage = fsStorage({ dir: join(base, `p-${dirs++}`), layout: 'packed' });
          try {
            await writeRun(storage, 'run', count);
            if (neighbour) await writeRun(storage, 'run-2', 2);
            // A key under the index's own name: the index read as the first key there must be the index itself.
            if (indexSibling) await storage.put('checkpoints/run/index.json.old', utf8Encode('{"old": true}'));
            if (dropLatest) await storage.delete(defaultProfile.layout.latestKey('run'));
            const keys: string[] = [];
            for await (const e of storage.list('checkpoints/run/')) keys.push(e.key);
            for (const [at, change] of changes) {
              if (keys.length === 0) break;
              const key = keys[at % keys.length]!;
              if (change === 'delete') await storage.delete(key);
              else await storage.put(key, garbage);
            }
            const linked = await recoverRun(storage, defaultProfile, 'run');
            const oneByOne = await recoverRun(withoutLinkedRead(storage), defaultProfile, 'run');
            expect(linked).toEqual(oneByOne);
          } finally {
            await storage.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('a new run, and one whose only file is its lock, is read once: no index read, no listing', async () => {
    const storage = fsStorage({ dir: join(base, `n-${dirs++}`), layout: 'packed' });
    const counted = countingReads(storage);
    await writeRun(storage, 'other', 2);
    await storage.put('checkpoints/fresh/.savepoint-lock.json', utf8Encode('{}'));
    const recovered = await recoverRun(counted.store, defaultProfile, 'fresh');
    expect(counted.reads()).toBe(0);
    expect(recovered).toEqual({ lastSequence: 0, index: {}, unindexed: [], corrupt: [] });
    await storage.close();
  });

  it('a run with history: latest and its listing come in the linked read, no listing after (the packed layout leaves the index to one get)', async () => {
    const storage = fsStorage({ dir: join(base, `h-${dirs++}`), layout: 'packed' });
    await writeRun(storage, 'long', 40);
    const counted = countingReads(storage);
    const recovered = await recoverRun(counted.store, defaultProfile, 'long');
    expect(counted.reads()).toBe(1);
    expect(recovered.lastSequence).toBe(40);
    expect(recovered.index.doc?.checkpoints).toHaveLength(40);
    expect(recovered.head?.snapshot.sequence).toBe(40);
    expect(recovered).toEqual(await recoverRun(withoutLinkedRead(storage), defaultProfile, 'long'));
    await storage.close();
  });
});
