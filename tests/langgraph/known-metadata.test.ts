/**
 * The metadata the saver hands down with its checkpoint document (a put's `knownMetadata`): the
 * column the PostgreSQL store would work out from the bytes (client-metadata.ts), or nothing
 * where the store should decide. The server's own function is checked in
 * tests/storage/postgres/metadata-written.process.test.ts.
 */
import { emptyCheckpoint, uuid6, type CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage, type BatchOperation, type StorageAdapter } from 'savepoint';
import { SavepointSaver } from 'savepoint/langgraph';
import { sealCheckpointDocument } from '../../src/langgraph/document.js';
import { decodeHead, encodeHead } from '../../src/langgraph/head.js';
import { sealWrites } from '../../src/langgraph/writes.js';
import { clientMetadata } from '../../src/storage/postgres/client-metadata.js';
import { checkpointPayload as payload, holdsProtoKey, writesDocument } from './known-metadata-arbitraries.js';

/** The same column: both unknown, or JSON texts `jsonb` reads as one value (key order aside). */
const sameColumn = (a: string | null, b: string | null): boolean =>
  a === null || b === null ? a === b : JSON.stringify(sortDeep(JSON.parse(a))) === JSON.stringify(sortDeep(JSON.parse(b)));
function sortDeep(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortDeep);
  if (typeof v !== 'object' || v === null) return v;
  return Object.fromEntries(
    Object.keys(v)
      .sort()
      .map((k) => [k, sortDeep((v as Record<string, unknown>)[k])]),
  );
}

describe('the metadata the saver hands down with a checkpoint document', () => {
  it('the arbitraries never draw a `__proto__` key, which savepoint refuses to store (a seed that once drew one nested)', () => {
    // This seed drew metadata {"": {"__proto__": []}} as its 15th payload: the property below
    // then failed on the refusal rather than on what it checks.
    fc.assert(
      fc.property(payload, (p) => !holdsProtoKey(p.metadata)),
      { seed: -642058624, numRuns: 300 },
    );
    fc.assert(fc.property(writesDocument, (d) => !holdsProtoKey(d)));
  });

  it('property: where the document says its metadata, it is the column the store works out from the bytes', async () => {
    let said = 0;
    let checked = 0;
    await fc.assert(
      fc.asyncProperty(payload, async (p) => {
        const sealed = await sealCheckpointDocument(
          { id: uuid6(-1), runId: 'run-1', sequence: 1, createdAt: '2026-01-01T00:00:00Z', source: 'loop' },
          p,
          { metadataColumnBelow: Number.POSITIVE_INFINITY },
        );
        if (sealed.metadataColumn === undefined) return;
        said++;
        const fromBytes = clientMetadata('c/1.json', sealed.bytes);
        if (!fromBytes.given) return; // the server decides: checked against its function in the server's tests
        checked++;
        expect({ said: sealed.metadataColumn, fromBytes: fromBytes.json, same: sameColumn(sealed.metadataColumn, fromBytes.json) }).toEqual(
          {
            said: sealed.metadataColumn,
            fromBytes: fromBytes.json,
            same: true,
          },
        );
      }),
      { numRuns: 400 },
    );
    // Most documents say it (a property that never did would pass by doing nothing).
    expect(said).toBeGreaterThan(150);
    expect(checked).toBeGreaterThan(100);
  });

  it('property: where a writes document says its metadata, it is the column the store works out from the bytes', async () => {
    let said = 0;
    await fc.assert(
      fc.asyncProperty(writesDocument, async ([document, writes]) => {
        const sealed = sealWrites(document, writes, undefined, Number.POSITIVE_INFINITY);
        if (sealed.metadataColumn === undefined) return;
        said++;
        const fromBytes = clientMetadata('w/1.json', await sealed.bytes);
        if (!fromBytes.given) return;
        expect(fromBytes.json).toBe(sealed.metadataColumn);
      }),
      { numRuns: 300 },
    );
    expect(said).toBeGreaterThan(40);
  });

  it('a stored head naming an id that is no checkpoint id is not taken as it is: its text would carry the id unescaped', () => {
    const bytes = (doc: object): Uint8Array => new TextEncoder().encode(JSON.stringify(doc));
    const id = '1ef4f797-8335-6428-8001-8a1503f9b875';
    expect(decodeHead(bytes({ checkpoint_id: id, sequence: 3, top_id: '1ef4f797-9' }), 'h')).toEqual({
      checkpointId: id,
      sequence: 3,
      topId: '1ef4f797-9',
    });
    // A top id that is no checkpoint id is dropped (the run is listed), so the next head's text stays JSON with '{}' as its metadata.
    const quoted = decodeHead(bytes({ checkpoint_id: id, sequence: 3, top_id: 'z"}' }), 'h')!;
    expect(quoted).toEqual({ checkpointId: id, sequence: 3 });
    expect(JSON.parse(new TextDecoder().decode(encodeHead({ ...quoted, sequence: 4 })))).toMatchObject({ sequence: 4 });
    expect(decodeHead(bytes({ checkpoint_id: 'a\\u0041', sequence: 3 }), 'h')).toBeUndefined();
    expect(decodeHead(bytes({ checkpoint_id: 'a"b', sequence: 3 }), 'h')).toBeUndefined();
  });

  /** memoryStorage recording its puts, declaring `metadataListing` (as a store that indexes metadata does) when `indexes`. */
  function recording(indexes: boolean): { storage: StorageAdapter; puts: BatchOperation[] } {
    const puts: BatchOperation[] = [];
    const inner = memoryStorage();
    const storage: StorageAdapter = {
      ...inner,
      capabilities: indexes ? { ...inner.capabilities, metadataListing: true } : inner.capabilities,
      put: async (key, bytes, opts) => {
        puts.push({ type: 'put', key, bytes, ...opts });
        return inner.put(key, bytes, opts);
      },
      batch: async (operations) => {
        puts.push(...operations.filter((op) => op.type === 'put'));
        return inner.batch!(operations);
      },
    };
    return { storage, puts };
  }

  it('the saver says nothing to a store that indexes no metadata (working it out scans the whole document)', async () => {
    const { storage, puts } = recording(false);
    const saver = new SavepointSaver({ storage, dedup: false });
    const config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    const stored = await saver.put(
      config,
      { ...emptyCheckpoint(), id: uuid6(-1) },
      { source: 'input', step: -1, parents: {} } as CheckpointMetadata,
      {},
    );
    await saver.putWrites(stored, [['note', 'hello']], 'task-1');
    await saver.put(stored, { ...emptyCheckpoint(), id: uuid6(-1) }, { source: 'loop', step: 0, parents: {} } as CheckpointMetadata, {});
    expect(puts.length).toBeGreaterThanOrEqual(4);
    expect(puts.filter((op) => op.type === 'put' && op.knownMetadata !== undefined)).toEqual([]);
  });

  it('the saver passes it with its checkpoint document, its writes and its head, for those very bytes', async () => {
    const { storage, puts } = recording(true);
    // Without content chunks, which put other bytes (an envelope) for which nothing is said.
    const saver = new SavepointSaver({ storage, dedup: false });
    const config = { configurable: { thread_id: 't', checkpoint_ns: '' } };
    await saver.put(
      config,
      { ...emptyCheckpoint(), id: uuid6(-1) },
      { source: 'input', step: -1, parents: {}, user: 'ana' } as CheckpointMetadata,
      {},
    );
    const document = puts.find((op) => op.type === 'put' && op.key.includes('/history/'));
    expect(document?.type === 'put' && document.knownMetadata).toEqual({
      bytes: document?.type === 'put' ? document.bytes : undefined,
      json: '{"parents":{},"source":"input","step":-1,"user":"ana"}',
    });
    expect(document?.type === 'put' && document.knownMetadata?.bytes === document.bytes).toBe(true);
    // The next superstep: the task's writes and the thread's head say '{}', for their own bytes.
    const next = {
      configurable: { thread_id: 't', checkpoint_ns: '', checkpoint_id: document?.key.split('/').at(-1)?.replace('.json', '') },
    };
    puts.length = 0;
    await saver.putWrites(next, [['note', 'hello']], 'task-1');
    await saver.put(next, { ...emptyCheckpoint(), id: uuid6(-1) }, { source: 'loop', step: 0, parents: {} } as CheckpointMetadata, {});
    const said = puts.map(
      (op) =>
        op.type === 'put' && [
          op.key
            .split('/')
            .slice(2)
            .join('/')
            .replace(/[0-9a-f-]{36}/, 'ID'),
          op.knownMetadata?.json,
          op.knownMetadata?.bytes === op.bytes,
        ],
    );
    expect(said).toEqual([
      ['parts/1/w_task-1.json', '{}', true],
      ['head.json', '{}', true],
      ['history/ID.json', '{"parents":{},"source":"loop","step":0}', true],
    ]);
  });
});
