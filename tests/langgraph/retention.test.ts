import { emptyCheckpoint, uuid6, type Checkpoint } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, keepLast, listAll, memoryStorage, runRetention, type StorageAdapter } from 'savepoint';
import { getManyOf } from '../../src/contract/storage.js';
import { langGraphProfile, runIdOf, SavepointSaver } from 'savepoint/langgraph';
import { readSnapshot } from 'savepoint/toolkit';
import { runCli } from '../../src/cli/run.js';
import { countingStorage } from '../support/counting-storage.js';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';

function fakeIo(): { io: Parameters<typeof runCli>[1]; out: () => string; err: () => string } {
  let out = '';
  let err = '';
  return {
    io: {
      stdout: { write: (t: string) => (out += t), isTTY: false },
      stderr: { write: (t: string) => (err += t), isTTY: false },
      readStdin: async () => '',
      env: {},
    },
    out: () => out,
    err: () => err,
  };
}

function checkpointAt(step: number): Checkpoint {
  const c = emptyCheckpoint();
  return {
    ...c,
    id: uuid6(step),
    channel_values: { count: step, log: `step ${step}` },
    channel_versions: { count: step + 1, log: step + 1 },
  };
}

/** Writes `n` supersteps into thread `t` (namespace `ns`): put + one task's writes each, chained by parent as LangGraph does. */
async function writeSteps(saver: SavepointSaver, threadId: string, n: number, ns = ''): Promise<string[]> {
  let config = { configurable: { thread_id: threadId, checkpoint_ns: ns } } as { configurable: Record<string, unknown> };
  const ids: string[] = [];
  for (let step = 0; step < n; step++) {
    const cp = checkpointAt(step);
    config = (await saver.put(
      config,
      cp,
      { source: step === 0 ? 'input' : 'loop', step, parents: {} },
      { count: step + 1, log: step + 1 },
    )) as typeof config;
    await saver.putWrites(config, [['count', step + 1]], `task-${step}`);
    ids.push(cp.id);
  }
  return ids;
}

/** A checkpoint id that sorts by `n` (ids a test chooses, so some can be made to sort below others). */
const stepId = (n: number): string => `1f0a0000-0000-6000-8000-${String(n).padStart(12, '0')}`;

/** `inner` with its history gets and the sizes of its multi-gets counted. */
function readCountingStorage(inner: StorageAdapter): { storage: StorageAdapter; reads: number[]; historyGets: string[] } {
  const getMany = getManyOf(inner)!;
  const historyGets: string[] = [];
  const reads: number[] = [];
  const storage: StorageAdapter = {
    ...inner,
    get: (key, options) => (key.includes('/history/') && historyGets.push(key), inner.get(key, options)),
    list: (prefix) => inner.list(prefix),
  };
  Object.defineProperty(storage, 'getMany', { value: (keys: readonly string[]) => (reads.push(keys.length), getMany(keys)) });
  return { storage, reads, historyGets };
}

async function historyIds(storage: StorageAdapter, runId: string): Promise<string[]> {
  return (await listAll(storage, `langgraph/${runId}/history/`)).map((e) =>
    e.key
      .split('/')
      .at(-1)!
      .replace(/\.json$/, ''),
  );
}

async function partDirs(storage: StorageAdapter, runId: string): Promise<number[]> {
  return [...new Set((await listAll(storage, `langgraph/${runId}/parts/`)).map((e) => Number(e.key.split('/')[3])))].sort((a, b) => a - b);
}

describe('SavepointSaver stores under savepoint retention, verify, ls and prune', () => {
  it('on a store with an atomic batch, an old checkpoint and its writes leave in the commit of the put that replaces them: no delete call of their own', async () => {
    const inner = memoryStorage();
    const { storage: counting, calls } = countingStorage(inner);
    const saver = new SavepointSaver({ storage: counting, keepLast: 3 });
    const ids = await writeSteps(saver, 'thread-b', 12);
    const runId = await runIdOf('thread-b', '');
    expect(await historyIds(inner, runId)).toEqual(ids.slice(-3));
    expect(await partDirs(inner, runId)).toEqual([10, 11, 12]);
    expect(calls.filter((c) => c === 'delete')).toEqual([]);
    // Every put is one batch (its head and its document); nine checkpoints left, each with its one
    // writes file: two deletes in each of the last nine batches.
    expect(calls.filter((c) => c.startsWith('batch:'))).toEqual([
      ...Array.from({ length: 3 }, () => 'batch:0'),
      ...Array.from({ length: 9 }, () => 'batch:2'),
    ]);
  });

  it('keeps every checkpoint by default, as LangGraph’s savers do: the oldest of a long thread is still readable with its writes', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    expect(saver.keepLast).toBe(false);
    const ids = await writeSteps(saver, 'long', 60);
    const runId = await runIdOf('long', '');
    expect(await historyIds(storage, runId)).toEqual(ids);
    expect(await partDirs(storage, runId)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    const oldest = await saver.getTuple({ configurable: { thread_id: 'long', checkpoint_id: ids[0] } });
    expect(oldest?.checkpoint.channel_values).toEqual({ count: 0, log: 'step 0' });
    expect(oldest?.pendingWrites).toEqual([['task-0', 'count', 1]]);
  });

  it('keeps the last N checkpoints per thread inline, each with its pending writes, and the newest always', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage, keepLast: 3 });
    const ids = await writeSteps(saver, 'thread-1', 10);
    const runId = await runIdOf('thread-1', '');
    expect(await historyIds(storage, runId)).toEqual(ids.slice(-3));
    expect(await partDirs(storage, runId)).toEqual([8, 9, 10]);
    const newest = await saver.getTuple({ configurable: { thread_id: 'thread-1' } });
    expect(newest?.checkpoint.id).toBe(ids[9]);
    expect(newest?.checkpoint.channel_values).toEqual({ count: 9, log: 'step 9' });
    expect(newest?.pendingWrites).toEqual([['task-9', 'count', 10]]);
  });

  it('a new saver on the same store continues the sequence and the count (cold start lists the run once)', async () => {
    const storage = memoryStorage();
    const first = await writeSteps(new SavepointSaver({ storage, keepLast: 4 }), 't', 3);
    const second = await writeSteps(new SavepointSaver({ storage, keepLast: 4 }), 't', 3);
    const runId = await runIdOf('t', '');
    expect(await historyIds(storage, runId)).toEqual([...first, ...second].sort().slice(-4));
    expect(await partDirs(storage, runId)).toEqual([3, 4, 5, 6]);
  });

  it('a saver meeting a thread another saver wrote, at its keepLast bound, lets each old checkpoint go with its writes in its put’s batch: no listing of a writes folder, no delete of its own', async () => {
    const inner = memoryStorage();
    const first = await writeSteps(new SavepointSaver({ storage: inner, keepLast: 4 }), 't', 6);
    const { storage: counting, calls } = countingStorage(inner);
    const second = await writeSteps(new SavepointSaver({ storage: counting, keepLast: 4 }), 't', 5);
    const runId = await runIdOf('t', '');
    expect(await historyIds(inner, runId)).toEqual([...first, ...second].sort().slice(-4));
    expect(await partDirs(inner, runId)).toEqual([8, 9, 10, 11]);
    expect(calls.filter((c) => c === 'delete' || (c.startsWith('list:') && c.includes('/parts/')))).toEqual([]);
    // Each of the five puts: one batch, deleting one checkpoint and its one writes file.
    expect(calls.filter((c) => c.startsWith('batch:'))).toEqual(Array.from({ length: 5 }, () => 'batch:2'));
  });

  it('a saver meeting a thread another saver wrote learns the sequences of what leaves from the head’s in-order range: no document of a leaving checkpoint read', async () => {
    const inner = memoryStorage();
    const first = await writeSteps(new SavepointSaver({ storage: inner, keepLast: 20 }), 't', 30);
    const { storage, reads, historyGets } = readCountingStorage(inner);
    const second = await writeSteps(new SavepointSaver({ storage, keepLast: 20 }), 't', 12);
    const runId = await runIdOf('t', '');
    expect(await historyIds(inner, runId)).toEqual([...first, ...second].sort().slice(-20));
    expect(await partDirs(inner, runId)).toEqual(Array.from({ length: 20 }, (_, i) => 23 + i));
    expect(historyGets).toEqual([]);
    expect(reads).toEqual([]);
  });

  it('where the head’s range does not fit the thread (a checkpoint deleted by other means), on a store with a multi-get the documents of what leaves are read, many at once', async () => {
    const inner = memoryStorage();
    const first = await writeSteps(new SavepointSaver({ storage: inner, keepLast: 20 }), 't', 30);
    const runId = await runIdOf('t', '');
    // Deleted as a retention rule would: the document, then its writes.
    const gone = first[15]!;
    const goneSequence = (await readSnapshot(inner, langGraphProfile, `langgraph/${runId}/history/${gone}.json`))!.sequence;
    await inner.delete(`langgraph/${runId}/history/${gone}.json`);
    for (const e of await listAll(inner, `langgraph/${runId}/parts/${goneSequence}/`)) await inner.delete(e.key);
    const { storage, reads, historyGets } = readCountingStorage(inner);
    const second = await writeSteps(new SavepointSaver({ storage, keepLast: 20 }), 't', 12);
    expect(await historyIds(inner, runId)).toEqual([...first.filter((id) => id !== gone), ...second].sort().slice(-20));
    expect((await partDirs(inner, runId)).length).toBe(20);
    expect(historyGets).toEqual([]);
    // A window of 8, then up to 16: the 18 it did not know (the head named the newest) in two reads.
    expect(reads).toEqual([8, 10]);
  });

  it('on a store with a multi-get, large checkpoints are read ahead a few at a time: a read takes about 1 MiB of documents', async () => {
    const inner = memoryStorage();
    const big = 'x'.repeat(300 * 1024);
    const steps = async (saver: SavepointSaver, n: number, from: number): Promise<void> => {
      let config = { configurable: { thread_id: 'big', checkpoint_ns: '' } } as { configurable: Record<string, unknown> };
      for (let step = from; step < from + n; step++) {
        const cp = { ...checkpointAt(step), channel_values: { count: step, log: `${step} ${big}` } };
        config = (await saver.put(config, cp, { source: 'loop', step, parents: {} }, { count: step + 1, log: step + 1 })) as typeof config;
      }
    };
    await steps(new SavepointSaver({ storage: inner, keepLast: 20, dedup: false }), 30, 0);
    const getMany = getManyOf(inner)!;
    const reads: number[] = [];
    const storage: StorageAdapter = { ...inner, get: (key, options) => inner.get(key, options), list: (prefix) => inner.list(prefix) };
    Object.defineProperty(storage, 'getMany', { value: (keys: readonly string[]) => (reads.push(keys.length), getMany(keys)) });
    await steps(new SavepointSaver({ storage, keepLast: 20, dedup: false }), 12, 30);
    expect(await historyIds(inner, await runIdOf('big', ''))).toHaveLength(20);
    // The first window of 8, then 3 documents of 300 KB a read (without writes, the first saver let each
    // checkpoint go after its put: its head's in-order range counts one gone and does not fit).
    expect(reads.slice(0, 3)).toEqual([8, 3, 3]);
  });

  it('property: savers taking turns on a thread, new ones meeting it at any point, some with their clock behind, keep exactly keepLast checkpoints with their writes, and no writes without their checkpoint', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.array(fc.record({ saver: fc.nat(2), fresh: fc.boolean(), behind: fc.boolean(), steps: fc.integer({ min: 1, max: 4 }) }), {
          minLength: 1,
          maxLength: 8,
        }),
        async (keep, turns) => {
          const storage = memoryStorage();
          const savers = [0, 1, 2].map(() => new SavepointSaver({ storage, keepLast: keep }));
          const thread = { configurable: { thread_id: 'p', checkpoint_ns: '' } };
          // The ids the thread holds as keepLast keeps them: the oldest leave, never the newest put.
          const kept: string[] = [];
          let step = 0;
          let top = 0;
          for (const turn of turns) {
            if (turn.fresh) savers[turn.saver] = new SavepointSaver({ storage, keepLast: keep });
            const saver = savers[turn.saver]!;
            // A turn as a service serves it: from the newest checkpoint, whose writes come first.
            const cursor: Cursor = { config: (await saver.getTuple(thread))?.config ?? thread, step };
            for (let i = 0; i < turn.steps; i++) {
              // A replica whose clock is behind makes an id below the greatest the thread has held (then ids above it).
              const id = turn.behind && i === 0 && top > 0 ? `${stepId(top - 1)}-${cursor.step}` : stepId((top += 10));
              await superstep(saver, cursor, id);
              kept.push(id);
              kept.sort();
              while (kept.length > keep) kept.splice(kept[0] === id ? 1 : 0, 1);
            }
            step = cursor.step;
          }
          const runId = await runIdOf('p', '');
          expect(await historyIds(storage, runId)).toEqual(kept);
          // Each kept checkpoint but the newest put has its writes (the superstep after it); nothing else does.
          const newest = (await new SavepointSaver({ storage, keepLast: keep }).getTuple(thread))?.checkpoint.id;
          const sequences = new Map<string, number>();
          for (const id of kept)
            sequences.set(id, (await readSnapshot(storage, langGraphProfile, `langgraph/${runId}/history/${id}.json`))!.sequence);
          expect(await partDirs(storage, runId)).toEqual(
            kept
              .filter((id) => id !== newest)
              .map((id) => sequences.get(id)!)
              .sort((a, b) => a - b),
          );
        },
      ),
      { numRuns: 60 },
    );
  });

  it('property: for any steps and keepLast, exactly min(steps, keepLast) checkpoints stay, the newest with its writes, and no writes without their checkpoint', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 6 }),
        fc.constantFrom('', 'child'),
        async (steps, keep, ns) => {
          const storage = memoryStorage();
          const saver = new SavepointSaver({ storage, keepLast: keep });
          const ids = await writeSteps(saver, 'p', steps, ns);
          const runId = await runIdOf('p', ns);
          expect(await historyIds(storage, runId)).toEqual(ids.slice(-keep));
          expect((await partDirs(storage, runId)).length).toBe(Math.min(steps, keep));
          const tuple = await saver.getTuple({ configurable: { thread_id: 'p', checkpoint_ns: ns } });
          expect(tuple?.checkpoint.id).toBe(ids.at(-1));
          expect(tuple?.pendingWrites).toEqual([[`task-${steps - 1}`, 'count', steps]]);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('property: writes a killed saver left for checkpoints it never stored go with the checkpoints a new saver stores under their sequences', async () => {
    // LangGraph saves a task's writes without waiting for the put of the checkpoint before
    // them, so a process killed mid-graph can leave writes whose checkpoint never landed.
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 8 }),
        fc.integer({ min: 1, max: 4 }),
        async (stored, lost, extra, keep) => {
          const storage = memoryStorage();
          const killed = new SavepointSaver({ storage, keepLast: keep });
          await writeSteps(killed, 'k', stored);
          for (let i = 0; i < lost; i++) {
            const never = { configurable: { thread_id: 'k', checkpoint_ns: '', checkpoint_id: uuid6(100 + i) } };
            await killed.putWrites(never, [['count', -1]], `lost-${i}`);
          }
          const resumed = new SavepointSaver({ storage, keepLast: keep });
          const ids = await writeSteps(resumed, 'k', lost + extra);
          const runId = await runIdOf('k', '');
          const kept = await historyIds(storage, runId);
          const keptSequences = await Promise.all(kept.map(async (id) => (await storage.get(`langgraph/${runId}/history/${id}.json`))!));
          const sequences = keptSequences.map((s) => (JSON.parse(new TextDecoder().decode(s.bytes)) as { sequence: number }).sequence);
          // Every writes folder belongs to a kept checkpoint: the leftovers left with the checkpoint that reused their sequence.
          for (const dir of await partDirs(storage, runId)) expect(sequences).toContain(dir);
          const tuple = await resumed.getTuple({ configurable: { thread_id: 'k' } });
          expect(tuple?.checkpoint.id).toBe(ids.at(-1));
          expect(tuple?.pendingWrites).toEqual([[`task-${lost + extra - 1}`, 'count', lost + extra]]);
        },
      ),
      { numRuns: 600 },
    );
  });

  it("runRetention with the langgraph profile keeps each thread namespace's newest N with their writes; planning again deletes nothing", async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage, keepLast: false });
    const root = await writeSteps(saver, 'a', 6);
    const child = await writeSteps(saver, 'a', 4, 'child');
    const before = await saver.getTuple({ configurable: { thread_id: 'a' } });

    const { report } = await runRetention({ storage, profile: langGraphProfile, policy: { rules: [keepLast(2)] }, log: false });
    expect(report.status).toBe('completed');
    expect(await historyIds(storage, await runIdOf('a', ''))).toEqual(root.slice(-2));
    expect(await historyIds(storage, await runIdOf('a', 'child'))).toEqual(child.slice(-2));
    expect(await partDirs(storage, await runIdOf('a', ''))).toEqual([5, 6]);
    expect(await saver.getTuple({ configurable: { thread_id: 'a' } })).toEqual(before);

    const again = await runRetention({ storage, profile: langGraphProfile, policy: { rules: [keepLast(2)] }, log: false });
    expect(again.plan.totals.delete).toBe(0);
    expect(again.plan.totals.filesDeleted).toBe(0);
  });

  it('savepoint verify passes on a saver store and catches a changed byte; the saver refuses the corrupt checkpoint too', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const ids = await writeSteps(saver, 'v', 3);
    const ok = fakeIo();
    expect(await runCli(['verify', '--profile', 'langgraph'], ok.io, { storage })).toBe(0);

    const key = `langgraph/${await runIdOf('v', '')}/history/${ids[1]}.json`;
    const stored = (await storage.get(key))!;
    const text = new TextDecoder().decode(stored.bytes).replace('"step":1', '"step":7');
    await storage.put(key, new TextEncoder().encode(text));
    const bad = fakeIo();
    expect(await runCli(['verify', '--profile', 'langgraph'], bad.io, { storage })).toBe(1);
    expect(bad.out() + bad.err()).toContain('checkpoint_integrity_mismatch');
    const err = await saver.getTuple({ configurable: { thread_id: 'v', checkpoint_id: ids[1] } }).catch((e: unknown) => e);
    expect(isCheckpointError(err, 'checkpoint_integrity_mismatch')).toBe(true);
  });

  it("savepoint ls lists a thread's checkpoints and prune --apply keeps the last N with their writes", async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage, keepLast: false });
    const ids = await writeSteps(saver, 'cli-thread', 5);
    const runId = await runIdOf('cli-thread', '');
    const ls = fakeIo();
    expect(await runCli(['ls', runId, '--profile', 'langgraph'], ls.io, { storage })).toBe(0);
    for (let seq = 1; seq <= 5; seq++)
      expect(ls.out()).toMatch(new RegExp(`^\\s+${seq}\\s.*${seq === 1 ? 'input' : 'loop'}\\s+in_progress`, 'm'));

    const runs = fakeIo();
    expect(await runCli(['runs', '--profile', 'langgraph'], runs.io, { storage })).toBe(0);
    expect(runs.out()).toContain(runId);
    const show = fakeIo();
    expect(await runCli(['show', runId, '--seq', '5', '--profile', 'langgraph'], show.io, { storage })).toBe(0);
    expect(show.out()).toContain('cli-thread');

    const dry = fakeIo();
    expect(await runCli(['prune', '--keep-last', '2', '--profile', 'langgraph'], dry.io, { storage })).toBe(0);
    expect(await historyIds(storage, runId)).toEqual(ids);
    const apply = fakeIo();
    expect(await runCli(['prune', '--keep-last', '2', '--apply', '--profile', 'langgraph'], apply.io, { storage })).toBe(0);
    expect(await historyIds(storage, runId)).toEqual(ids.slice(-2));
    expect(await partDirs(storage, runId)).toEqual([4, 5]);
    const tuple = await saver.getTuple({ configurable: { thread_id: 'cli-thread' } });
    expect(tuple?.pendingWrites).toEqual([['task-4', 'count', 5]]);
  });
});

describe('keepLast and a replica whose clock is behind', () => {
  it('never deletes the checkpoint just put, even when its id is the lowest the thread holds', async () => {
    const storage = memoryStorage();
    const ahead = new SavepointSaver({ storage, keepLast: 1 });
    const thread = { configurable: { thread_id: 'skew', checkpoint_ns: '' } };
    const first = await ahead.put(
      thread,
      { ...checkpointAt(1), id: '1f0a0000-0000-6000-8000-000000000002' },
      { source: 'loop', step: 1, parents: {} },
      {},
    );
    // Another replica, its clock behind: its uuid6 id sorts below the one it follows.
    const behind = new SavepointSaver({ storage, keepLast: 1 });
    const lowId = '1f0a0000-0000-6000-8000-000000000001';
    await behind.put(first, { ...checkpointAt(2), id: lowId }, { source: 'loop', step: 2, parents: {} }, { count: 3, log: 3 });
    const runId = await runIdOf('skew', '');
    expect(await historyIds(storage, runId)).toEqual([lowId]);
    const tuple = await new SavepointSaver({ storage, keepLast: 1 }).getTuple(thread);
    expect(tuple?.checkpoint.id).toBe(lowId);
    expect(tuple?.checkpoint.channel_values).toEqual({ count: 2, log: 'step 2' });
  });
});

describe('keepLast on a thread whose checkpoints do not sort as they were stored', () => {
  it('a saver meeting it after a replica whose clock is behind put one deletes each leaving checkpoint’s own writes', async () => {
    const storage = memoryStorage();
    const thread = { configurable: { thread_id: 'order', checkpoint_ns: '' } };
    const cursor: Cursor = { config: thread, step: 0 };
    for (const n of [10, 20, 30]) await superstep(new SavepointSaver({ storage, keepLast: 4 }), cursor, stepId(n));
    // Another replica's first checkpoint sorts below the third (its clock is behind); its next above all.
    const c = new SavepointSaver({ storage, keepLast: 4 });
    await superstep(c, cursor, `${stepId(29)}-x`);
    await superstep(c, cursor, stepId(40));
    const b = new SavepointSaver({ storage, keepLast: 4 });
    const met: Cursor = { config: (await b.getTuple(thread))!.config, step: cursor.step };
    for (const n of [50, 60]) await superstep(b, met, stepId(n));
    const runId = await runIdOf('order', '');
    const kept = [stepId(30), stepId(40), stepId(50), stepId(60)];
    expect(await historyIds(storage, runId)).toEqual(kept);
    // Each kept checkpoint but the newest holds its writes; those of the ones that left went with them.
    const sequences = await Promise.all(
      kept.map(async (id) => (await readSnapshot(storage, langGraphProfile, `langgraph/${runId}/history/${id}.json`))!.sequence),
    );
    expect(await partDirs(storage, runId)).toEqual(sequences.slice(0, -1));
  });
});
