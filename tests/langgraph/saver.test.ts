import type { RunnableConfig } from '@langchain/core/runnables';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertKey, assertRunId, readSnapshot } from 'savepoint/toolkit';
import { isCheckpointError, listAll, memoryStorage } from 'savepoint';
import { langGraphProfile, runIdOf, SavepointSaver } from 'savepoint/langgraph';
import type { StorageAdapter } from 'savepoint';
import { manualClock } from 'savepoint/testing';
import { copiesOnPut } from '../../src/contract/synchronous-storage.js';
import { decodeStoredWrites } from '../../src/langgraph/writes.js';
import { cp, meta } from './checkpoints.js';

async function toArray<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe('SavepointSaver: ids, namespaces and ordering beyond the validation suite', () => {
  it('property: any thread id and namespace (unicode, long, path-like) round-trips, stays in its own thread, and deleteThread removes only it', async () => {
    const id = fc.oneof(
      fc.string({ unit: 'grapheme', minLength: 1, maxLength: 80 }),
      fc.constantFrom('../x', 'a/b', '.', '..', 'x_616263', 'h_0', 'abc', 'A.B', '__proto__'),
    );
    await fc.assert(
      fc.asyncProperty(id, id, fc.oneof(fc.constant(''), id), async (a, b, ns) => {
        fc.pre(a !== b);
        const storage = memoryStorage();
        const saver = new SavepointSaver({ storage });
        const runA = await runIdOf(a, ns);
        assertRunId(runA);
        assertKey(`langgraph/${runA}/history/x.json`);
        const ca = await saver.put({ configurable: { thread_id: a, checkpoint_ns: ns } }, cp(1, { v: a }), meta, { v: 2 });
        await saver.put({ configurable: { thread_id: b, checkpoint_ns: ns } }, cp(2, { v: b }), meta, { v: 3 });
        const got = await saver.getTuple({ configurable: { thread_id: a, checkpoint_ns: ns } });
        expect(got?.config).toEqual(ca);
        expect(got?.checkpoint.channel_values).toEqual({ v: a });
        expect((await toArray(saver.list({ configurable: { thread_id: a } }))).map((t) => t.config.configurable?.thread_id)).toEqual([a]);
        expect((await toArray(saver.list({ configurable: {} }))).length).toBe(2);
        await saver.deleteThread(a);
        expect(await saver.getTuple({ configurable: { thread_id: a, checkpoint_ns: ns } })).toBeUndefined();
        expect((await saver.getTuple({ configurable: { thread_id: b, checkpoint_ns: ns } }))?.checkpoint.channel_values).toEqual({ v: b });
      }),
      { numRuns: 60 },
    );
  });

  it("writes sent before their checkpoint's put (LangGraph chains puts, not writes) are found on that checkpoint", async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const first = await saver.put({ configurable: { thread_id: 't' } }, cp(1, { a: 1 }), meta, { a: 2 });
    const second = cp(2, { a: 2 });
    const config = { configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: second.id } };
    await saver.putWrites(config, [['a', 3]], 'task-early');
    await saver.put(first, second, meta, { a: 3 });
    const tuple = await saver.getTuple(config);
    expect(tuple?.pendingWrites).toEqual([['task-early', 'a', 3]]);
    expect(tuple?.parentConfig?.configurable?.checkpoint_id).toBe(first.configurable?.checkpoint_id);
  });

  it('unchanged channels are carried from the parent as stored bytes; channels not in newVersions without a matching parent are not stored', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const c1 = { ...cp(1, { big: 'x'.repeat(100), small: 1 }), channel_versions: { big: 1, small: 1 } };
    const cfg1 = await saver.put({ configurable: { thread_id: 'c' } }, c1, meta, { big: 1, small: 1 });
    const c2 = { ...cp(2, { big: 'x'.repeat(100), small: 2 }), channel_versions: { big: 1, small: 2 } };
    const cfg2 = await saver.put(cfg1, c2, meta, { small: 2 });
    expect((await saver.getTuple(cfg2))?.checkpoint.channel_values).toEqual({ big: 'x'.repeat(100), small: 2 });
    // Without a parent, an unchanged channel has nowhere to come from (LangGraph's savers store it under its version only).
    const c3 = { ...cp(3, { big: 'y', small: 3 }), channel_versions: { big: 5, small: 3 } };
    const cfg3 = await saver.put({ configurable: { thread_id: 'c' } }, c3, meta, { small: 3 });
    expect((await saver.getTuple(cfg3))?.checkpoint.channel_values).toEqual({ small: 3 });
  });

  it('regular writes already stored are kept, special writes (errors, interrupts) replace; every write file is sealed', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const cfg = await saver.put({ configurable: { thread_id: 'w' } }, cp(1), meta, {});
    await saver.putWrites(cfg, [['x', 1]], 'task');
    await saver.putWrites(
      cfg,
      [
        ['x', 2],
        ['__error__', 'boom'],
      ],
      'task',
    );
    await saver.putWrites(cfg, [['__error__', 'boom again']], 'task');
    expect((await saver.getTuple(cfg))?.pendingWrites).toEqual([
      ['task', '__error__', 'boom again'],
      ['task', 'x', 1],
    ]);
    const [file] = await listAll(storage, 'langgraph/w/parts/');
    const original = new TextDecoder().decode((await storage.get(file!.key))!.bytes);
    const text = original.replace('"task_path":""', '"task_path":"x"');
    expect(text).not.toBe(original);
    await storage.put(file!.key, new TextEncoder().encode(text));
    const err = await saver.getTuple(cfg).catch((e: unknown) => e);
    expect(isCheckpointError(err, 'checkpoint_integrity_mismatch')).toBe(true);
  });

  it('rejects bad arguments with reason codes: no thread id, no checkpoint id for writes, ids that cannot name a file, bad options', async () => {
    const saver = new SavepointSaver({ storage: memoryStorage() });
    const code = async (p: Promise<unknown>): Promise<string | undefined> =>
      (
        (await p.then(
          () => undefined,
          (e: unknown) => e,
        )) as { reasonCode?: string } | undefined
      )?.reasonCode;
    expect(await code(saver.put({ configurable: {} }, cp(1), meta, {}))).toBe('checkpoint_config_invalid');
    expect(await code(saver.putWrites({ configurable: { thread_id: 't' } }, [], 'x'))).toBe('checkpoint_config_invalid');
    expect(await code(saver.put({ configurable: { thread_id: 't' } }, { ...cp(1), id: '../../etc' }, meta, {}))).toBe(
      'checkpoint_key_invalid',
    );
    expect(await code(saver.getTuple({ configurable: { thread_id: 't', checkpoint_id: 'a/b' } }))).toBe('checkpoint_key_invalid');
    expect(() => new SavepointSaver({ storage: memoryStorage(), keepLast: 0 })).toThrow(/keepLast/);
    expect(() => new SavepointSaver({} as never)).toThrow(/storage/);
  });
});

describe('SavepointSaver on memoryStorage: one sealing buffer, reused', () => {
  it('every document sealed in the reused buffer is stored intact: the store holds, byte for byte, what a saver sealing each document into a buffer of its own stores', async () => {
    const storage = memoryStorage();
    // A copy of the adapter's methods is not the marked store: that saver seals into a new buffer each time.
    const plain: StorageAdapter = { ...memoryStorage() };
    expect(copiesOnPut(storage)).toBe(true);
    expect(copiesOnPut(plain)).toBe(false);
    const savers = [new SavepointSaver({ storage, clock: manualClock() }), new SavepointSaver({ storage: plain, clock: manualClock() })];
    // Documents of every size around each other (a short one after a long one must not keep the
    // long one's tail), one too large for the buffer.
    const checkpoints = Array.from({ length: 12 }, (_, i) =>
      cp(i + 1, { note: 'é"'.repeat(i === 6 ? 12_000 : i % 3 === 2 ? 2000 : i + 1), n: i + 1 }),
    );
    for (const saver of savers) {
      let config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
      for (let n = 1; n <= 12; n++) {
        config = await saver.put(config, checkpoints[n - 1]!, { ...meta, step: n }, { note: n + 1, n: n + 1 });
        await saver.putWrites(
          config,
          [
            ['note', 'w'.repeat(n * 97)],
            ['n', n],
          ],
          `task-${n}`,
        );
      }
    }
    const keys = await listAll(storage, '');
    // 12 checkpoints, 12 tasks' writes, the head; and the content chunks of the documents over 16 KiB (on by default).
    expect(keys.filter((k) => !k.key.startsWith('chunks/')).length).toBe(25);
    expect(await listAll(plain, '')).toEqual(keys);
    for (const { key } of keys) {
      const ours = (await storage.get(key))!.bytes;
      expect(ours).toEqual((await plain.get(key))!.bytes);
      if (key.startsWith('chunks/')) continue;
      if (key.includes('/history/')) await readSnapshot(storage, langGraphProfile, key);
      else if (key.includes('/parts/')) await decodeStoredWrites(storage, key, ours);
    }
  });
});
