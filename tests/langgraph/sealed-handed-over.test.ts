/**
 * A checkpoint document the saver sealed into a buffer of its own is handed over
 * (src/storage/handed-over.ts): nothing changes it again, so the chunk step remembers it and a
 * store keeps it without copying it. A large conversation's document is not copied on its way
 * to the store (from 64 KiB, the size from which buffers are handed over), and every checkpoint
 * still reads back as it was put.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { config, cp, message, meta } from './checkpoints.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a sealed checkpoint handed over', () => {
  for (const dedup of [true, false]) {
    it(`${dedup ? 'with' : 'without'} content chunks: no copy of a large checkpoint document is made on its way to the store; each reads back`, async () => {
      const storage = memoryStorage();
      const saver = new SavepointSaver({ storage, dedup });
      const messages: string[] = [];
      let parent: string | undefined;
      for (let n = 1; n <= 4; n++) {
        messages.push(...Array.from({ length: 40 }, (_, i) => message(n * 100 + i, 2048)));
        const checkpoint = cp(n, { messages: [...messages] });
        const slice = vi.spyOn(Uint8Array.prototype, 'slice');
        await saver.put(config(parent), checkpoint, meta, checkpoint.channel_versions);
        const large = slice.mock.contexts.filter((self) => (self as Uint8Array).length >= 64 * 1024);
        slice.mockRestore();
        expect(large).toHaveLength(0);
        parent = checkpoint.id;
        const read = await new SavepointSaver({ storage, dedup }).getTuple(config(parent));
        expect(read?.checkpoint.channel_values).toEqual({ messages });
      }
    });
  }
});
