import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isCheckpointError } from '../../src/contract/errors.js';
import type { BatchOperation } from '../../src/contract/storage.js';
import { assertBatchOperations } from '../../src/storage/batch-operation.js';
import { memoryStorage } from '../../src/index.js';

const op = (key: string): BatchOperation => ({ type: 'put', key, bytes: new Uint8Array([1]) });

/** The key the check must refuse first: the first one named a second time, in order. */
function firstRepeat(keys: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const key of keys) {
    if (seen.has(key)) return key;
    seen.add(key);
  }
  return undefined;
}

describe('assertBatchOperations: a key named twice', () => {
  it('is refused with checkpoint_conflict naming the first repeated key, in short batches and long ones alike', () => {
    // Keys from a small alphabet so that repeats are frequent; lengths on both sides of the short-batch scan.
    const keys = fc.array(fc.constantFrom('a', 'b', 'c/d', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r'), {
      maxLength: 24,
    });
    fc.assert(
      fc.property(keys, (names) => {
        const repeat = firstRepeat(names);
        let error: unknown;
        try {
          assertBatchOperations(names.map(op));
        } catch (err) {
          error = err;
        }
        if (repeat === undefined) expect(error).toBeUndefined();
        else {
          expect(isCheckpointError(error, 'checkpoint_conflict')).toBe(true);
          expect((error as { details?: { key?: string } }).details?.key).toBe(repeat);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('leaves memoryStorage unchanged when a short batch repeats a key', async () => {
    const storage = memoryStorage();
    await expect(storage.batch!([op('x'), { type: 'delete', key: 'y' }, op('x')])).rejects.toMatchObject({
      reasonCode: 'checkpoint_conflict',
    });
    expect(await storage.get('x')).toBeUndefined();
  });
});
