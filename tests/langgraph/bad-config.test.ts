/**
 * SavepointSaver's four LangGraph methods answer a missing or malformed config with
 * `checkpoint_config_invalid` (DESIGN invariant 5), never a raw TypeError: a JavaScript
 * caller may pass anything where LangGraph's types promise `{ configurable: { thread_id } }`.
 */
import type { RunnableConfig } from '@langchain/core/runnables';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError, memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { cp, meta } from './checkpoints.js';

/** What the call did: the reason code of a CheckpointError, or the name of anything else thrown, or 'ok'. */
async function outcome(call: () => Promise<unknown>): Promise<string> {
  try {
    await call();
    return 'ok';
  } catch (err) {
    return isCheckpointError(err) ? err.reasonCode : `raw ${err instanceof Error ? err.name : typeof err}: ${String(err)}`;
  }
}

/** Configs no method accepts: not an object, or a `configurable` that is not one. */
const notAConfig = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, 0, 42, '', 'thread-1', true, [], [{ configurable: { thread_id: 't' } }], Symbol('config')),
  fc.string(),
  fc.integer(),
  fc.oneof(fc.constantFrom<unknown>(5, 'x', true, [], ['t']), fc.string()).map((configurable) => ({ configurable })),
);

/** Configs with a thread id that is not one (put and putWrites need one; getTuple and list refuse a bad one). */
const badThread = fc
  .constantFrom<unknown>({}, [], true, { toString: () => 't' }, Symbol('t'))
  .map((thread_id) => ({ configurable: { thread_id, checkpoint_id: 'c' } }));

const badNamespace = fc
  .constantFrom<unknown>(5, {}, [], true)
  .map((checkpoint_ns) => ({ configurable: { thread_id: 't', checkpoint_ns } }));

const calls: Record<string, (saver: SavepointSaver, config: RunnableConfig) => Promise<unknown>> = {
  getTuple: (saver, config) => saver.getTuple(config),
  list: async (saver, config) => {
    for await (const _ of saver.list(config)) void _;
  },
  put: (saver, config) => saver.put(config, cp(1), meta, {}),
  putWrites: (saver, config) => saver.putWrites(config, [['channel', 1]], 'task'),
};

describe('SavepointSaver: a missing or malformed config is checkpoint_config_invalid', () => {
  it.each(Object.keys(calls))('%s() without a config', async (method) => {
    const saver = new SavepointSaver({ storage: memoryStorage() });
    expect(await outcome(() => calls[method]!(saver, undefined as never))).toBe('checkpoint_config_invalid');
  });

  it('property: every bad config, for each method, is refused with checkpoint_config_invalid, never a raw TypeError', async () => {
    const saver = new SavepointSaver({ storage: memoryStorage() });
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(calls)), fc.oneof(notAConfig, badThread, badNamespace), async (method, config) => {
        let error: unknown;
        try {
          await calls[method]!(saver, config as RunnableConfig);
        } catch (err) {
          error = err;
        }
        expect(
          isCheckpointError(error, 'checkpoint_config_invalid'),
          `${method}(${String(JSON.stringify(config))}): ${String(error)}`,
        ).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('a good config still works after bad ones', async () => {
    const saver = new SavepointSaver({ storage: memoryStorage() });
    for (const method of Object.keys(calls)) await outcome(() => calls[method]!(saver, null as never));
    const checkpoint = cp(1);
    const config = await saver.put({ configurable: { thread_id: 't' } }, checkpoint, meta, {});
    expect((await saver.getTuple(config))?.checkpoint.id).toBe(checkpoint.id);
  });
});
