/**
 * The shape of the saver's chunk trees by the store's cost hint (`capabilities.keysAreFiles`,
 * src/langgraph/saver-state.ts `chunkFanoutOf`): where each key is a file, a conversation's
 * appended message makes fewer chunks (wider nodes, up to 4 ids in the envelope); elsewhere the
 * tree is the narrow one that stores the fewest bytes, as before.
 */
import { type Checkpoint } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EncryptionKey, encryptedStorage, memoryStorage, type StorageAdapter } from 'savepoint';
import { fsStorage } from 'savepoint/fs';
import { SavepointSaver } from 'savepoint/langgraph';
import { CHUNK_PREFIX, decodeEnvelope, looksChunked } from '../../src/codec/chunking.js';
import { checkpointKey, runIdOf } from '../../src/langgraph/keys.js';
import { config, cp, message, meta } from './checkpoints.js';

/** `inner` declaring that each of its keys is a file, as fsStorage does. */
const keysAreFiles = (inner: StorageAdapter): StorageAdapter => ({ ...inner, capabilities: { ...inner.capabilities, keysAreFiles: true } });

async function chunkCount(storage: StorageAdapter): Promise<number> {
  let n = 0;
  for await (const e of storage.list(CHUNK_PREFIX)) if (!e.key.includes('.hidden-')) n++;
  return n;
}

/**
 * A conversation as LangGraph's loop stores it, a 2 KB message a turn (a task's writes, then the
 * checkpoint holding it): the chunks made by each of the last `measured` turns, and the newest checkpoint.
 */
async function converse(storage: StorageAdapter, turns: number, measured: number): Promise<{ perTurn: number[]; newest: Checkpoint }> {
  const saver = new SavepointSaver({ storage });
  const messages: string[] = [];
  let previous = cp(0, { messages: [] });
  await saver.put(config(), previous, meta, { messages: 1 });
  const perTurn: number[] = [];
  for (let turn = 1; turn <= turns; turn++) {
    const before = turn > turns - measured ? await chunkCount(storage) : 0;
    const m = message(turn, 2_000);
    await saver.putWrites(config(previous.id), [['messages', [m]]], `task-${turn}`);
    messages.push(m);
    const next = cp(turn, { messages: [...messages] });
    await saver.put(config(previous.id), next, meta, { messages: turn + 1 });
    previous = next;
    if (turn > turns - measured) perTurn.push((await chunkCount(storage)) - before);
  }
  return { perTurn, newest: previous };
}

async function envelopeOf(storage: StorageAdapter, checkpoint: Checkpoint): Promise<{ depth: number; ids: readonly string[] }> {
  const key = checkpointKey(await runIdOf('t', '', storage), checkpoint.id);
  const bytes = (await storage.get(key))!.bytes;
  expect(looksChunked(bytes)).toBe(true);
  return decodeEnvelope(bytes, key)!;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('SavepointSaver: chunk trees by the store’s cost hint', () => {
  /**
   * A conversation of `turns` on `storage` makes wide trees: at most `maxPerTurn` chunks a turn, up
   * to 4 ids in the envelope (at least `minRootIds`), at most `maxDepth` levels, and it reads back.
   */
  async function expectWideTrees(
    storage: StorageAdapter,
    turns: number,
    measured: number,
    expected: { minRootIds: number; maxPerTurn: number; maxDepth: number },
  ): Promise<void> {
    const { perTurn, newest } = await converse(storage, turns, measured);
    // The message's leaves (a leaf or two) and one node per level below the envelope's ids.
    expect(mean(perTurn)).toBeLessThanOrEqual(expected.maxPerTurn);
    const envelope = await envelopeOf(storage, newest);
    expect(envelope.ids.length).toBeGreaterThanOrEqual(expected.minRootIds);
    expect(envelope.ids.length).toBeLessThanOrEqual(4);
    expect(envelope.depth).toBeLessThanOrEqual(expected.maxDepth);
    const tuple = await new SavepointSaver({ storage }).getTuple(config(newest.id));
    expect(tuple!.checkpoint.channel_values.messages).toEqual(newest.channel_values.messages);
  }

  it('where each key is a file, a 150-message conversation makes at most 3.5 chunks a turn (narrow trees made 6.85), and reads back', async () => {
    await expectWideTrees(keysAreFiles(memoryStorage()), 150, 40, { minRootIds: 2, maxPerTurn: 3.5, maxDepth: 2 });
  });

  it('an encrypted store over a store whose keys are files: the same wide trees of keyed ids, reading back', async () => {
    // Ids are keyed by the store's data key, random for each new store, and where nodes end moves
    // with them: the root may hold one id, and for about one store in six at this length the tree
    // is a level deeper (5.0–5.2 chunks a turn seen) — still wide, below the narrow tree's 6.85.
    const storage = encryptedStorage(keysAreFiles(memoryStorage()), { keys: EncryptionKey.generate() });
    await expectWideTrees(storage, 120, 20, { minRootIds: 1, maxPerTurn: 5.5, maxDepth: 3 });
  });

  it('elsewhere the tree is the narrow one, as before: one id in the envelope, more levels of smaller nodes', async () => {
    const storage = memoryStorage();
    const { perTurn, newest } = await converse(storage, 150, 40);
    const envelope = await envelopeOf(storage, newest);
    expect(envelope.ids).toHaveLength(1);
    expect(envelope.depth).toBeGreaterThanOrEqual(4);
    expect(mean(perTurn)).toBeGreaterThan(4);
  });

  it('fsStorage declares that its keys are files, in both modes, and an encrypted store over it says so too; memoryStorage does not', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'savepoint-keys-are-files-'));
    try {
      for (const journal of [true, false]) {
        const fs = fsStorage({ dir: join(dir, String(journal)), journal });
        expect(fs.capabilities.keysAreFiles).toBe(true);
        expect(encryptedStorage(fs, { keys: EncryptionKey.generate() }).capabilities.keysAreFiles).toBe(true);
        await fs.close();
      }
      expect(memoryStorage().capabilities.keysAreFiles).toBeUndefined();
      expect(encryptedStorage(memoryStorage(), { keys: EncryptionKey.generate() }).capabilities.keysAreFiles).toBeUndefined();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
