import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, DeltaChannel, END, START, StateGraph } from '@langchain/langgraph';
import { BaseCheckpointSaver, type CheckpointTuple } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { scratchDirs } from '../support/scratch.js';

const newDir = scratchDirs('lg-delta');

/** A saver that counts its `getTuple` calls: the saver's own walk makes none. */
class CountingSaver extends SavepointSaver {
  getTupleCalls = 0;
  override getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    this.getTupleCalls++;
    return super.getTuple(config);
  }
}

/** A one-node conversation whose `messages` is a DeltaChannel snapshotted every `every` updates. */
function conversation(saver: SavepointSaver, every: number) {
  const State = Annotation.Root({
    messages: new DeltaChannel<string[], string | string[]>((state, writes) => [...state, ...writes.flat()], {
      snapshotFrequency: every,
      initialValueFactory: () => [],
    }),
  });
  return new StateGraph(State)
    .addNode('reply', (s) => ({ messages: [`reply to ${s.messages.at(-1)} after ${s.messages.length}`] }))
    .addEdge(START, 'reply')
    .addEdge('reply', END)
    .compile({ checkpointer: saver });
}

/** One step of a conversation: a turn on the newest checkpoint, or a fork from the `at`-th checkpoint listed (newest first). */
type Step = { kind: 'turn'; text: string } | { kind: 'fork'; at: number; text: string };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('turn' as const), text: fc.string({ maxLength: 8 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fork' as const), at: fc.nat({ max: 40 }), text: fc.string({ maxLength: 8 }) }) },
);

async function play(storage: StorageAdapter, steps: readonly Step[], every: number): Promise<CountingSaver> {
  const saver = new CountingSaver({ storage });
  const app = conversation(saver, every);
  let config: RunnableConfig = { configurable: { thread_id: 'chat' } };
  for (const step of steps) {
    if (step.kind === 'turn') {
      await app.invoke({ messages: [step.text] }, config);
      continue;
    }
    const all: CheckpointTuple[] = [];
    for await (const tuple of saver.list({ configurable: { thread_id: 'chat' } })) all.push(tuple);
    if (all.length === 0) continue;
    const past = all[step.at % all.length]!.config;
    // A fork: a new checkpoint whose parent is an old one; the conversation goes on from it.
    config = await app.updateState(past, { messages: [`fork ${step.text}`] });
    config = { configurable: { thread_id: 'chat', checkpoint_id: config.configurable?.checkpoint_id } };
    await app.invoke({ messages: [step.text] }, config);
    config = { configurable: { thread_id: 'chat' } };
  }
  return saver;
}

/** The saver's history against LangGraph's default walk (`getTuple` per ancestor) for every checkpoint of the thread. */
async function expectSameAsBaseWalk(saver: CountingSaver): Promise<number> {
  let compared = 0;
  for await (const tuple of saver.list({ configurable: { thread_id: 'chat' } })) {
    const options = { config: tuple.config, channels: ['messages', 'absent'] };
    const before = saver.getTupleCalls;
    const ours = await saver.getDeltaChannelHistory(options);
    expect(saver.getTupleCalls).toBe(before);
    const base = await BaseCheckpointSaver.prototype.getDeltaChannelHistory.call(saver, options);
    expect(ours).toEqual(base);
    compared++;
  }
  return compared;
}

describe('SavepointSaver.getDeltaChannelHistory', () => {
  it('property: equals LangGraph’s ancestor walk on every checkpoint of a conversation with forks, without a getTuple call', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { maxLength: 12 }), fc.integer({ min: 1, max: 4 }), async (steps, every) => {
        const saver = await play(memoryStorage(), [{ kind: 'turn', text: 'hello' }, ...steps], every);
        expect(await expectSameAsBaseWalk(saver)).toBeGreaterThan(0);
      }),
      { numRuns: 20 },
    );
  });

  it('rebuilds the conversation on fs (both modes): getState after each turn holds every message, forks only their own branch', async () => {
    for (const journal of [false, true]) {
      const storage = fsStorage({ dir: newDir(), journal });
      const saver = new CountingSaver({ storage });
      const app = conversation(saver, 3);
      const config = { configurable: { thread_id: 'chat' } };
      for (let turn = 0; turn < 8; turn++) await app.invoke({ messages: [`u${turn}`] }, config);
      expect((await app.getState(config)).values.messages).toHaveLength(16);
      const history: RunnableConfig[] = [];
      for await (const s of app.getStateHistory(config)) history.push(s.config);
      // The checkpoint after turn 2's reply (oldest first: input, loop … per turn).
      const early = history.at(-1 - 3 * 2 - 2)!;
      expect((await app.getState(early)).values.messages).toEqual([
        'u0',
        'reply to u0 after 1',
        'u1',
        'reply to u1 after 3',
        'u2',
        'reply to u2 after 5',
      ]);
      const fork = await app.updateState(early, { messages: ['edited'] });
      expect((await app.getState(fork)).values.messages.slice(-2)).toEqual(['reply to u2 after 5', 'edited']);
      await app.invoke({ messages: ['after fork'] }, fork);
      const newest = (await app.getState(config)).values.messages;
      expect(newest).toHaveLength(9);
      expect(newest.slice(-3)).toEqual(['edited', 'after fork', 'reply to after fork after 8']);
      await expectSameAsBaseWalk(saver);
      await storage.close();
    }
  });

  it('on fs, reads each ancestor with its writes folder in one linked read: no listing of a writes folder of its own (a cost removed)', async () => {
    const inner = fsStorage({ dir: newDir() });
    const listed: string[] = [];
    const storage: StorageAdapter = {
      ...inner,
      list: (prefix) => {
        listed.push(prefix);
        return inner.list(prefix);
      },
    };
    try {
      const saver = new CountingSaver({ storage });
      const app = conversation(saver, 4);
      const config = { configurable: { thread_id: 'chat' } };
      for (let turn = 0; turn < 6; turn++) await app.invoke({ messages: [`u${turn}`] }, config);
      listed.length = 0;
      const history = await saver.getDeltaChannelHistory({ config, channels: ['messages'] });
      expect(history.messages!.writes.length).toBeGreaterThan(0);
      expect(listed.filter((prefix) => prefix.includes('/parts/'))).toEqual([]);
      await expectSameAsBaseWalk(saver);
    } finally {
      await inner.close();
    }
  });

  it('answers an empty mapping for no channels, and empty histories for an unknown thread or checkpoint', async () => {
    const saver = new SavepointSaver({ storage: memoryStorage() });
    expect(await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: 'x' } }, channels: [] })).toEqual({});
    expect(await saver.getDeltaChannelHistory({ config: { configurable: { thread_id: 'x' } }, channels: ['a'] })).toEqual({
      a: { writes: [] },
    });
    const config = { configurable: { thread_id: 'x', checkpoint_id: '1ef-missing' } };
    expect(await saver.getDeltaChannelHistory({ config, channels: ['a', 'b'] })).toEqual({ a: { writes: [] }, b: { writes: [] } });
  });
});
