/**
 * A saver with `keepLast` on a thread another saver wrote learns the sequence of each checkpoint
 * about to leave (it names the checkpoint's writes folder) from the checkpoint's document. The
 * document is parsed and its seal checked, not decoded into a snapshot: what it says must be what
 * the full decode says, and a document whose seal fails, or that is stored in another shape
 * (gzipped, chunked, split into parts), is left to the full decode.
 */
import fc from 'fast-check';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import { SavepointSaver, langGraphProfile } from 'savepoint/langgraph';
import { decodeStoredSnapshot, sealedDocumentMembers } from '../../src/snapshot-io/read-snapshot.js';
import type { SaverState } from '../../src/langgraph/saver-state.js';
import { sealDocumentBytes } from '../../src/codec/json-document.js';
import type { JsonObject } from '../../src/contract/json.js';
import { superstep, type Cursor } from '../support/langgraph-superstep.js';

const thread = { configurable: { thread_id: 't', checkpoint_ns: '' } };

/** The stored bytes of every checkpoint document of thread `t`. */
async function documents(storage: ReturnType<typeof memoryStorage>): Promise<Map<string, Uint8Array>> {
  const out = new Map<string, Uint8Array>();
  for await (const entry of storage.list('langgraph/t/history/')) out.set(entry.key, (await storage.get(entry.key))!.bytes);
  return out;
}

const value = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.jsonValue({ maxDepth: 2 }),
  fc.nat({ max: 300_000 }).map((n) => 'x'.repeat(n)),
);

describe('the sequence of a leaving checkpoint', () => {
  it('property: a sealed document’s members, when given, name the id and sequence its full decode gives; a plain stored document always gives them', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 1, maxLength: 4 }), fc.boolean(), async (values, dedup) => {
        const storage = memoryStorage();
        const saver = new SavepointSaver({ storage, dedup });
        let config = thread as typeof thread & { configurable: Record<string, string> };
        for (const [i, v] of values.entries()) {
          const checkpoint = { ...emptyCheckpoint(), id: uuid6(i), channel_values: { v }, channel_versions: { v: i + 1 } };
          config = (await saver.put(config, checkpoint, { source: 'loop', step: i, parents: {} }, { v: i + 1 })) as typeof config;
        }
        for (const [key, bytes] of await documents(storage)) {
          const snapshot = await decodeStoredSnapshot(storage, langGraphProfile, key, bytes);
          const members = await sealedDocumentMembers(bytes);
          if (members) {
            expect(members['snapshot_id']).toBe(snapshot.id);
            expect(members['sequence']).toBe(snapshot.sequence);
          } else {
            // Only a document stored in another shape than whole sealed JSON is left to the full decode.
            const gzipped = bytes[0] === 0x1f && bytes[1] === 0x8b;
            expect(gzipped || /\$savepoint_(chunked|part)/.test(new TextDecoder().decode(bytes.subarray(0, 200)))).toBe(true);
          }
        }
      }),
      { numRuns: 40 },
    );
  });

  it('a document changed after it was sealed gives no members, nor does one that is not sealed JSON', async () => {
    const storage = memoryStorage();
    const saver = new SavepointSaver({ storage });
    const checkpoint = { ...emptyCheckpoint(), id: uuid6(1), channel_values: { v: 'one' }, channel_versions: { v: 1 } };
    await saver.put(thread, checkpoint, { source: 'loop', step: 1, parents: {} }, { v: 1 });
    const [bytes] = [...(await documents(storage)).values()];
    const text = new TextDecoder().decode(bytes);
    expect((await sealedDocumentMembers(bytes!))?.['sequence']).toBe(1);
    const edited = new TextEncoder().encode(text.replace('"sequence":1', '"sequence":7'));
    expect(await sealedDocumentMembers(edited)).toBeUndefined();
    const unsealed = JSON.parse(text) as Record<string, unknown>;
    delete unsealed['integrity'];
    expect(await sealedDocumentMembers(new TextEncoder().encode(JSON.stringify(unsealed)))).toBeUndefined();
    expect(await sealedDocumentMembers(new TextEncoder().encode('[1,2]'))).toBeUndefined();
    expect(await sealedDocumentMembers(new Uint8Array([0xff, 0xfe, 0x7b]))).toBeUndefined();
  });

  it('a saver letting go of checkpoints another saver wrote decodes none of their documents only to learn their sequences (regression: each was decoded into a snapshot and cached)', async () => {
    const storage = memoryStorage();
    const writer = new SavepointSaver({ storage, keepLast: 5 });
    const written: Cursor = { config: thread, step: 0 };
    for (let i = 0; i < 8; i++) await superstep(writer, written);
    const before = new Set((await documents(storage)).keys());
    const fresh = new SavepointSaver({ storage, keepLast: 5 });
    const read = (await fresh.getTuple(thread))!.config;
    const turn: Cursor = { config: read, step: 100 };
    for (let i = 0; i < 5; i++) await superstep(fresh, turn);
    const after = new Set((await documents(storage)).keys());
    const gone = [...before].filter((key) => !after.has(key));
    // All five the writer kept: the fresh saver's five supersteps replaced them.
    expect(gone.length).toBe(5);
    const cached = (fresh as unknown as { state: SaverState }).state.documents.entries;
    // The checkpoint getTuple read was decoded for the caller; the four others only for their sequences.
    const returned = `langgraph/t/history/${read.configurable?.['checkpoint_id'] as string}.json`;
    expect(gone.filter((key) => key !== returned && cached.has(key))).toEqual([]);
    // Their writes left with them: only the kept checkpoints' writes folders remain.
    const parts = new Set<string>();
    for await (const entry of storage.list('langgraph/t/parts/')) parts.add(entry.key.split('/')[3]!);
    expect(parts.size).toBe(4);
  });

  it('a sealed document naming sequence 0 (which the schema refuses) is not taken at its word: the writes under parts/0/ are not deleted with it', async () => {
    const storage = memoryStorage();
    const writer = new SavepointSaver({ storage, keepLast: 3 });
    const written: Cursor = { config: thread, step: 0 };
    for (let i = 0; i < 3; i++) await superstep(writer, written);
    // Another tool re-sealed the oldest document with sequence 0, and keeps a file under parts/0/.
    const [oldest] = [...(await documents(storage)).keys()];
    const doc = JSON.parse(new TextDecoder().decode((await storage.get(oldest!))!.bytes)) as JsonObject;
    await storage.put(oldest!, (await sealDocumentBytes({ ...doc, sequence: 0 })).bytes);
    await storage.put('langgraph/t/parts/0/w_other.json', new TextEncoder().encode('{"kept":true}'));
    const fresh = new SavepointSaver({ storage, keepLast: 3 });
    const turn: Cursor = { config: (await fresh.getTuple(thread))!.config, step: 100 };
    await superstep(fresh, turn);
    expect(await storage.get(oldest!)).toBeUndefined();
    expect(await storage.get('langgraph/t/parts/0/w_other.json')).toBeDefined();
  });
});
