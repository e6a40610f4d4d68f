/**
 * What a thread costs the store before its first checkpoint (the langgraph bench's fs row): the run's
 * folder is listed once — by the first getTuple, shared with the puts that follow — not once
 * for getTuple's history, then again for history and for parts when the first put loads the
 * run (each listing walks the run's directories on fs, behind the previous thread's files).
 * And the run state that one listing gives is the one two listings gave: a property.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { cp, meta } from './checkpoints.js';

/** `storage` with its list calls recorded (prefixes, in order). */
function countingLists(storage: StorageAdapter): { storage: StorageAdapter; lists: string[] } {
  const lists: string[] = [];
  const wrapped = Object.create(storage) as StorageAdapter;
  Object.assign(wrapped, {
    list: (prefix: string) => {
      lists.push(prefix);
      return storage.list(prefix);
    },
  });
  return { storage: wrapped, lists };
}

describe('SavepointSaver: listings before a thread’s first checkpoint', () => {
  it('a new thread: getTuple, put and putWrites list the store once (regression: three listings)', async () => {
    const { storage, lists } = countingLists(memoryStorage());
    const saver = new SavepointSaver({ storage });
    const config = { configurable: { thread_id: 't-1', checkpoint_ns: '' } };
    expect(await saver.getTuple(config)).toBeUndefined();
    const stored = await saver.put(config, cp(1, { a: 1 }), meta, { a: 2 });
    await saver.putWrites(stored, [['a', 2]], 'task-1');
    const second = cp(2, { a: 2 });
    await saver.put(stored, second, { ...meta, step: 1 }, { a: 3 });
    expect(lists).toEqual(['langgraph/t-1/']);
    expect((await saver.getTuple(config))?.checkpoint.id).toBe(second.id);
  });

  it('property: a saver that starts on a store another saver wrote finds the same newest checkpoint, pending writes and next sequences as that saver', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }),
        fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
        fc.boolean(),
        async (count, withWrites, getFirst) => {
          const storage = memoryStorage();
          const first = new SavepointSaver({ storage, keepLast: 3 });
          const config = { configurable: { thread_id: 'p', checkpoint_ns: '' } };
          let parent = config as typeof config & { configurable: { checkpoint_id?: string } };
          const ids: string[] = [];
          for (let i = 1; i <= count; i++) {
            const c = cp(i, { a: i });
            ids.unshift(c.id);
            parent = (await first.put(parent, c, { ...meta, step: i }, { a: i + 1 })) as typeof parent;
            if (withWrites[i - 1]) await first.putWrites(parent, [['a', i]], `task-${i}`);
          }
          const second = new SavepointSaver({ storage, keepLast: 3 });
          if (getFirst) expect((await second.getTuple(config))?.checkpoint.id).toBe(ids[0]);
          // The next checkpoint and its writes go where the first saver would put them.
          const c = cp(count + 1, { a: 0 });
          ids.unshift(c.id);
          const next = await second.put(parent, c, { ...meta, step: count + 1 }, { a: count + 2 });
          await second.putWrites(next, [['a', 0]], 'task-next');
          const tuple = await first.getTuple(config);
          expect(tuple?.checkpoint.id).toBe(c.id);
          expect(tuple?.pendingWrites).toEqual([['task-next', 'a', 0]]);
          const listed: string[] = [];
          for await (const t of second.list(config)) listed.push(t.checkpoint.id);
          expect(listed).toEqual(ids.slice(0, 3));
        },
      ),
      { numRuns: 25 },
    );
  });
});
