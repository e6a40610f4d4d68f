import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  defaultProfile,
  deleteRun,
  getRunSnapshot,
  isCheckpointError,
  listAll,
  listRunSnapshots,
  memoryStorage,
  type JsonValue,
  type Snapshot,
  type StorageAdapter,
} from 'savepoint';
import { langGraphProfile, runIdOf, SavepointSaver } from 'savepoint/langgraph';

async function writeRun(storage: StorageAdapter, runId: string, n: number): Promise<void> {
  const writer = createWriter({ storage, profile: defaultProfile, runId, heartbeatIntervalMs: false, coalesceWindowMs: 0 });
  for (let i = 1; i <= n; i++) {
    const r = await writer.checkpoint({
      source: 'step_boundary',
      status: i === n ? 'completed' : 'in_progress',
      payload: { step: i, stage: i % 3 === 0 ? 'review' : 'work' } as JsonValue,
    });
    expect(r.ok).toBe(true);
  }
  await writer.close();
}

async function collect<P>(it: AsyncIterable<Snapshot<P>>): Promise<Snapshot<P>[]> {
  const out: Snapshot<P>[] = [];
  for await (const s of it) out.push(s);
  return out;
}

const rejects = async (p: Promise<unknown>, code: string): Promise<void> => {
  const err = await p.catch((e: unknown) => e);
  expect(isCheckpointError(err, code as never)).toBe(true);
};

describe('run history API: listRunSnapshots, getRunSnapshot, deleteRun', () => {
  it('lists a run newest first, with limit, before (sequence or id) and a predicate filter', async () => {
    const storage = memoryStorage();
    await writeRun(storage, 'run-1', 7);
    await writeRun(storage, 'run-2', 2);
    const all = await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'run-1' }));
    expect(all.map((s) => s.sequence)).toEqual([7, 6, 5, 4, 3, 2, 1]);
    expect(all.every((s) => s.runId === 'run-1')).toBe(true);
    expect(
      (await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'run-1', limit: 2 }))).map((s) => s.sequence),
    ).toEqual([7, 6]);
    expect(
      (await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'run-1', before: 4 }))).map((s) => s.sequence),
    ).toEqual([3, 2, 1]);
    expect(
      (await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'run-1', before: { id: all[1]!.id }, limit: 1 }))).map(
        (s) => s.sequence,
      ),
    ).toEqual([5]);
    const review = await collect(
      listRunSnapshots({
        storage,
        profile: defaultProfile,
        runId: 'run-1',
        filter: (s) => (s.payload as { stage: string }).stage === 'review',
      }),
    );
    expect(review.map((s) => s.sequence)).toEqual([6, 3]);
    expect(await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'no-such-run' }))).toEqual([]);
    expect(await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'run-1', before: { id: 'cp_nope' } }))).toEqual([]);
  });

  it('property: list(limit, before) equals the full list cut by the same bounds', async () => {
    const storage = memoryStorage();
    await writeRun(storage, 'prop-run', 9);
    const all = await collect(listRunSnapshots({ storage, profile: defaultProfile, runId: 'prop-run' }));
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
        fc.option(fc.integer({ min: 0, max: 11 }), { nil: undefined }),
        async (limit, before) => {
          const got = await collect(
            listRunSnapshots({
              storage,
              profile: defaultProfile,
              runId: 'prop-run',
              ...(limit !== undefined ? { limit } : {}),
              ...(before !== undefined ? { before } : {}),
            }),
          );
          const want = all.filter((s) => before === undefined || s.sequence < before).slice(0, limit ?? Infinity);
          expect(got.map((s) => s.id)).toEqual(want.map((s) => s.id));
        },
      ),
      { numRuns: 60 },
    );
  });

  it('gets one snapshot by sequence or by id, verified; undefined when absent', async () => {
    const storage = memoryStorage();
    await writeRun(storage, 'run-g', 4);
    const third = await getRunSnapshot({ storage, profile: defaultProfile, runId: 'run-g', sequence: 3 });
    expect(third?.payload).toEqual({ step: 3, stage: 'review' });
    expect((await getRunSnapshot({ storage, profile: defaultProfile, runId: 'run-g', id: third!.id }))?.sequence).toBe(3);
    expect(await getRunSnapshot({ storage, profile: defaultProfile, runId: 'run-g', sequence: 9 })).toBeUndefined();
    expect(await getRunSnapshot({ storage, profile: defaultProfile, runId: 'other', sequence: 1 })).toBeUndefined();
    await rejects(getRunSnapshot({ storage, profile: defaultProfile, runId: 'run-g' } as never), 'checkpoint_config_invalid');
    await rejects(getRunSnapshot({ storage, profile: defaultProfile, runId: '../x', sequence: 1 }), 'checkpoint_key_invalid');
  });

  it('deletes every file of one run and nothing of another run', async () => {
    const storage = memoryStorage();
    await writeRun(storage, 'run-d', 3);
    await writeRun(storage, 'run-keep', 2);
    await storage.put('checkpoints/run-d/notes.txt', new TextEncoder().encode("not savepoint's"));
    const keepBefore = await listAll(storage, 'checkpoints/run-keep/');
    const { deleted } = await deleteRun({ storage, profile: defaultProfile, runId: 'run-d' });
    expect(deleted.length).toBeGreaterThanOrEqual(5); // 3 history + latest + index (+ lock)
    expect((await listAll(storage, 'checkpoints/run-d/')).map((e) => e.key)).toEqual(['checkpoints/run-d/notes.txt']);
    expect(await listAll(storage, 'checkpoints/run-keep/')).toEqual(keepBefore);
    expect((await deleteRun({ storage, profile: defaultProfile, runId: 'run-d' })).deleted).toEqual([]);
    await rejects(deleteRun({ storage, profile: defaultProfile, runId: '../run-keep' }), 'checkpoint_key_invalid');
  });

  it('filters on per-snapshot metadata (JSON equality per key), here the metadata SavepointSaver stores', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    let config = { configurable: { thread_id: 'meta', checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
    for (let step = -1; step < 4; step++) {
      const cp = { ...emptyCheckpoint(), id: uuid6(step) };
      config = (await saver.put(
        config,
        cp,
        { source: step < 0 ? 'input' : 'loop', step, parents: {}, ...(step === 2 ? { tags: ['x', 'y'] } : {}) },
        {},
      )) as typeof config;
    }
    const runId = await runIdOf('meta', '');
    const loops = await collect(listRunSnapshots({ storage, profile: langGraphProfile, runId, filter: { source: 'loop' } }));
    expect(loops.map((s) => s.metadata?.step)).toEqual([3, 2, 1, 0]);
    expect(
      (await collect(listRunSnapshots({ storage, profile: langGraphProfile, runId, filter: { tags: ['x', 'y'] } }))).map(
        (s) => s.metadata?.step,
      ),
    ).toEqual([2]);
    expect(await collect(listRunSnapshots({ storage, profile: langGraphProfile, runId, filter: { tags: ['y', 'x'] } }))).toEqual([]);
    // The saver's list() applies the same filter semantics.
    const tuples = [];
    for await (const t of saver.list({ configurable: { thread_id: 'meta' } }, { filter: { tags: ['x', 'y'] } })) tuples.push(t);
    expect(tuples.map((t) => t.metadata?.step)).toEqual([2]);
  });
});
