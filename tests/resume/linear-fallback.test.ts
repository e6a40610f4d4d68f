import { describe, expect, it } from 'vitest';
import { memoryStorage, planResume, type StorageAdapter } from 'savepoint';
import { toRfc3339, type RunIndexEntry } from 'savepoint/toolkit';
import { indexEntry, putIndex, writeRun } from '../support/runs.js';
import { phasedState, phasedTestProfile } from '../support/profiles.js';
import { T0 } from '../support/clock.js';

// When the index names files that are missing, the history fallback used to be
// quadratic (100k entries: 160 s; 1M did not finish in 15 min). Checked here by scaling
// the input 32-fold and bounding the ratio of the times, never by a wall-clock limit.

const RUN = 'run-1';
const profile = phasedTestProfile;

/** A run with 3 real snapshots, no latest, and an index whose entries 4..n name files that do not exist. */
async function storeWithMissingFiles(n: number): Promise<StorageAdapter> {
  const storage = memoryStorage();
  const { written } = await writeRun(storage, profile, RUN, 3, (k) => phasedState(k));
  await storage.delete(profile.layout.latestKey(RUN));
  const entries: RunIndexEntry[] = written.map((w) => indexEntry(w));
  for (let sequence = 4; sequence <= n; sequence++) {
    const id = globalThis.crypto.randomUUID();
    const source = 'phase_complete';
    entries.push({
      sequence,
      checkpoint_id: id,
      trigger: source,
      timestamp: toRfc3339(T0 + sequence * 60_000),
      file_path: profile.layout.historyKey!({ runId: RUN, id, sequence, source }),
      status: 'in_progress',
    });
  }
  await putIndex(storage, profile, RUN, entries);
  return storage;
}

async function timePlan(storage: StorageAdapter): Promise<number> {
  const started = performance.now();
  // One read at a time: the walk over the candidates is then the whole cost, as it is for any width.
  const plan = await planResume({
    storage,
    profile,
    runId: RUN,
    concurrency: 1,
    clock: { now: () => T0, setTimeout: () => 0, clearTimeout: () => undefined },
  });
  const ms = performance.now() - started;
  expect(plan.snapshot.sequence).toBe(3);
  return ms;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('planResume over an index naming missing files', () => {
  it('reports every missing file and resumes from the newest one that exists', async () => {
    const storage = await storeWithMissingFiles(200);
    const plan = await planResume({ storage, profile, runId: RUN });
    expect(plan.snapshot.sequence).toBe(3);
    const missing = plan.skipped.filter((s) => s.reasonCode === 'checkpoint_not_found');
    expect(new Set(missing.map((s) => s.key)).size).toBe(197);
    expect(plan.nextSequence).toBe(201);
  });

  it('scales linearly: 32 times the entries cost far less than 1024 times the time', async () => {
    const small = 400;
    const large = 12_800;
    const stores = { small: await storeWithMissingFiles(small), large: await storeWithMissingFiles(large) };
    await timePlan(stores.small); // warm up the JIT and the validators
    const times: { small: number[]; large: number[] } = { small: [], large: [] };
    for (let round = 0; round < 5; round++) {
      // Interleaved, so a noisy neighbour slows both sizes alike.
      times.small.push(await timePlan(stores.small));
      times.large.push(await timePlan(stores.large));
    }
    const ratio = median(times.large) / median(times.small);
    // Linear: about 32. Quadratic: about 1024 (the old walk measured over 300). The bound leaves room for a noisy machine.
    expect(ratio, `times ${JSON.stringify(times)}`).toBeLessThan(128);
  });
});
