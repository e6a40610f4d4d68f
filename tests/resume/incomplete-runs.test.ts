import { describe, expect, it } from 'vitest';
import { defaultProfile, findIncompleteRuns, memoryStorage, type CheckpointError } from 'savepoint';
import { utf8Encode } from '../../src/codec/utf8.js';
import { faultyStorage } from 'savepoint/testing';
import { corrupt, writeRun } from '../support/runs.js';
import { defaultState, phasedState, phasedTestProfile } from '../support/profiles.js';
import { T0 } from '../support/clock.js';

const minutes = (m: number) => (n: number) => T0 + m * 60_000 + n * 1000;

describe('findIncompleteRuns (startup detection)', () => {
  it('lists runs whose newest status is not terminal, newest first', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, 'run-a', 3, defaultState, { createdAtMs: minutes(30) });
    await writeRun(storage, defaultProfile, 'run-b', 2, defaultState, {
      createdAtMs: minutes(40),
      status: (n) => (n === 2 ? 'completed' : 'in_progress'),
    });
    await writeRun(storage, defaultProfile, 'run-c', 2, defaultState, {
      createdAtMs: minutes(50),
      status: (n) => (n === 2 ? 'failed' : 'in_progress'),
    });
    await writeRun(storage, defaultProfile, 'run-d', 4, defaultState, {
      createdAtMs: minutes(10),
      status: (n) => (n === 4 ? 'paused' : 'in_progress'),
    });
    await writeRun(storage, defaultProfile, 'run-e', 1, defaultState, { createdAtMs: minutes(60) });
    const runs = await findIncompleteRuns({ storage, profile: defaultProfile });
    expect(runs.map((r) => [r.runId, r.status, r.sequence])).toEqual([
      ['run-e', 'in_progress', 1],
      ['run-a', 'in_progress', 3],
      ['run-d', 'paused', 4],
    ]);
    expect(runs[0]).toMatchObject({ source: 'step_boundary', from: 'index', createdAt: new Date(minutes(60)(1)).toISOString() });
  });

  it('uses index statuses: one listing and one index read per run, no snapshot opened', async () => {
    const inner = memoryStorage();
    for (const r of ['r1', 'r2', 'r3']) await writeRun(inner, defaultProfile, r, 20, defaultState);
    const storage = faultyStorage(inner);
    const runs = await findIncompleteRuns({ storage, profile: defaultProfile });
    expect(runs).toHaveLength(3);
    const gets = storage.log.filter((o) => o.operation === 'get').map((o) => o.keys[0]);
    expect(gets.sort()).toEqual(['checkpoints/r1/index.json', 'checkpoints/r2/index.json', 'checkpoints/r3/index.json']);
    expect(storage.log.filter((o) => o.operation === 'list')).toHaveLength(1);
  });

  it('a history entry the index does not know (crash before the index write) is read: a completed run is not listed', async () => {
    const storage = memoryStorage();
    // Snapshot 3 (completed) reached history; latest and index still say 2, in_progress.
    await writeRun(storage, defaultProfile, 'run-x', 3, defaultState, {
      latestAt: 2,
      index: 2,
      status: (n) => (n === 3 ? 'completed' : 'in_progress'),
    });
    expect(await findIncompleteRuns({ storage, profile: defaultProfile })).toEqual([]);
  });

  it('falls back to the snapshot when the index is missing or corrupt, and works on derivable layouts', async () => {
    const storage = memoryStorage();
    await writeRun(storage, defaultProfile, 'no-index', 2, defaultState, { index: false });
    await writeRun(storage, defaultProfile, 'bad-index', 2, defaultState);
    await corrupt(storage, defaultProfile.layout.indexKey!('bad-index'), (b) => b.slice(1));
    const runs = await findIncompleteRuns({ storage, profile: defaultProfile });
    expect(runs.map((r) => [r.runId, r.from]).sort()).toEqual([
      ['bad-index', 'snapshot'],
      ['no-index', 'snapshot'],
    ]);
    const phased = memoryStorage();
    await writeRun(phased, phasedTestProfile, 'p1', 3, (n) => phasedState(n), { status: (n) => (n === 3 ? 'completed' : 'in_progress') });
    await writeRun(phased, phasedTestProfile, 'p2', 2, (n) => phasedState(n));
    expect((await findIncompleteRuns({ storage: phased, profile: phasedTestProfile })).map((r) => r.runId)).toEqual(['p2']);
  });

  it('a run with files but no valid snapshot is reported through onUnreadable; archived runs and store-wide files are ignored', async () => {
    const storage = memoryStorage();
    const { written } = await writeRun(storage, defaultProfile, 'broken', 1, defaultState, { index: false });
    await corrupt(storage, written[0]!.historyKey, (b) => b.slice(5));
    await corrupt(storage, defaultProfile.layout.latestKey('broken'), (b) => b.slice(5));
    await storage.put(defaultProfile.layout.summaryKey!('archived'), utf8Encode('{"run_id":"archived"}'));
    await storage.put(defaultProfile.layout.preservedRunsKey!, utf8Encode('[]'));
    const unreadable: [string, CheckpointError][] = [];
    const runs = await findIncompleteRuns({ storage, profile: defaultProfile, onUnreadable: (id, err) => unreadable.push([id, err]) });
    expect(runs).toEqual([]);
    expect(unreadable.map(([id, err]) => [id, err.reasonCode])).toEqual([['broken', 'checkpoint_no_valid_snapshot']]);
  });
});
