import { describe, expect, it } from 'vitest';
import { memoryStorage, type StorageAdapter } from 'savepoint';
import { chunkPlan } from '../../src/writer/chunk-step.js';

/** A document big enough to be stored as chunks, different for each `seed`. */
function bigDocument(seed: number): Uint8Array {
  return new TextEncoder().encode(JSON.stringify({ seed, text: `${seed} `.repeat(40_000) }));
}

describe('chunkPlan when the store cannot hash', () => {
  it("rejects with the store's error, and leaves no other document's failure unhandled", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      // Every hash fails, later: each document's chunking is a promise that rejects.
      const storage: StorageAdapter = Object.assign(memoryStorage(), {
        contentAddressing: {
          scheme: 'failing',
          id: () => new Promise<string>((_, reject) => setTimeout(() => reject(new Error('key service down')), 1)),
        },
      });
      const creates = [1, 2, 3].map((i) => ({ key: `checkpoints/r/history/${i}.json`, bytes: bigDocument(i), chunk: true }));
      await expect(Promise.resolve(chunkPlan(storage, { creates, replaces: [] }))).rejects.toThrow('key service down');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });
});
