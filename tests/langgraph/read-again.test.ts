/*
 * `getTuple` of a checkpoint read before (LangGraph's `getState` of an earlier turn, read again):
 * its document and writes documents are kept decoded (decoded-cache.ts), so the read decodes
 * nothing again — the writes documents are taken as kept without a decode call each, and the
 * metadata's JSON text is made once per decoded document — and still hands out fresh values.
 */
import { createHook } from 'node:async_hooks';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { describe, expect, it, vi } from 'vitest';
import type { RunnableConfig } from '@langchain/core/runnables';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';
import { scratchDirs } from '../support/scratch.js';

const newDir = scratchDirs('langgraph-read-again');

const calls = vi.hoisted(() => ({ canonicalJson: 0, writesDocumentFrom: 0 }));

vi.mock('../../src/codec/canonical-json.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/codec/canonical-json.js')>();
  return {
    ...original,
    canonicalJson: (...args: Parameters<typeof original.canonicalJson>) => {
      calls.canonicalJson++;
      return original.canonicalJson(...args);
    },
  };
});

vi.mock('../../src/langgraph/saver-state.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/langgraph/saver-state.js')>();
  return {
    ...original,
    writesDocumentFrom: (...args: Parameters<typeof original.writesDocumentFrom>) => {
      calls.writesDocumentFrom++;
      return original.writesDocumentFrom(...args);
    },
  };
});

async function threadOf(
  steps: number,
  storage: StorageAdapter = memoryStorage(),
): Promise<{ saver: SavepointSaver; oldest: RunnableConfig }> {
  const saver = new SavepointSaver({ storage });
  const cursor: Cursor = { config: { configurable: { thread_id: 't', checkpoint_ns: '' } }, step: 0 };
  for (let i = 0; i < steps; i++) await superstep(saver, cursor);
  // A second task's writes under the oldest checkpoint: two writes documents to take as kept.
  let oldest: RunnableConfig = cursor.config;
  for await (const t of saver.list({ configurable: { thread_id: 't' } })) oldest = t.config;
  await saver.putWrites(oldest, [['note', 'late']], 'task-late');
  return { saver, oldest };
}

describe('SavepointSaver: a checkpoint read again', () => {
  it('decodes neither its writes documents nor its metadata text again', async () => {
    const { saver, oldest } = await threadOf(4);
    const first = await saver.getTuple(oldest);
    expect(first?.pendingWrites?.length).toBe(2);
    calls.canonicalJson = 0;
    calls.writesDocumentFrom = 0;
    for (let i = 0; i < 3; i++) expect(await saver.getTuple(oldest)).toEqual(first);
    expect(calls.writesDocumentFrom).toBe(0);
    expect(calls.canonicalJson).toBe(0);
  });

  it('hands out a fresh metadata and fresh pending writes at every read (a caller may change what it got)', async () => {
    const { saver, oldest } = await threadOf(3);
    const first = (await saver.getTuple(oldest))!;
    const expected = structuredClone({ metadata: first.metadata, pendingWrites: first.pendingWrites });
    (first.metadata as Record<string, unknown>)['source'] = 'changed by the caller';
    first.pendingWrites!.length = 0;
    const again = (await saver.getTuple(oldest))!;
    expect({ metadata: again.metadata, pendingWrites: again.pendingWrites }).toEqual(expected);
    expect(again.metadata).not.toBe(first.metadata);
  });

  it('fs: answers as its first read did, fresh values each time, with a few promises (each one costs under async hooks)', async () => {
    const storage = fsStorage({ dir: newDir() });
    const { saver, oldest } = await threadOf(4, storage);
    const first = (await saver.getTuple(oldest))!;
    expect(first.pendingWrites?.length).toBe(2);
    const expected = structuredClone(first);
    (first.checkpoint.channel_values as Record<string, unknown>)['added'] = 'by the caller';
    (first.metadata as Record<string, unknown>)['source'] = 'changed by the caller';
    first.pendingWrites!.length = 0;
    let promises = 0;
    const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && promises++) }).enable();
    let again;
    try {
      again = await saver.getTuple(oldest);
    } finally {
      hook.disable();
    }
    expect(again).toEqual(expected);
    // The document and its writes folder in one linked read, each decoded before: 16 promises when each step was awaited.
    expect(promises).toBeLessThanOrEqual(6);
    await storage.close();
  });

  it('fs: a checkpoint read again whose values need the serializer, or too large to build without a promise, answers as its first read', async () => {
    const storage = fsStorage({ dir: newDir() });
    const saver = new SavepointSaver({ storage });
    const base = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const revived = await saver.put(
      base,
      { ...emptyCheckpoint(), id: uuid6(1), channel_values: { seen: new Map([['a', 1]]) }, channel_versions: { seen: 1 } },
      { source: 'loop', step: 1, parents: {} },
      { seen: 1 },
    );
    await saver.putWrites(revived, [['tags', new Set(['x'])]], 'task-1');
    const large = await saver.put(
      revived,
      { ...emptyCheckpoint(), id: uuid6(2), channel_values: { text: 'x'.repeat(9000) }, channel_versions: { text: 2 } },
      { source: 'loop', step: 2, parents: {} },
      { text: 2 },
    );
    await saver.putWrites(large, [['note', 'plain']], 'task-2');
    for (const config of [revived, large]) {
      const first = (await saver.getTuple(config))!;
      const again = (await saver.getTuple(config))!;
      expect(again).toEqual(first);
      expect(again.checkpoint).not.toBe(first.checkpoint);
    }
    const tuple = (await saver.getTuple(revived))!;
    expect(tuple.checkpoint.channel_values['seen']).toBeInstanceOf(Map);
    expect(tuple.pendingWrites?.[0]?.[2]).toBeInstanceOf(Set);
    await storage.close();
  });
});
