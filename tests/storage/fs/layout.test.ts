/**
 * fsStorage's `layout` option: the packed layout (values in segment files, src/storage/fs-packed)
 * behind `fsStorage({ dir, layout: 'packed' })`, a directory of one layout refused by the other,
 * the file layout's own options refused with it, and a profile whose files other tools read
 * refusing it.
 */
import fc from 'fast-check';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  createWriter,
  defaultProfile,
  isCheckpointError,
  planResume,
  systemClock,
  type AutoSweepOutcome,
  type StorageAdapter,
} from 'savepoint';
import { fsStorage, type FsStorageOptions } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { readLinked, type ReadLinks } from '../../../src/contract/linked-read.js';
import { getManyOf, listKeysOf } from '../../../src/contract/storage.js';
import { sweepSettled } from '../../../src/writer/auto-sweep.js';
import { cp, meta } from '../../langgraph/checkpoints.js';
import { superstep, type Cursor } from '../../support/langgraph-superstep.js';
import { prose } from '../../support/prose.js';
import { rejection } from '../../support/rejection.js';
import { scratchDirs } from '../../support/scratch.js';

const newDir = scratchDirs('fs-layout');
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | undefined): string | undefined => (bytes ? new TextDecoder().decode(bytes) : undefined);

function thrown(make: () => unknown): unknown {
  try {
    make();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe("fsStorage({ layout: 'packed' })", () => {
  it('is the packed store: no file per key, values opaque to other tools, a new version every write', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir, layout: 'packed' });
    expect(storage.capabilities).toMatchObject({ atomicBatch: true, linkedRead: true, opaqueValues: true, versionsPerWrite: true });
    expect(storage.capabilities.keysAreFiles).toBeUndefined();
    expect((await storage.ready()).layout).toBe('packed');
    const first = await storage.put('runs/a/latest.json', utf8('one'));
    const second = await storage.put('runs/a/latest.json', utf8('one'));
    expect(second.version).not.toBe(first.version);
    await storage.close();
    const again = fsStorage({ dir, layout: 'packed' });
    expect(text((await again.get('runs/a/latest.json'))?.bytes)).toBe('one');
    await again.close();
    const files = fsStorage({ dir: newDir(), layout: 'files' });
    expect((await files.ready()).layout).toBe('files');
    await files.close();
  });

  it('takes no option of the file layout but cleanupOnOpen (ignored, as a packed directory opened without a layout ignores it), and no layout it does not know', async () => {
    const refused: (keyof FsStorageOptions)[] = [];
    const options: Partial<FsStorageOptions> = {
      journal: true,
      journalCheckpointBytes: 1 << 20,
      staleAfterMs: 1000,
      lockTimeoutMs: 1000,
      fileMode: 0o600,
      clock: systemClock,
    };
    for (const [name, value] of Object.entries(options)) {
      const err = thrown(() => fsStorage({ dir: newDir(), layout: 'packed', [name]: value }));
      if (isCheckpointError(err, 'checkpoint_config_invalid') && err.message.includes(`\`${name}\``))
        refused.push(name as keyof FsStorageOptions);
    }
    expect(refused).toEqual(Object.keys(options));
    const cleaning = fsStorage({ dir: newDir(), layout: 'packed', cleanupOnOpen: false });
    expect((await cleaning.ready()).layout).toBe('packed');
    await cleaning.close();
    const unknown = thrown(() => fsStorage({ dir: newDir(), layout: 'zip' as 'packed' }));
    expect(isCheckpointError(unknown, 'checkpoint_config_invalid')).toBe(true);
  });

  it('opens in the background: ready() and the first call reject with what opening found (a damaged manifest)', async () => {
    const dir = newDir();
    writeFileSync(join(dir, '.sp\\packed\\manifest'), 'not a manifest');
    const storage = fsStorage({ dir, layout: 'packed' });
    expect((await rejection(storage.ready())).reasonCode).toBe('checkpoint_integrity_mismatch');
    expect((await rejection(storage.get('k'))).reasonCode).toBe('checkpoint_integrity_mismatch');
    await storage.close();
  });

  it('does not make a missing directory with create: false', () => {
    const err = thrown(() => fsStorage({ dir: join(newDir(), 'missing'), layout: 'packed', create: false }));
    expect(isCheckpointError(err, 'checkpoint_storage_unavailable')).toBe(true);
  });
});

describe('fsStorage: a directory of one layout opened with the other', () => {
  it('a directory holding keys as files (a file, a folder, the journal) is refused by the packed layout; an empty one is not', async () => {
    const withFile = newDir();
    writeFileSync(join(withFile, 'latest.json'), '{}');
    const withFolder = newDir();
    mkdirSync(join(withFolder, 'checkpoints'));
    const withJournal = newDir();
    const journaled = fsStorage({ dir: withJournal, layout: 'files' });
    await journaled.ready();
    await journaled.close();
    for (const dir of [withFile, withFolder, withJournal]) {
      const err = thrown(() => fsStorage({ dir, layout: 'packed' }));
      expect(isCheckpointError(err, 'checkpoint_config_invalid'), dir).toBe(true);
      expect((err as { details: unknown }).details).toMatchObject({ reason: 'layout_mismatch', layout: 'files', asked: 'packed' });
      expect((err as Error).message).toContain(JSON.stringify(dir));
    }
    const empty = fsStorage({ dir: newDir(), layout: 'packed' });
    await empty.put('k', utf8('v'));
    await empty.close();
  });

  it('a packed directory is refused by the file layout, before anything is read or written there', async () => {
    const dir = newDir();
    const packed = fsStorage({ dir, layout: 'packed' });
    await packed.put('checkpoints/run-1/latest.json', utf8('packed'));
    await packed.close();
    const files = fsStorage({ dir, layout: 'files' });
    const err = await rejection(files.ready());
    expect(err.reasonCode).toBe('checkpoint_config_invalid');
    expect(err.details).toMatchObject({ reason: 'layout_mismatch', layout: 'packed', asked: 'files' });
    expect(err.message).toContain(JSON.stringify(dir));
    expect((await rejection(files.put('checkpoints/run-1/latest.json', utf8('files')))).reasonCode).toBe('checkpoint_config_invalid');
    await files.close();
    const direct = fsStorage({ dir, journal: false });
    expect((await rejection(direct.get('checkpoints/run-1/latest.json'))).reasonCode).toBe('checkpoint_config_invalid');
    await direct.close();
    const reopened = fsStorage({ dir, layout: 'packed' });
    expect(text((await reopened.get('checkpoints/run-1/latest.json'))?.bytes)).toBe('packed');
    await reopened.close();
  });
});

describe('the packed layout and profiles', () => {
  it('a spec profile (its files read by other tools) refuses it; defaultProfile writes and resumes on it', async () => {
    const storage = fsStorage({ dir: newDir(), layout: 'packed' });
    const refused = thrown(() => createWriter({ storage, profile: snapshotLifecycle, runId: 'run-1' }));
    expect(isCheckpointError(refused, 'checkpoint_unsupported')).toBe(true);
    expect((refused as Error).message).toContain('other tools read');
    expect((await rejection(planResume({ storage, profile: snapshotLifecycle, runId: 'run-1' }))).reasonCode).toBe(
      'checkpoint_unsupported',
    );
    const writer = createWriter({ storage, profile: defaultProfile, runId: 'run-1' });
    await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
    await writer.close();
    const plan = await planResume({ storage, profile: defaultProfile, runId: 'run-1' });
    expect(plan.snapshot?.payload).toEqual({ step: 1 });
    await storage.close();
  });
});

describe('the packed layout: reads', () => {
  it('maxReadBytes refuses a larger value from its size, in get, getMany and the linked read', async () => {
    const storage = fsStorage({ dir: newDir(), layout: 'packed', maxReadBytes: 8 });
    await storage.put('big', utf8('nine bytes'));
    await storage.put('ptr', utf8('{"id":"big"}'));
    await storage.put('small', utf8('ok'));
    expect((await rejection(storage.get('big'))).reasonCode).toBe('checkpoint_too_large');
    expect((await rejection(getManyOf(storage)!(['small', 'big']))).reasonCode).toBe('checkpoint_too_large');
    expect((await rejection(storage.getLinked('ptr', { get: { member: 'id', before: '', after: '' } }))).reasonCode).toBe(
      'checkpoint_too_large',
    );
    expect(text((await storage.get('small'))?.bytes)).toBe('ok');
    expect((await rejection(storage.get('small', { maxBytes: 1 }))).message).toContain('maxBytes');
    await storage.close();
  });

  it('the linked read answers what reading step by step answers, after any writes (a rewritten pointer too)', async () => {
    const LINKS: ReadLinks = { get: { member: 'id', before: 'd/', after: '.json' }, list: { member: 'seq', before: 'w/', after: '/' } };
    const ids = ['a', 'b', 'c'];
    const op = fc.oneof(
      fc.record({ kind: fc.constant('pointer' as const), id: fc.constantFrom(...ids), seq: fc.nat(3) }),
      fc.record({ kind: fc.constant('doc' as const), id: fc.constantFrom(...ids), body: fc.string({ maxLength: 4 }) }),
      fc.record({
        kind: fc.constant('part' as const),
        seq: fc.nat(3),
        name: fc.constantFrom('x', 'y', 'z'),
        body: fc.string({ maxLength: 4 }),
      }),
      fc.record({ kind: fc.constant('drop' as const), key: fc.constantFrom('p.json', 'd/a.json', 'd/b.json', 'w/1/x', 'w/2/y', 'w/0/z') }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const storage = fsStorage({ dir: newDir(), layout: 'packed' });
        // The same store without its linked read: readLinked reads it step by step.
        const stepwise: StorageAdapter = {
          ...storage,
          capabilities: { ...storage.capabilities, linkedRead: false },
        };
        try {
          for (const o of ops) {
            if (o.kind === 'pointer') await storage.put('p.json', utf8(JSON.stringify({ id: o.id, seq: o.seq })));
            else if (o.kind === 'doc') await storage.put(`d/${o.id}.json`, utf8(o.body));
            else if (o.kind === 'part') await storage.put(`w/${o.seq}/${o.name}`, utf8(o.body));
            else await storage.delete(o.key);
            const own = await storage.getLinked('p.json', LINKS);
            const steps = await readLinked(stepwise, 'p.json', LINKS);
            expect(own).toEqual(steps);
          }
        } finally {
          await storage.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('getMany answers what get answers, values close together read as one span, each answer a buffer of its own', async () => {
    const keyArb = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'gone');
    const write = fc.oneof(
      fc.record({ kind: fc.constant('put' as const), key: keyArb, size: fc.constantFrom(0, 3, 100, 5000, 20000) }),
      fc.record({ kind: fc.constant('batch' as const), keys: fc.uniqueArray(keyArb, { minLength: 1, maxLength: 4 }) }),
      fc.record({ kind: fc.constant('delete' as const), key: keyArb }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(write, { maxLength: 12 }), fc.array(keyArb, { maxLength: 10 }), async (writes, asked) => {
        const storage = fsStorage({ dir: newDir(), layout: 'packed' });
        try {
          let n = 0;
          const bytes = (size: number): Uint8Array => Uint8Array.from({ length: size }, (_, i) => (i + n++) & 0xff);
          for (const w of writes) {
            if (w.kind === 'put') await storage.put(w.key, bytes(w.size));
            else if (w.kind === 'batch') await storage.batch!(w.keys.map((key) => ({ type: 'put' as const, key, bytes: bytes(7) })));
            else await storage.delete(w.key);
          }
          const many = await getManyOf(storage)!(asked);
          const one = await Promise.all(asked.map((key) => storage.get(key)));
          expect(many).toEqual(one);
          const buffers = many.filter((v) => v !== undefined).map((v) => v.bytes.buffer);
          expect(new Set(buffers).size).toBe(buffers.length);
        } finally {
          await storage.close();
        }
      }),
      { numRuns: 40 },
    );
  });

  it('another store on the directory sees each acknowledged write at once in its linked read, getMany and listKeys', async () => {
    const dir = newDir();
    const a = fsStorage({ dir, layout: 'packed' });
    const b = fsStorage({ dir, layout: 'packed' });
    const links: ReadLinks = { get: { member: 'id', before: 'd/', after: '' }, list: { member: 'id', before: 'w/', after: '/' } };
    try {
      await b.ready();
      for (let i = 0; i < 5; i++) {
        await a.batch!([
          { type: 'put', key: 'p', bytes: utf8(JSON.stringify({ id: `c${i}` })) },
          { type: 'put', key: `d/c${i}`, bytes: utf8(`doc ${i}`) },
          { type: 'put', key: `w/c${i}/x`, bytes: utf8(`write ${i}`) },
        ]);
        const linked = await b.getLinked('p', links);
        expect(text(linked?.got?.object?.bytes)).toBe(`doc ${i}`);
        expect(linked?.listed?.objects.map((o) => text(o.bytes))).toEqual([`write ${i}`]);
        const many = await getManyOf(b)!(['p', `d/c${i}`]);
        expect(many.map((v) => v?.version)).toEqual([(await a.get('p'))?.version, (await a.get(`d/c${i}`))?.version]);
        const named: string[] = [];
        for await (const key of listKeysOf(b, 'd/')) named.push(key);
        expect(named.length).toBe(i + 1);
      }
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('listKeys yields the keys list yields', async () => {
    const storage = fsStorage({ dir: newDir(), layout: 'packed' });
    for (const key of ['a/1', 'a/2', 'a/b/3', 'ab', 'b']) await storage.put(key, utf8(key));
    await storage.delete('a/2');
    const named: string[] = [];
    for await (const key of listKeysOf(storage, 'a')) named.push(key);
    expect(named).toEqual(['a/1', 'a/b/3', 'ab']);
    expect(Object.keys(storage)).not.toContain('listKeys');
    await storage.close();
  });

  it("SavepointSaver's getTuple reads a thread's head, checkpoint and writes in one linked read: no get, no listing", async () => {
    const storage = fsStorage({ dir: newDir(), layout: 'packed' });
    const saver = new SavepointSaver({ storage });
    const cursor: Cursor = { config: { configurable: { thread_id: 't', checkpoint_ns: '' } }, step: 0 };
    for (let i = 0; i < 3; i++) await superstep(saver, cursor);
    await saver.putWrites(cursor.config, [['note', 'pending']], 'task-next');
    const calls: string[] = [];
    const counted = new Proxy(storage, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        if (typeof value !== 'function' || typeof name !== 'string') return value;
        return (...args: unknown[]) => {
          calls.push(name);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const reader = new SavepointSaver({ storage: counted });
    const config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const tuple = await reader.getTuple(config);
    expect(tuple?.pendingWrites).toEqual([['task-next', 'note', 'pending']]);
    expect(calls).toEqual(['getLinked']);
    await storage.close();
  });
});

describe('the packed layout under SavepointSaver with keepLast', () => {
  /** The conversation at turn `n`: ten ~2 KB messages, message n % 10 replaced by turn n's (documents stored as content chunks). */
  const messagesAt = (n: number): string[] => {
    const seeds = Array.from({ length: 10 }, (_, i) => 1000 + i);
    for (let k = 1; k <= n; k++) seeds[k % 10] = k;
    return seeds.map((seed) => prose(seed, 2000));
  };

  it('the automatic sweep frees chunks; every kept checkpoint reads back after a reopen', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir, layout: 'packed' });
    const outcomes: AutoSweepOutcome[] = [];
    const saver = new SavepointSaver({
      storage,
      keepLast: 5,
      sweepChunks: { afterDeleted: 4, minIntervalMs: 0, graceMs: 0 },
      onSweep: (o) => outcomes.push(o),
    });
    let config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const ids: string[] = [];
    const turns = 60;
    for (let n = 1; n <= turns; n++) {
      const checkpoint = cp(n, { messages: messagesAt(n) });
      config = await saver.put(config, checkpoint, { ...meta, step: n }, checkpoint.channel_versions);
      ids.push(checkpoint.id);
      await sweepSettled(storage);
    }
    expect(outcomes.every((o) => o.ok)).toBe(true);
    expect(outcomes.some((o) => o.ok && o.report.deleted.length > 0)).toBe(true);
    await storage.close();
    const reopened = fsStorage({ dir, layout: 'packed' });
    const reader = new SavepointSaver({ storage: reopened });
    for (const [i, id] of ids.slice(-5).entries()) {
      const tuple = await reader.getTuple({ configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: id } });
      expect(tuple?.checkpoint.channel_values, id).toEqual({ messages: messagesAt(turns - 4 + i) });
    }
    await reopened.close();
  });
});

describe('fsStorage getLinked: the prefixes given outright', () => {
  it.each(['journal', 'direct', 'packed'] as const)(
    '%s: refuses a prefix that is no key prefix in keys, entries, first and keysIfAbsent; an absent value with keysIfAbsent is listed',
    async (mode) => {
      const storage = fsStorage(
        mode === 'packed' ? { dir: newDir(), layout: 'packed' } : { dir: newDir(), layout: 'files', journal: mode === 'journal' },
      );
      await storage.put('t/history/a.json', utf8('{}'));
      for (const links of [
        { keys: '../' },
        { entries: 'a/./' },
        { first: { prefix: '/x', count: 1 } },
        { keysIfAbsent: 'a//' },
      ] as ReadLinks[])
        expect((await rejection(storage.getLinked('t/head.json', links))).reasonCode).toBe('checkpoint_key_invalid');
      // The file layout leaves the part unread (undefined); readLinked lists it after. The packed one reads it.
      const own = await storage.getLinked('t/head.json', { keysIfAbsent: 't/' });
      expect(own).toEqual(mode === 'packed' ? { absent: { prefix: 't/', keys: ['t/history/a.json'] } } : undefined);
      expect(await readLinked(storage, 't/head.json', { keysIfAbsent: 't/' })).toEqual({
        absent: { prefix: 't/', keys: ['t/history/a.json'] },
      });
      await storage.close();
    },
  );
});
