import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { decodeHead, encodeHead, encodeHeadInto, type Head } from '../../src/langgraph/head.js';
import { insertId, runStateFromHead, topIdWith } from '../../src/langgraph/run-state.js';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';

const id = fc.stringMatching(/^[A-Za-z0-9-]{1,40}$/);
const head: fc.Arbitrary<Head> = fc.oneof(
  fc.record({ checkpointId: id, sequence: fc.integer({ min: 1, max: 2 ** 40 }) }),
  fc.record({ checkpointId: id, sequence: fc.integer({ min: 1, max: 2 ** 40 }), topId: id }),
  fc.record({
    checkpointId: id,
    sequence: fc.integer({ min: 1, max: 2 ** 40 }),
    topId: id,
    inOrder: fc.record({ fromId: id, fromSequence: fc.integer({ min: 1, max: 2 ** 40 }), idsHash: fc.nat({ max: 2 ** 32 - 1 }) }),
  }),
);

describe('a head encoded into the sealing buffer', () => {
  it('property: holds the bytes encodeHead makes, at the place asked, or nothing when they do not fit; the bytes before it are untouched', () => {
    fc.assert(
      fc.property(head, fc.nat({ max: 200 }), fc.nat({ max: 200 }), (h, size, from) => {
        const scratch = new Uint8Array(size).fill(7);
        const into = encodeHeadInto(h, scratch, from);
        const expected = encodeHead(h);
        if (from + expected.length > size) expect(into).toBeUndefined();
        else {
          expect(into).toEqual(expected);
          expect(into!.byteOffset).toBe(from);
          expect(scratch.subarray(0, from).every((b) => b === 7)).toBe(true);
        }
      }),
    );
  });

  it('a thread on memoryStorage: after each superstep the stored head names the newest checkpoint, and the newest checkpoint reads back intact', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const cursor: Cursor = { config: { configurable: { thread_id: 't' } }, step: 0 };
    for (let i = 1; i <= 30; i++) {
      await superstep(saver, cursor);
      const stored = await storage.get('langgraph/t/head.json');
      const decoded = decodeHead(stored!.bytes, 'head');
      expect(decoded).toMatchObject({ checkpointId: cursor.config.configurable?.['checkpoint_id'], sequence: i });
      // A saver of its own reads the store, not the first saver's caches: the document verifies.
      const tuple = await new SavepointSaver({ storage }).getTuple({ configurable: { thread_id: 't' } });
      expect(tuple?.checkpoint.channel_values).toEqual({ note: `step ${i}` });
    }
  });
});

describe('a head whose top id comes from the ids a saver met', () => {
  it('an id that is no checkpoint id (a history file another tool named) is never the top id: the head stays JSON', () => {
    const id = '1ef4f797-8335-6428-8001-8a1503f9b875';
    const run = runStateFromHead('t', { head: { checkpointId: id, sequence: 3, topId: id }, version: '1' })!;
    insertId(run, 'zz"q');
    const next = '1ef4f797-8335-6428-8002-8a1503f9b875';
    expect(topIdWith(run, next)).toBe(next);
    const text = new TextDecoder().decode(encodeHead({ checkpointId: next, sequence: 4, topId: topIdWith(run, next) }));
    expect(JSON.parse(text)).toMatchObject({ top_id: next });
  });
});
