/**
 * What the writer spends rewriting a long run's `index.json`: the entries of an index it read are
 * kept frozen (so its encoder serializes each once, not at every rewrite), and a store that indexes
 * documents' metadata (postgresStorage) is told the index names none instead of parsing it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createWriter, defaultProfile, memoryStorage, type BatchOperation, type StorageAdapter } from 'savepoint';
import { encodeRunIndex } from 'savepoint/toolkit';
import { clientMetadata } from '../../src/storage/postgres/client-metadata.js';
import { indexMetadata } from '../../src/writer/ordered-write.js';
import { recoverRun } from '../../src/writer/sequence-recovery.js';
import { runIndexArbitrary } from './run-index-arbitraries.js';

const checkpoint = { source: 'step_boundary', status: 'in_progress' } as const;

async function writeRun(storage: StorageAdapter, runId: string, count: number, close = true): Promise<void> {
  const writer = createWriter({ storage, profile: defaultProfile, runId, autoRetention: false, openFromLatest: false });
  for (let i = 1; i <= count; i++) {
    const r = await writer.checkpoint({ ...checkpoint, payload: { i } });
    if (!r.ok) throw r.error;
  }
  if (close) await writer.close();
}

/** `inner` declaring a metadata index, its batches recorded. */
function metadataIndexing(inner: StorageAdapter): { storage: StorageAdapter; batches: BatchOperation[][] } {
  const batches: BatchOperation[][] = [];
  const storage: StorageAdapter = Object.assign(Object.create(inner) as StorageAdapter, {
    capabilities: { ...inner.capabilities, metadataListing: true },
    batch: (ops: readonly BatchOperation[], options?: Parameters<NonNullable<StorageAdapter['batch']>>[1]) => {
      batches.push([...ops]);
      return inner.batch!(ops, options);
    },
  });
  return { storage, batches };
}

describe("the writer's index rewrites", () => {
  it('a recovered run keeps the entries of its stored index, and those it found unindexed, frozen', async () => {
    const storage = memoryStorage();
    await writeRun(storage, 'r', 40);
    // A writer that stops without closing leaves its last entries out of the index (held back).
    await writeRun(storage, 'r', 100, false);
    const recovered = await recoverRun(storage, defaultProfile, 'r');
    expect(recovered.index.doc?.checkpoints.length).toBeGreaterThan(40);
    expect(recovered.unindexed.length).toBeGreaterThan(0);
    expect({
      indexed: recovered.index.doc!.checkpoints.every((e) => Object.isFrozen(e)),
      unindexed: recovered.unindexed.every((e) => Object.isFrozen(e)),
    }).toEqual({ indexed: true, unindexed: true });
  });

  it("the index put tells a store that indexes metadata that the index names none ('{}'), as the store would work out", async () => {
    const { storage, batches } = metadataIndexing(memoryStorage());
    await writeRun(storage, 'r', 40);
    const indexPuts = batches.flat().filter((op) => op.type === 'put' && op.key.endsWith('/index.json'));
    expect(indexPuts.length).toBeGreaterThan(30);
    for (const op of indexPuts) {
      if (op.type !== 'put') continue;
      expect(op.knownMetadata).toEqual({ bytes: op.bytes, json: '{}' });
      expect(op.knownMetadata?.bytes).toBe(op.bytes);
      expect(clientMetadata(op.key, op.bytes)).toEqual({ json: '{}', given: true });
    }
  });

  it('a store that indexes no metadata is told nothing', async () => {
    const inner = memoryStorage();
    const batches: BatchOperation[][] = [];
    const storage: StorageAdapter = Object.assign(Object.create(inner) as StorageAdapter, {
      batch: (ops: readonly BatchOperation[]) => (batches.push([...ops]), inner.batch!(ops)),
    });
    await writeRun(storage, 'r', 3);
    const indexPuts = batches.flat().filter((op) => op.type === 'put' && op.key.endsWith('/index.json'));
    expect(indexPuts.length).toBe(3);
    for (const op of indexPuts) expect(op.type === 'put' && op.knownMetadata).toBeUndefined();
  });

  it('property: where the writer names an index its metadata, it is what the store works out from the bytes; an escape leaves it to the store', () => {
    const store = { capabilities: { metadataListing: true } } as unknown as StorageAdapter;
    let said = 0;
    let left = 0;
    fc.assert(
      fc.property(runIndexArbitrary, (index) => {
        const bytes = encodeRunIndex(index);
        const escaped = new TextDecoder().decode(bytes).includes('\\u');
        const known = indexMetadata(store, bytes);
        if (escaped) {
          left++;
          expect(known).toBeUndefined();
          return;
        }
        said++;
        expect(known).toEqual({ bytes, json: '{}' });
        expect(clientMetadata('checkpoints/r/index.json', bytes)).toEqual({ json: '{}', given: true });
      }),
      { numRuns: 400 },
    );
    // Both ways are taken (a property that always left it to the store would pass by doing nothing).
    expect({ said: said > 50, left: left > 50 }).toEqual({ said: true, left: true });
  });
});
