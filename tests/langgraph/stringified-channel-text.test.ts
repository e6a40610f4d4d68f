/**
 * A channel of plain data the saver wrote as `JSON.stringify`'s text is quoted into its document
 * by `quoteJsonText` (src/codec/quote-json-text.ts) when long: not by `JSON.stringify` of the
 * text again, and as one flat string; the document is byte for byte as before (it reads back,
 * its seal checked, as does one written by a saver that quotes otherwise).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listAll, memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { langGraphProfile } from '../../src/langgraph/profile.js';
import { config, cp, message, meta } from './checkpoints.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('a long channel of plain data', () => {
  it('is quoted without JSON.stringify of its text; each checkpoint reads back and its document encodes as the profile encodes it', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage, dedup: false });
    const messages: string[] = [];
    let parent: string | undefined;
    for (let n = 1; n <= 3; n++) {
      messages.push(...Array.from({ length: 40 }, (_, i) => `${message(n * 100 + i, 2048)} "quoted" \\ é`));
      const checkpoint = cp(n, { messages: [...messages], note: `step ${n}` });
      const stringify = vi.spyOn(JSON, 'stringify');
      await saver.put(config(parent), checkpoint, meta, checkpoint.channel_versions);
      const quotedAgain = stringify.mock.calls.filter(([arg]) => typeof arg === 'string' && arg.length > 64 * 1024);
      stringify.mockRestore();
      expect(quotedAgain).toHaveLength(0);
      parent = checkpoint.id;
      const read = await new SavepointSaver({ storage }).getTuple(config(parent));
      expect(read?.checkpoint.channel_values).toEqual({ messages, note: `step ${n}` });
    }
    // The stored documents are what the profile's encoder makes of what they decode to.
    const documents = (await listAll(storage, 'langgraph/t/history/')).map((e) => e.key);
    expect(documents).toHaveLength(3);
    for (const key of documents) {
      const stored = (await storage.get(key))!.bytes;
      const snapshot = await langGraphProfile.document.decode(stored, key);
      expect(Buffer.from((await langGraphProfile.document.encode(snapshot)).bytes).equals(Buffer.from(stored))).toBe(true);
    }
  });
});
