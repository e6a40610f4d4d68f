/**
 * What a sweep remembers of a store between sweeps over the same adapter (snapshot-io/chunk-refs.ts):
 * each document's references at the version listed, and each tree node's children. A sweep run
 * again reads only what changed; a document rewritten under its key (a new version) is read
 * again, so the chunks it references now are never hidden. And what it lists: every key once (the
 * chunks and the documents in one listing), a checkpoint written while that listing walks between
 * its documents and its chunks taken for what it is.
 */
import { describe, expect, it } from 'vitest';
import {
  createWriter,
  defaultProfile,
  listAll,
  memoryStorage,
  sweepChunks,
  type JsonValue,
  type StorageAdapter,
  type StorageEntry,
} from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { manualClock } from 'savepoint/testing';
import { CHUNK_PREFIX, chunkKey } from '../../src/codec/chunking.js';
import { forgetChunks } from '../../src/snapshot-io/chunk-store.js';
import { prose } from '../support/prose.js';

const GRACE = 60 * 60 * 1000;

/** memoryStorage with its reads counted (keys read, in order). */
function countingReads(inner: StorageAdapter): StorageAdapter & { reads: string[] } {
  const reads: string[] = [];
  return {
    ...inner,
    reads,
    get: (key, o) => {
      reads.push(key);
      return inner.get(key, o);
    },
  };
}

/**
 * memoryStorage whose listings are counted (each key as often as a listing yields it). With
 * `between`, a listing of the whole store yields the keys before the chunks, then runs
 * `between` (a write), then yields the chunks and the keys after them as they are then: what a
 * walk in key order sees of a write made while it goes.
 */
function countingLists(
  inner: StorageAdapter,
  between?: () => Promise<void>,
): StorageAdapter & { listed: Map<string, number>; prefixes: string[] } {
  const listed = new Map<string, number>();
  const prefixes: string[] = [];
  const seen = (key: string): void => void listed.set(key, (listed.get(key) ?? 0) + 1);
  async function* list(prefix: string): AsyncGenerator<StorageEntry> {
    prefixes.push(prefix);
    if (prefix !== '' || !between) {
      for await (const e of inner.list(prefix)) yield (seen(e.key), e);
      return;
    }
    for await (const e of inner.list('')) if (e.key < CHUNK_PREFIX) yield (seen(e.key), e);
    await between();
    for await (const e of inner.list('')) if (e.key >= CHUNK_PREFIX) yield (seen(e.key), e);
  }
  return { ...inner, listed, prefixes, list };
}

/** `count` checkpoints of run `run`, each replacing one message of twelve: their states by key. */
async function checkpoints(storage: StorageAdapter, run: string, count: number, seed: number): Promise<Map<string, JsonValue>> {
  const writer = createWriter({
    storage,
    profile: defaultProfile,
    runId: run,
    heartbeatIntervalMs: false,
    lock: false,
    autoRetention: false,
  });
  const messages = Array.from({ length: 12 }, (_, i) => prose(seed + i, 1800));
  const kept = new Map<string, JsonValue>();
  for (let n = 0; n < count; n++) {
    messages[(n * 5) % messages.length] = prose(seed + 100 + n, 1800);
    const payload = { messages: [...messages], n };
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload });
    if (!r.ok) throw r.error;
    kept.set(r.key!, payload);
    kept.set(`checkpoints/${run}/latest.json`, payload);
  }
  await writer.close();
  return kept;
}

async function expectKept(storage: StorageAdapter, kept: Map<string, JsonValue>): Promise<void> {
  forgetChunks(storage);
  for (const [key, payload] of kept) expect((await readSnapshot(storage, defaultProfile, key))?.payload, key).toEqual(payload);
}

describe('chunk sweep: what it remembers between sweeps', () => {
  it('a sweep run again over an unchanged store reads no document and no chunk-tree node again', async () => {
    const storage = countingReads(memoryStorage());
    await checkpoints(storage, 'r', 4, 1);
    const clock = manualClock(0);
    await sweepChunks(storage, { clock, graceMs: GRACE });
    const first = storage.reads.length;
    expect(first).toBeGreaterThan(4);
    await sweepChunks(storage, { clock, graceMs: GRACE });
    expect(storage.reads.slice(first)).toEqual([]);
  });

  it('a document rewritten under its key is read again: the chunks it references now stay', async () => {
    const storage = countingReads(memoryStorage());
    const clock = manualClock(0);
    const kept = await checkpoints(storage, 'r', 2, 1);
    const other = await checkpoints(storage, 'o', 1, 500);
    await sweepChunks(storage, { clock, graceMs: GRACE });
    // latest.json of run r now holds run o's state (a new version of the key), and run o's entries go: only r's latest references o's chunks.
    const [otherKey] = [...other.keys()];
    await storage.put('checkpoints/r/latest.json', (await storage.get(otherKey!))!.bytes);
    for (const e of await listAll(storage, 'checkpoints/o/')) await storage.delete(e.key);
    kept.set('checkpoints/r/latest.json', other.get(otherKey!)!);
    const before = storage.reads.length;
    const report = await sweepChunks(storage, { clock, graceMs: GRACE });
    expect(storage.reads.slice(before)).toContain('checkpoints/r/latest.json');
    await clock.advance(GRACE);
    await sweepChunks(storage, { clock, graceMs: GRACE });
    const live = new Set((await listAll(storage, CHUNK_PREFIX)).map((e) => e.key));
    // Nothing the rewritten document references was hidden, so nothing of it was put back or lost.
    expect(report.restored).toEqual([]);
    expect(live.size).toBeGreaterThan(0);
    await expectKept(storage, kept);
  });

  it('a sweep lists every key of the store once: the chunks and the documents in one listing', async () => {
    const storage = countingLists(memoryStorage());
    await checkpoints(storage, 'r', 4, 1);
    await sweepChunks(storage, { clock: manualClock(0), graceMs: GRACE });
    const chunks = [...storage.listed].filter(([key]) => key.startsWith(CHUNK_PREFIX));
    expect(chunks.length).toBeGreaterThan(4);
    // Once more: the first chunk, which told the sweep that the store holds chunks at all.
    expect(chunks.filter(([, times]) => times > 1)).toEqual([[chunks[0]![0], 2]]);
  });

  it('a checkpoint written while the listing walks from its documents to its chunks: its new chunks are not hidden', async () => {
    const inner = memoryStorage();
    await checkpoints(inner, 'r', 3, 1);
    let made: Map<string, JsonValue> | undefined;
    let written: string[] = [];
    const storage = countingLists(inner, async () => {
      const before = new Set((await listAll(inner, CHUNK_PREFIX)).map((e) => e.key));
      made = await checkpoints(inner, 'q', 1, 900); // a run new to the listing: no document it listed references these chunks
      written = (await listAll(inner, CHUNK_PREFIX)).map((e) => e.key).filter((key) => !before.has(key));
    });
    const report = await sweepChunks(storage, { clock: manualClock(0), graceMs: GRACE });
    expect(written.length).toBeGreaterThan(0);
    expect(report.hidden.filter((id) => written.includes(chunkKey(id)))).toEqual([]);
    await expectKept(inner, made!);
  });

  it('documents under many first segments before the chunks are listed again in one listing, not one per segment', async () => {
    const storage = countingLists(memoryStorage());
    await checkpoints(storage, 'r', 2, 1);
    for (let i = 0; i < 40; i++) await storage.put(`a${i}/note.json`, new TextEncoder().encode('{}'));
    storage.prefixes.length = 0;
    await sweepChunks(storage, { clock: manualClock(0), graceMs: GRACE });
    // `chunks/` alone first (does the store hold any?); then the whole store, and at most once more.
    expect(storage.prefixes[0]).toBe(CHUNK_PREFIX);
    expect(storage.prefixes.length - 1).toBeLessThanOrEqual(2);
  });
});
