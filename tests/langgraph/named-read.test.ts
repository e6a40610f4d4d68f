/**
 * `getTuple` of a checkpoint named by id (LangGraph's `getState` of an older checkpoint, time
 * travel): a saver that knows the checkpoint's sequence reads its writes beside its document,
 * not after it (a round trip less on a remote store), and answers what a saver that knows
 * nothing of the thread answers, on memory and fs, with writes added by another saver since.
 */
import fc from 'fast-check';
import fs from 'node:fs';
import { describe, expect, it, vi } from 'vitest';
import type { RunnableConfig } from '@langchain/core/runnables';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';
import { scratchDirs } from '../support/scratch.js';

const newDir = scratchDirs('langgraph-named-read');

/** A store that records when each call starts and ends, over a real store (nothing is answered in its place). */
function recording(inner: StorageAdapter, events: string[]): StorageAdapter {
  return {
    ...inner,
    name: inner.name,
    capabilities: inner.capabilities,
    async get(key, options) {
      events.push(`get ${key}`);
      // Lets every other call that is ready start before this one answers, as a remote store's round trip does.
      await new Promise((r) => setImmediate(r));
      const out = await inner.get(key, options);
      events.push(`got ${key}`);
      return out;
    },
    list(prefix) {
      events.push(`list ${prefix}`);
      return inner.list(prefix);
    },
    put: (key, bytes, options) => inner.put(key, bytes, options),
    delete: (key, options) => inner.delete(key, options),
    ...(inner.batch ? { batch: inner.batch.bind(inner) } : {}),
    close: () => inner.close(),
  };
}

describe('SavepointSaver: getTuple of a checkpoint named by id', () => {
  it('a checkpoint whose sequence the saver knows has its writes listed before its document is back', async () => {
    const events: string[] = [];
    const storage = recording(memoryStorage(), events);
    const saver = new SavepointSaver({ storage });
    const cursor: Cursor = { config: { configurable: { thread_id: 't', checkpoint_ns: '' } }, step: 0 };
    for (let i = 0; i < 3; i++) await superstep(saver, cursor);
    const first = (await saver.getTuple({ configurable: { thread_id: 't', checkpoint_ns: '' } }))!;
    let oldest: RunnableConfig = first.config;
    for await (const t of saver.list({ configurable: { thread_id: 't' } })) oldest = t.config;
    await saver.getTuple(oldest); // the saver learns its sequence, if it did not know it
    events.length = 0;
    const tuple = await saver.getTuple(oldest);
    expect(tuple?.pendingWrites).toEqual([['task-2', 'note', 'step 2']]);
    const documentBack = events.findIndex((e) => e.startsWith('got ') && e.includes('/history/'));
    const listed = events.findIndex((e) => e.startsWith('list ') && e.includes('/parts/'));
    expect(documentBack).toBeGreaterThan(-1);
    expect(listed).toBeGreaterThan(-1);
    expect(listed).toBeLessThan(documentBack);
  });

  it('fs: a checkpoint read by id reaches each of its writes documents once (one linked read, no listing then a read)', async () => {
    const storage = fsStorage({ layout: 'files', dir: newDir() });
    try {
      const saver = new SavepointSaver({ storage });
      const cursor: Cursor = { config: { configurable: { thread_id: 't', checkpoint_ns: '' } }, step: 0 };
      for (let i = 0; i < 3; i++) await superstep(saver, cursor);
      let oldest: RunnableConfig | undefined;
      for await (const t of saver.list({ configurable: { thread_id: 't' } })) oldest = t.config;
      await storage.flush!(); // the files in place: read from the disk, not from the journal's records
      const lstats = vi.spyOn(fs, 'lstatSync');
      const opens = vi.spyOn(fs, 'openSync');
      const tuple = await saver.getTuple(oldest!);
      expect(tuple?.pendingWrites?.length).toBeGreaterThan(0);
      const reached = new Map<string, number>();
      for (const [path] of [...lstats.mock.calls, ...opens.mock.calls]) {
        const name = String(path);
        if (name.includes('/w_')) reached.set(name, (reached.get(name) ?? 0) + 1);
      }
      expect(reached.size).toBeGreaterThan(0);
      for (const [name, count] of reached) expect(count, name).toBe(1);
    } finally {
      vi.restoreAllMocks();
      await storage.close();
    }
  });

  for (const kind of ['memory', 'fs'] as const) {
    it(`${kind}: every checkpoint read by id answers what a saver new to the thread answers, writes added by another saver included (property)`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 6 }),
          fc.array(fc.record({ at: fc.nat(5), task: fc.nat(3), value: fc.string({ maxLength: 8 }) }), { maxLength: 6 }),
          async (steps, extra) => {
            const storage = kind === 'memory' ? memoryStorage() : fsStorage({ layout: 'files', dir: newDir() });
            try {
              const writer = new SavepointSaver({ storage });
              const cursor: Cursor = { config: { configurable: { thread_id: 'p', checkpoint_ns: '' } }, step: 0 };
              for (let i = 0; i < steps; i++) await superstep(writer, cursor);
              const configs: RunnableConfig[] = [];
              for await (const t of writer.list({ configurable: { thread_id: 'p' } })) configs.push(t.config);
              for (const config of configs) await writer.getTuple(config); // the writer knows every sequence now
              const other = new SavepointSaver({ storage });
              for (const w of extra) await other.putWrites(configs[w.at % configs.length]!, [['note', w.value]], `extra-${w.task}`);
              for (const config of configs) {
                const fresh = new SavepointSaver({ storage });
                expect(await writer.getTuple(config)).toEqual(await fresh.getTuple(config));
              }
            } finally {
              await storage.close();
            }
          },
        ),
        { numRuns: kind === 'memory' ? 60 : 15 },
      );
    });
  }
});
