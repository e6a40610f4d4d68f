/**
 * Content chunks (docs/storage.md, "Content chunks"): documents of 16 KiB and more are stored
 * as an envelope naming store-wide, content-addressed chunks. Properties over random JSON
 * states changed by appends and edits, on memory (atomic batch), memory without batch and fs:
 * every kept checkpoint reads back as written, chunks are shared, and any damaged chunk byte is
 * caught.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, memoryStorage, type JsonValue, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { fsStorage } from 'savepoint/fs';
import { scratchDirs } from '../support/scratch.js';
import { sequentialMemory } from '../support/storages.js';
import { CHUNK_PREFIX, looksChunked } from '../../src/codec/chunking.js';
import { forgetChunks } from '../../src/snapshot-io/chunk-store.js';
import { prose } from '../support/prose.js';

const newDir = scratchDirs('dedup');

type Edit = { kind: 'append'; text: string } | { kind: 'edit'; at: number; text: string } | { kind: 'drop'; at: number };

const WORDS = [
  'the',
  'agent',
  'called',
  'a',
  'tool',
  'and',
  'got',
  'back',
  'écrit',
  '漢字',
  'result',
  'of',
  'size',
  'with',
  '"quotes"',
  '\\n',
];

const message = fc
  .record({ seed: fc.integer(), size: fc.integer({ min: 1500, max: 3000 }) })
  .map(({ seed, size }) => prose(seed, size, WORDS));
const edit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 4, arbitrary: message.map((text) => ({ kind: 'append' as const, text })) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('edit' as const), at: fc.nat(), text: message }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }) },
);

function apply(list: JsonValue[], e: Edit): JsonValue[] {
  if (list.length === 0 || e.kind === 'append') return [...list, { role: 'user', content: e.kind === 'append' ? e.text : 'x' }];
  const at = e.at % list.length;
  if (e.kind === 'drop') return [...list.slice(0, at), ...list.slice(at + 1)];
  return list.map((m, i) => (i === at ? { role: 'assistant', content: e.text } : m));
}

const stores: [string, () => StorageAdapter][] = [
  ['memory', () => memoryStorage()],
  ['memory, sequential', () => sequentialMemory()],
  ['fs', () => fsStorage({ dir: newDir() })],
  ['fs journal', () => fsStorage({ dir: newDir(), journal: true })],
];

async function bytesUnder(storage: StorageAdapter, prefix: string): Promise<number> {
  return (await listAll(storage, prefix)).reduce((n, e) => n + e.size, 0);
}

describe.each(stores)('content chunks on %s', (_name, makeStore) => {
  it('every kept checkpoint reads back as written, and chunks are shared', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(message, { minLength: 12, maxLength: 14 }),
        fc.array(edit, { minLength: 3, maxLength: 12 }),
        async (start, edits) => {
          const storage = makeStore();
          const writer = createWriter({
            storage,
            profile: defaultProfile,
            runId: 'r',
            heartbeatIntervalMs: false,
            autoRetention: false,
            lock: false,
          });
          let list: JsonValue[] = start.map((content) => ({ role: 'user', content }));
          const written: { key: string; state: JsonValue }[] = [];
          for (const e of [undefined, ...edits]) {
            if (e) list = apply(list, e);
            const state = { messages: list, turn: written.length };
            const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: state });
            if (!r.ok) throw r.error;
            written.push({ key: r.key!, state });
          }
          await writer.close();
          forgetChunks(storage); // read from the store, not the cache
          for (const { key, state } of written) expect((await readSnapshot(storage, defaultProfile, key))?.payload).toEqual(state);
          const docs = (await listAll(storage, 'checkpoints/')).filter((e) => e.key.includes('/history/'));
          let whole = 0;
          for (const d of docs) {
            const stored = (await storage.get(d.key))!.bytes;
            if (stored.length >= 16 * 1024) throw new Error(`${d.key} is stored whole`);
            whole += (await readSnapshot(storage, defaultProfile, d.key)) ? 1 : 0;
          }
          expect(whole).toBe(written.length);
          // Shared: the chunks hold far less than every document whole would.
          const chunkBytes = await bytesUnder(storage, CHUNK_PREFIX);
          const total = written.reduce((n, w) => n + JSON.stringify(w.state).length, 0);
          expect(chunkBytes).toBeLessThan(total / 2);
          await storage.close();
        },
      ),
      { numRuns: 6 },
    );
  }, 120_000);

  it('a changed byte in any chunk is caught when a checkpoint that references it is read', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { minLength: 14, maxLength: 16 }), fc.nat(), fc.nat(), async (messages, pick, at) => {
        const storage = makeStore();
        const writer = createWriter({ storage, profile: defaultProfile, runId: 'r', heartbeatIntervalMs: false, lock: false });
        const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { messages } });
        if (!r.ok) throw r.error;
        await writer.close();
        expect(looksChunked((await storage.get(r.key!))!.bytes)).toBe(true);
        const chunks = await listAll(storage, CHUNK_PREFIX);
        const victim = chunks[pick % chunks.length]!;
        const bytes = (await storage.get(victim.key))!.bytes.slice();
        bytes[at % bytes.length]! ^= 1 + (at % 255);
        await storage.put(victim.key, bytes);
        forgetChunks(storage);
        await expect(readSnapshot(storage, defaultProfile, r.key!)).rejects.toMatchObject({
          reasonCode: 'checkpoint_integrity_mismatch',
          message: expect.stringContaining(victim.key) as unknown,
        });
        await storage.delete(victim.key);
        forgetChunks(storage);
        await expect(readSnapshot(storage, defaultProfile, r.key!)).rejects.toMatchObject({
          reasonCode: 'checkpoint_integrity_mismatch',
          message: expect.stringContaining(`${victim.key} is missing`) as unknown,
        });
        await storage.close();
      }),
      { numRuns: 8 },
    );
  }, 120_000);
});
