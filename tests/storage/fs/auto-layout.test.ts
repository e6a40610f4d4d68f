/**
 * `fsStorage({ dir })` without a `layout`: the layout the directory holds, else the one its first
 * consumer declares (`declareReaders`), else the file layout at the first put or batch; reads of a
 * directory holding none fix nothing. The decision table as a property over sequences of calls,
 * the members and capabilities before and after, the consumers' declarations, two stores on one
 * new directory, and a file layout made beside a new packed one at the same moment.
 */
import fc from 'fast-check';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  defaultProfile,
  encryptedStorage,
  EncryptionKey,
  isCheckpointError,
  planResume,
  type StorageAdapter,
  type StoreReaders,
} from 'savepoint';
import { fsStorage, type FsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { snapshotLifecycle } from 'savepoint/snapshot-lifecycle';
import { faultyStorage } from 'savepoint/testing';
import { packedStoreOf } from '../../../src/storage/fs/packed-layout.js';
import { rejection } from '../../support/rejection.js';
import { scratchDirs } from '../../support/scratch.js';

const newDir = scratchDirs('fs-auto-layout');
const utf8 = (text: string): Uint8Array => new TextEncoder().encode(text);
const text = (bytes: Uint8Array | undefined): string | undefined => (bytes ? new TextDecoder().decode(bytes) : undefined);
const MANIFEST = '.sp\\packed\\manifest';

type Start = 'missing' | 'empty' | 'files' | 'packed';

/** A directory as `start` says, with `seed` under key `seed` when it holds a layout. */
async function startDir(start: Start): Promise<string> {
  const dir = start === 'missing' ? join(newDir(), 'new') : newDir();
  if (start === 'files' || start === 'packed') {
    const seeding = fsStorage({ dir, layout: start });
    await seeding.put('seed', utf8('seed'));
    await seeding.close();
  }
  return dir;
}

/** What the directory holds on disk, looked at from outside. */
function layoutOnDisk(dir: string): 'files' | 'packed' | undefined {
  if (!existsSync(dir)) return undefined;
  if (existsSync(join(dir, MANIFEST))) return 'packed';
  return readdirSync(dir).length > 0 ? 'files' : undefined;
}

type Call =
  | { readonly kind: 'declare'; readonly readers: StoreReaders }
  | { readonly kind: 'put' | 'batch' | 'get' | 'delete'; readonly key: string }
  | { readonly kind: 'list' };

const callArb: fc.Arbitrary<Call> = fc.oneof(
  fc.record({ kind: fc.constant('declare' as const), readers: fc.constantFrom<StoreReaders>('savepoint', 'other-tools') }),
  fc.record({
    kind: fc.constantFrom('put' as const, 'batch' as const, 'get' as const, 'delete' as const),
    key: fc.constantFrom('a', 'b/c', 'seed'),
  }),
  fc.record({ kind: fc.constant('list' as const) }),
);

/** The decision table: the layout a directory starting as `start` ends with after `calls`. */
function expectedLayout(start: Start, calls: readonly Call[]): 'files' | 'packed' | undefined {
  if (start === 'files' || start === 'packed') return start;
  for (const call of calls) {
    if (call.kind === 'declare') return call.readers === 'savepoint' ? 'packed' : 'files';
    if (call.kind === 'put' || call.kind === 'batch') return 'files';
  }
  return undefined;
}

async function apply(storage: FsStorage, call: Call, model: Map<string, string>, step: number): Promise<void> {
  switch (call.kind) {
    case 'declare':
      storage.declareReaders!(call.readers);
      return;
    case 'put':
      await storage.put(call.key, utf8(`v${step}`));
      model.set(call.key, `v${step}`);
      return;
    case 'batch':
      await storage.batch!([{ type: 'put', key: call.key, bytes: utf8(`v${step}`) }]);
      model.set(call.key, `v${step}`);
      return;
    case 'get':
      expect(text((await storage.get(call.key))?.bytes)).toBe(model.get(call.key));
      return;
    case 'delete':
      expect(await storage.delete(call.key)).toBe(model.has(call.key));
      model.delete(call.key);
      return;
    case 'list': {
      const keys: string[] = [];
      for await (const entry of storage.list('')) keys.push(entry.key);
      expect(keys).toEqual([...model.keys()].sort());
    }
  }
}

describe('fsStorage without a layout: the decision table', () => {
  it('property: the layout ends as the table says, reads fix nothing, and every value written reads back through a new store', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<Start>('missing', 'empty', 'files', 'packed'),
        fc.array(callArb, { maxLength: 8 }),
        async (start, calls) => {
          const dir = await startDir(start);
          const model = new Map<string, string>(start === 'files' || start === 'packed' ? [['seed', 'seed']] : []);
          const storage = fsStorage({ dir });
          try {
            for (const [step, call] of calls.entries()) await apply(storage, call, model, step);
            const expected = expectedLayout(start, calls);
            expect((await storage.ready()).layout).toBe(expected);
          } finally {
            await storage.close();
          }
          const expected = expectedLayout(start, calls);
          // A layout is on disk only once fixed (a packed one as soon as it is declared).
          if (expected === 'packed') expect(layoutOnDisk(dir)).toBe('packed');
          if (expected === undefined) expect(layoutOnDisk(dir)).toBeUndefined();
          const again = fsStorage({ dir });
          try {
            for (const [key, value] of model) expect(text((await again.get(key))?.bytes)).toBe(value);
            const keys: string[] = [];
            for await (const entry of again.list('')) keys.push(entry.key);
            expect(keys).toEqual([...model.keys()].sort());
          } finally {
            await again.close();
          }
        },
      ),
      { numRuns: 60 },
    );
  });

  it('before a layout is fixed: what both layouts can do; then the fixed layout’s own capabilities and members', async () => {
    const undecided = fsStorage({ dir: newDir() });
    expect(undecided.capabilities).toEqual({ atomicBatch: true, crossProcessConditional: true, linkedRead: true, versionsPerWrite: true });
    expect(typeof undecided.batch).toBe('function');
    expect('move' in undecided || 'getMany' in undecided).toBe(false);
    expect(Object.keys(undecided)).not.toContain('listKeys');
    expect(await undecided.get('k')).toBeUndefined();
    expect((await undecided.ready()).layout).toBeUndefined();

    const packed = fsStorage({ dir: newDir() });
    packed.declareReaders!('savepoint');
    const files = fsStorage({ dir: newDir() });
    files.declareReaders!('other-tools');
    expect(packed.capabilities).toMatchObject({ opaqueValues: true, multiGet: true });
    expect(typeof (packed as { getMany?: unknown }).getMany).toBe('function');
    expect(typeof packed.flush).toBe('undefined');
    expect(files.capabilities).toMatchObject({ move: true, keysAreFiles: true });
    expect(typeof (files as { move?: unknown }).move).toBe('function');
    expect(typeof files.flush).toBe('function');
    for (const store of [packed, files]) {
      expect(Object.keys(store)).not.toContain('listKeys');
      expect(typeof (store as { listKeys?: unknown }).listKeys).toBe('function');
    }
    // Once fixed (and, in a new directory, once the packed store is open), the methods are the layout's own: no wrapper per call.
    await packed.ready();
    const own = packedStoreOf(packed)!;
    for (const name of ['get', 'getMany', 'getLinked', 'put', 'delete', 'batch', 'list', 'close', 'listKeys'] as const)
      expect((packed as unknown as Record<string, unknown>)[name], name).toBe(own[name]);
    const settled = fsStorage({ dir: await startDir('files') });
    expect((await settled.ready()).layout).toBe('files');
    expect(String(settled.get)).not.toContain('heldStore');
    await Promise.all([undecided.close(), packed.close(), files.close(), settled.close()]);
  });

  it('a wrapper spread from the undecided store answers as the store once a layout is fixed, claiming no more than both layouts can do', async () => {
    const dir = newDir();
    const store = fsStorage({ dir });
    const puts: string[] = [];
    const wrapper: StorageAdapter = { ...store, put: (key, bytes, options) => (puts.push(key), store.put(key, bytes, options)) };
    wrapper.declareReaders!('savepoint');
    await wrapper.put('k', utf8('through the wrapper'));
    expect(puts).toEqual(['k']);
    expect(layoutOnDisk(dir)).toBe('packed');
    expect(store.capabilities.multiGet).toBe(true);
    expect(wrapper.capabilities).toEqual({ atomicBatch: true, crossProcessConditional: true, linkedRead: true, versionsPerWrite: true });
    expect(text((await wrapper.get('k'))?.bytes)).toBe('through the wrapper');
    const [outcome] = await wrapper.batch!([{ type: 'put', key: 'b', bytes: utf8('batched') }]);
    expect(outcome).toMatchObject({ type: 'put', key: 'b' });
    expect(text((await store.get('b'))?.bytes)).toBe('batched');
    await store.close();
  });

  it('a later declaration changes nothing, and reads of a directory holding none look at it again at each call', async () => {
    const dir = newDir();
    const reader = fsStorage({ dir });
    expect(await reader.get('k')).toBeUndefined();
    const writer = fsStorage({ dir });
    writer.declareReaders!('savepoint');
    await writer.put('k', utf8('packed'));
    // Another store made the directory packed: the reader sees it at its next call.
    expect(text((await reader.get('k'))?.bytes)).toBe('packed');
    expect((await reader.ready()).layout).toBe('packed');
    reader.declareReaders!('other-tools');
    expect(reader.capabilities.opaqueValues).toBe(true);
    await Promise.all([reader.close(), writer.close()]);
  });

  it('a delete of a directory holding nothing answers false and fixes nothing; an option of the file layout chooses it', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir });
    expect(await storage.delete('k')).toBe(false);
    expect(layoutOnDisk(dir)).toBeUndefined();
    storage.declareReaders!('savepoint');
    expect((await storage.ready()).layout).toBe('packed');
    await storage.close();
    const journaled = fsStorage({ dir: newDir(), journal: true });
    journaled.declareReaders?.('savepoint');
    expect((await journaled.ready()).layout).toBe('files');
    await journaled.close();
    // cleanupOnOpen alone (the CLI's) opens either layout.
    const cli = fsStorage({ dir, create: false, cleanupOnOpen: false });
    expect((await cli.ready()).layout).toBe('packed');
    await cli.close();
  });

  it('refuses a declaration it does not know', () => {
    const storage = fsStorage({ dir: newDir() });
    let err: unknown;
    try {
      storage.declareReaders!('everyone' as StoreReaders);
    } catch (e) {
      err = e;
    }
    expect(isCheckpointError(err, 'checkpoint_config_invalid')).toBe(true);
  });
});

describe('fsStorage without a layout: its consumers declare', () => {
  it('SavepointSaver, and the writer with defaultProfile, get the packed layout in a new directory; a spec profile gets files', async () => {
    const saverDir = newDir();
    const saverStore = fsStorage({ dir: saverDir });
    new SavepointSaver({ storage: saverStore });
    expect(saverStore.capabilities.opaqueValues).toBe(true);
    await saverStore.close();
    expect(layoutOnDisk(saverDir)).toBe('packed');

    const writerStore = fsStorage({ dir: join(newDir(), 'new') });
    const writer = createWriter({ storage: writerStore, profile: defaultProfile, runId: 'r1', heartbeatIntervalMs: false });
    expect((await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { n: 1 } })).ok).toBe(true);
    await writer.close();
    expect((await writerStore.ready()).layout).toBe('packed');
    const plan = await planResume({ storage: writerStore, profile: defaultProfile, runId: 'r1' });
    expect(plan.snapshot.sequence).toBe(1);
    await writerStore.close();

    const specDir = newDir();
    const specStore = fsStorage({ dir: specDir });
    const spec = createWriter({ storage: specStore, profile: snapshotLifecycle, runId: 'run-1', heartbeatIntervalMs: false });
    expect(specStore.capabilities.keysAreFiles).toBe(true);
    await spec.close();
    await specStore.close();
    expect(layoutOnDisk(specDir)).toBe('files');
  });

  it('a spec profile on a directory already packed is refused; resume with it too', async () => {
    const dir = await startDir('packed');
    const storage = fsStorage({ dir });
    let err: unknown;
    try {
      createWriter({ storage, profile: snapshotLifecycle, runId: 'run-1', heartbeatIntervalMs: false });
    } catch (e) {
      err = e;
    }
    expect(isCheckpointError(err, 'checkpoint_unsupported')).toBe(true);
    expect((await rejection(planResume({ storage, profile: snapshotLifecycle, runId: 'run-1' }))).reasonCode).toBe(
      'checkpoint_unsupported',
    );
    await storage.close();
  });

  it('encryptedStorage and faultyStorage pass the declaration to the store they wrap, and carry its capabilities then', async () => {
    const key = EncryptionKey.fromText('ab'.repeat(32));
    const inner = fsStorage({ dir: newDir() });
    const encrypted = encryptedStorage(inner, { keys: key });
    new SavepointSaver({ storage: encrypted });
    expect(inner.capabilities.opaqueValues).toBe(true);
    expect(encrypted.capabilities.keysAreFiles).toBeUndefined();
    await encrypted.close();

    const acceptedInner = fsStorage({ dir: newDir() });
    const accepted = encryptedStorage(acceptedInner, { keys: key, sharedFiles: 'accept' });
    const spec = createWriter({ storage: accepted, profile: snapshotLifecycle, runId: 'run-1', heartbeatIntervalMs: false });
    expect(acceptedInner.capabilities.keysAreFiles).toBe(true);
    expect(accepted.capabilities.keysAreFiles).toBe(true);
    await spec.close();
    await accepted.close();

    const faultyInner = fsStorage({ dir: newDir() });
    const faulty: StorageAdapter = faultyStorage(faultyInner);
    faulty.declareReaders!('other-tools');
    expect(faulty.capabilities.move).toBe(true);
    expect(typeof (faulty as { move?: unknown }).move).toBe('function');
    await faultyInner.close();
  });
});

describe('fsStorage without a layout: several stores on one new directory', () => {
  it('two stores declaring savepoint on one new directory make one packed store, each reading what the other wrote', async () => {
    const dir = join(newDir(), 'new');
    const [a, b] = [fsStorage({ dir }), fsStorage({ dir })];
    a.declareReaders!('savepoint');
    b.declareReaders!('savepoint');
    await Promise.all([a.put('from-a', utf8('a')), b.put('from-b', utf8('b'))]);
    expect(text((await a.get('from-b'))?.bytes)).toBe('b');
    expect(text((await b.get('from-a'))?.bytes)).toBe('a');
    expect(readdirSync(dir).filter((name) => name.startsWith('.sp\\packed\\seg-'))).toHaveLength(1);
    await Promise.all([a.close(), b.close()]);
  });

  it('a journal made in a new directory while a packed store is made there: one of the two is refused, nothing acknowledged is hidden', async () => {
    for (let round = 0; round < 12; round++) {
      const dir = newDir();
      const packed = fsStorage({ dir, layout: 'packed' });
      const files = fsStorage({ dir, layout: 'files' });
      // The packed store opens in the background from its factory; the file layout's open races it.
      const [p, f] = await Promise.allSettled([packed.put('p', utf8('packed')), files.put('f', utf8('files'))]);
      expect(p.status === 'fulfilled' && f.status === 'fulfilled', `round ${round}: both layouts acknowledged a write`).toBe(false);
      for (const outcome of [p, f])
        if (outcome.status === 'rejected') expect(isCheckpointError(outcome.reason, 'checkpoint_config_invalid')).toBe(true);
      await Promise.all([packed.close(), files.close()]);
      // A later store sees the acknowledged value, or refuses the directory: never an answer without it.
      const later = fsStorage({ dir });
      const acknowledged = p.status === 'fulfilled' ? ['p', 'packed'] : f.status === 'fulfilled' ? ['f', 'files'] : undefined;
      if (acknowledged) {
        try {
          expect(text((await later.get(acknowledged[0]!))?.bytes)).toBe(acknowledged[1]);
        } catch (err) {
          expect(isCheckpointError(err, 'checkpoint_config_invalid')).toBe(true);
        }
      }
      await later.close();
    }
  });

  it('a directory holding both a manifest and a journal is refused by every layout', async () => {
    const dir = await startDir('packed');
    writeFileSync(join(dir, '.sp\\journal'), '');
    for (const layout of [undefined, 'packed', 'files'] as const) {
      const err = await (async () => {
        try {
          const storage = fsStorage({ dir, ...(layout ? { layout } : {}) });
          return await rejection(storage.get('seed'));
        } catch (e) {
          return e;
        }
      })();
      expect(isCheckpointError(err, 'checkpoint_config_invalid'), String(layout)).toBe(true);
    }
    mkdirSync(join(dir, 'unused'));
  });
});

describe('fsStorage without a layout: what fixes nothing', () => {
  it('a read with a profile (planResume), a refused saver or writer, a refused put and an empty batch leave a new directory free', async () => {
    const dir = newDir();
    const storage = fsStorage({ dir });
    expect(isCheckpointError(await rejection(planResume({ storage, profile: defaultProfile, runId: 'r1' })), 'checkpoint_not_found')).toBe(
      true,
    );
    expect(() => new SavepointSaver({ storage, dedup: 'yes' as unknown as boolean })).toThrow(/dedup/);
    expect(() =>
      createWriter({ storage, profile: defaultProfile, runId: 'r1', takeover: 'later' as 'force', heartbeatIntervalMs: false }),
    ).toThrow(/takeover/);
    expect(isCheckpointError(await rejection(storage.put('../out', utf8('x'))), 'checkpoint_key_invalid')).toBe(true);
    expect(await storage.batch!([])).toEqual([]);
    expect(layoutOnDisk(dir)).toBeUndefined();
    // Still free: the first declaration fixes it.
    storage.declareReaders!('savepoint');
    await storage.put('k', utf8('v'));
    await storage.close();
    expect(layoutOnDisk(dir)).toBe('packed');
  });
});
