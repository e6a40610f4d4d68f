import { isBufferedStorage } from '../contract/buffered-storage.js';
import type { BatchOperation, StorageAdapter } from '../contract/storage.js';
import { chunkKey } from '../codec/chunking.js';
import { addressingOf, checkChunk, hiddenKey } from '../snapshot-io/chunk-store.js';
import { mapLimit } from '../storage/map-limit.js';
import type { SweepPlan } from './chunk-sweep.js';

/** Operations per batch: one commit each (one journal record on fs, one statement on PostgreSQL). */
const PER_BATCH = 256;
/** Chunks read at once. */
const READS_AT_ONCE = 16;

/**
 * Whether a sweep's steps go in batches: the store commits a batch as one, and does not hold it
 * (a buffered store may push later, while a hidden copy must be durable before its chunk is removed).
 */
export const canBatch = (storage: StorageAdapter): boolean =>
  storage.capabilities.atomicBatch && typeof storage.batch === 'function' && !isBufferedStorage(storage);

/**
 * The bytes of chunk `id`'s hidden copy at `copyKey` when they are intact, checked as a read
 * checks a chunk (a deflated copy matches its id once inflated); undefined when absent or damaged.
 */
export async function intactCopy(storage: StorageAdapter, id: string, copyKey: string): Promise<Uint8Array | undefined> {
  const copy = await storage.get(copyKey);
  if (!copy || 'damage' in (await checkChunk(addressingOf(storage), id, copy.bytes))) return undefined;
  return copy.bytes;
}

async function inBatches(storage: StorageAdapter, operations: readonly BatchOperation[]): Promise<void> {
  for (let at = 0; at < operations.length; at += PER_BATCH) await storage.batch!(operations.slice(at, at + PER_BATCH));
}

/**
 * A sweep's steps in a few atomic batches instead of a call per chunk, in the same safe order:
 * restored chunks are put back before their copies are removed, and hidden copies are durable
 * (their batches committed) before the chunks they copy are removed from their keys. A crash
 * between two batches leaves both a chunk and its copy, or a chunk and no copy — never neither.
 */
export async function sweepInBatches(
  storage: StorageAdapter,
  plan: SweepPlan,
  nowMs: number,
  out: { readonly hidden: string[]; readonly restored: string[]; readonly deleted: string[] },
): Promise<void> {
  // A copy is put back only when it is intact.
  const copies = await mapLimit(plan.restore, READS_AT_ONCE, async (r) => {
    if (r.live) return { r, bytes: undefined, ok: true };
    const bytes = await intactCopy(storage, r.id, r.copies[0]!);
    return { r, bytes, ok: bytes !== undefined };
  });
  const back = copies.filter((c) => c.ok);
  await inBatches(
    storage,
    back.flatMap((c) => (c.bytes ? [{ type: 'put' as const, key: chunkKey(c.r.id), bytes: c.bytes }] : [])),
  );
  await inBatches(
    storage,
    back.flatMap((c) => c.r.copies.map((key) => ({ type: 'delete' as const, key }))),
  );
  out.restored.push(...back.map((c) => c.r.id));
  await inBatches(
    storage,
    plan.expired.map((key) => ({ type: 'delete' as const, key })),
  );
  out.deleted.push(...plan.expired);
  const stored = await mapLimit(plan.hide, READS_AT_ONCE, async (h) => ({ h, stored: await storage.get(h.key) }));
  const hiding = stored.filter((s) => s.stored !== undefined);
  await inBatches(
    storage,
    hiding.map((s) => ({ type: 'put' as const, key: hiddenKey(s.h.id, nowMs), bytes: s.stored!.bytes })),
  );
  await inBatches(
    storage,
    hiding.map((s) => ({ type: 'delete' as const, key: s.h.key })),
  );
  out.hidden.push(...hiding.map((s) => s.h.id));
}
