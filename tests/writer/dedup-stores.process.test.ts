/**
 * Content chunks on PostgreSQL and GitHub, through the StorageAdapter contract alone: a chunked
 * conversation written by the writer and by SavepointSaver reads back, shares its chunks, and a
 * sweep frees what a deleted checkpoint alone referenced without touching the rest.
 */
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import type { RunnableConfig } from '@langchain/core/runnables';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, listAll, sweepChunks, type JsonValue, type StorageAdapter } from 'savepoint';
import { readSnapshot } from 'savepoint/toolkit';
import { SavepointSaver } from 'savepoint/langgraph';
import { postgresStorage } from 'savepoint/postgres';
import { githubStorage } from 'savepoint/github';
import { manualClock, startGitHubEmulator } from 'savepoint/testing';
import { freshTable, hasPostgres, makePool, usePostgres } from '../support/postgres-fixture.js';
import { CHUNK_PREFIX } from '../../src/codec/chunking.js';

/** Prose-like text (not periodic) from a seed. */
function text(seed: number): string {
  const words = ['agent', 'tool', 'result', 'and', 'then', 'wrote', 'a', 'long', 'answer'];
  let x = seed + 1;
  let t = '';
  while (t.length < 2000) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    t += `${words[(x >>> 0) % words.length]} ${(x >>> 8) % 1000} `;
  }
  return t;
}

async function exercise(storage: StorageAdapter): Promise<void> {
  const writer = createWriter({ storage, profile: defaultProfile, runId: 'chat', heartbeatIntervalMs: false, autoRetention: false });
  const messages = Array.from({ length: 12 }, (_, i) => text(i));
  const kept = new Map<string, JsonValue>();
  for (let n = 0; n < 4; n++) {
    messages.push(text(100 + n));
    const payload = { messages: [...messages] };
    const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload });
    if (!r.ok) throw r.error;
    kept.set(r.key!, payload);
  }
  await writer.close();
  const saver = new SavepointSaver({ storage, keepLast: false });
  let config: RunnableConfig = { configurable: { thread_id: 't', checkpoint_ns: '' } };
  for (let n = 1; n <= 3; n++) {
    const cp = { ...emptyCheckpoint(), id: uuid6(n), channel_values: { messages }, channel_versions: { messages: n + 1 } };
    config = await saver.put(config, cp, { source: 'loop', step: n, parents: {} }, { messages: n + 1 });
    expect((await saver.getTuple(config))?.checkpoint.channel_values).toEqual({ messages });
  }
  const chunks = await listAll(storage, CHUNK_PREFIX);
  expect(chunks.length).toBeGreaterThan(0);
  // Seven checkpoints of ~32 KB each: shared chunks hold about two of them.
  expect(chunks.reduce((s, e) => s + e.size, 0)).toBeLessThan(3 * JSON.stringify(messages).length);
  const first = [...kept.keys()][0]!;
  await storage.delete(first);
  kept.delete(first);
  const clock = manualClock(0);
  const swept = await sweepChunks(storage, { clock });
  expect(swept.hidden.length).toBeGreaterThan(0);
  await clock.advance(60 * 60 * 1000);
  expect((await sweepChunks(storage, { clock })).deleted.length).toBe(swept.hidden.length);
  const reader = { ...storage }; // its own chunk cache
  for (const [key, payload] of kept) expect((await readSnapshot(reader, defaultProfile, key))?.payload).toEqual(payload);
}

const { server } = usePostgres();
describe.skipIf(!hasPostgres)('content chunks on postgresStorage', () => {
  it('write, share, read back, sweep', async () => {
    const pool = makePool(server().url);
    const storage = postgresStorage({ pool, table: freshTable('chunks') });
    try {
      await exercise(storage);
    } finally {
      await storage.close();
      await pool.end();
    }
  }, 120_000);
});

describe('content chunks on githubStorage (emulator)', () => {
  it('write, share, read back, sweep', async () => {
    const gh = await startGitHubEmulator({ token: 't0ken', secondaryLimit: false });
    const storage = githubStorage({
      owner: gh.owner,
      repo: gh.repo,
      token: 't0ken',
      baseUrl: gh.url,
      requestTimeoutMs: 10_000,
      minWriteIntervalMs: 0, // unpaced: the emulator does not need GitHub's second between writes
      emergencyQueue: 'memory',
    });
    try {
      await exercise(storage);
    } finally {
      await storage.close();
      await gh.close();
    }
  }, 120_000);
});
