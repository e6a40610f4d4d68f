/**
 * memoryStorage's immediate form (src/contract/synchronous-storage.ts), which the LangGraph saver calls
 * without a promise: for any sequence of puts (plain or conditional) and batches it must return
 * what the adapter's promises resolve to, throw what they reject with, and leave the same store.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memoryStorage } from 'savepoint';
import type { BatchOperation, PutOptions, StorageAdapter } from '../../../src/contract/storage.js';
import { isSynchronousStorage, type SynchronousStorage } from '../../../src/contract/synchronous-storage.js';

/** The store's synchronous put and batch, or undefined when it does not declare them. */
function synchronousOf(store: StorageAdapter): { put: SynchronousStorage['putNow']; batch: SynchronousStorage['batchNow'] } | undefined {
  if (!isSynchronousStorage(store)) return undefined;
  return { put: (key, bytes, options) => store.putNow(key, bytes, options), batch: (operations) => store.batchNow(operations) };
}

type Op = { readonly put: [string, string, 'none' | 'absent' | 'v1' | 'v2'] } | { readonly batch: [string, string | null][] };

async function outcome(run: () => unknown): Promise<unknown> {
  try {
    return { value: await run() };
  } catch (err) {
    return { error: (err as { reasonCode?: unknown }).reasonCode };
  }
}

async function contents(storage: StorageAdapter): Promise<[string, string, string][]> {
  const out: [string, string, string][] = [];
  for await (const e of storage.list('')) out.push([e.key, e.version, new TextDecoder().decode((await storage.get(e.key))!.bytes)]);
  return out;
}

describe('memoryStorage immediate put and batch', () => {
  it('property: the same results, errors and store as the promised put and batch', async () => {
    const key = fc.constantFrom('a/1', 'a/2', 'b', 'bad//key', '../x');
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ put: fc.tuple(key, fc.string({ maxLength: 8 }), fc.constantFrom('none', 'absent', 'v1', 'v2')) }),
      fc.record({ batch: fc.array(fc.tuple(key, fc.option(fc.constantFrom('x', 'yy'), { nil: null })), { maxLength: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 12 }), async (ops) => {
        const promised = memoryStorage();
        const direct = memoryStorage();
        const now = synchronousOf(direct)!;
        expect(now).toBeDefined();
        const shared = new TextEncoder().encode('shared');
        for (const o of ops) {
          if ('put' in o) {
            const [k, text, cond] = o.put;
            const options: PutOptions =
              cond === 'none' ? {} : cond === 'absent' ? { ifAbsent: true } : { ifVersion: cond === 'v1' ? '1' : '2' };
            const bytes = new TextEncoder().encode(text);
            expect(await outcome(() => now.put(k, bytes, options))).toEqual(await outcome(() => promised.put(k, bytes, options)));
          } else {
            const operations: BatchOperation[] = o.batch.map(([k, v]) =>
              v === null ? { type: 'delete', key: k } : { type: 'put', key: k, bytes: v === 'x' ? shared : new TextEncoder().encode(v) },
            );
            expect(await outcome(() => now.batch(operations))).toEqual(await outcome(() => promised.batch!(operations)));
          }
        }
        expect(await contents(direct)).toEqual(await contents(promised));
      }),
      { numRuns: 150 },
    );
  });

  it('a closed store refuses immediate puts too; a wrapper around the store has no immediate form', async () => {
    const storage = memoryStorage();
    const now = synchronousOf(storage)!;
    await storage.close!();
    expect(() => now.put('a', new Uint8Array(1))).toThrow(/closed/);
    expect(synchronousOf({ ...storage })).toBeUndefined();
  });
});
