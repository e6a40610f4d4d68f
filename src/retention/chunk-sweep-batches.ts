import { holdsWrites } from '../contract/buffered-storage.js';
import type { BatchOperation, StorageAdapter } from '../contract/storage.js';
import { chunkKey } from '../codec/chunking.js';
import { addressingOf, checkChunk, hiddenKey } from '../snapshot-io/chunk-store.js';
import { mapLimit } from '../storage/map-limit.js';
import type { SweepPlan } from './chunk-sweep.js';

/** Operations per batch: one commit each (one journal record on fs, one statement on PostgreSQL). */
const PER_BATCH = 256;
/**
 * Chunks hidden per batch (a copy's put and its chunk's removal each): small enough that a
 * writer's commit queued behind one waits for little, and that fs's journal plans its puts with
 * open temp files (64 a batch).
 */
const HIDES_PER_BATCH = 32;
/** Chunks read at once. */
const READS_AT_ONCE = 16;

/**
 * Whether a sweep's steps go in batches: the store commits a batch as one, and does not hold it
 * (a store that holds writes pushes later, while a hidden copy must be durable before its chunk is
 * removed). fs's journal holds nothing: its `flush` only waits for files it already made durable
 * in the journal.
 */
export const canBatch = (storage: StorageAdapter): boolean =>
  storage.capabilities.atomicBatch && typeof storage.batch === 'function' && !holdsWrites(storage);

/**
 * The bytes of chunk `id`'s hidden copy at `copyKey` when they are intact, checked as a read
 * checks a chunk (a deflated copy matches its id once inflated); undefined when absent or damaged.
 */
export async function intactCopy(storage: StorageAdapter, id: string, copyKey: string): Promise<Uint8Array | undefined> {
  const copy = await storage.get(copyKey);
  if (!copy || 'damage' in (await checkChunk(addressingOf(storage), id, copy.bytes))) return undefined;
  return copy.bytes;
}

/** Deletes `keys` in atomic batches of {@link PER_BATCH} (a store that {@link canBatch}). */
export const deleteInBatches = (storage: StorageAdapter, keys: readonly string[]): Promise<void> =>
  inBatches(
    storage,
    keys.map((key) => ({ type: 'delete' as const, key })),
  );

async function inBatches(storage: StorageAdapter, operations: readonly BatchOperation[]): Promise<void> {
  for (let at = 0; at < operations.length; at += PER_BATCH) await storage.batch!(operations.slice(at, at + PER_BATCH));
}

/**
 * A sweep's steps in a few atomic batches instead of a call per chunk, in the same safe order:
 * restored chunks are put back before their copies are removed, and a chunk is hidden by one
 * batch that puts its copy and removes it from its key, so a crash leaves both or neither of
 * the two — never the chunk under neither key.
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
  await deleteInBatches(storage, plan.expired);
  out.deleted.push(...plan.expired);
  for (let at = 0; at < plan.hide.length; at += HIDES_PER_BATCH)
    out.hidden.push(...(await hideBatch(storage, plan.hide.slice(at, at + HIDES_PER_BATCH), nowMs)));
}

/** Hides `chunks` in one atomic batch (each: its copy put, its key removed); the ids of those still stored. */
async function hideBatch(storage: StorageAdapter, chunks: SweepPlan['hide'], nowMs: number): Promise<string[]> {
  const stored = await mapLimit(chunks, READS_AT_ONCE, async (h) => ({ h, stored: await storage.get(h.key) }));
  const hiding = stored.filter((s) => s.stored !== undefined);
  if (hiding.length === 0) return [];
  await storage.batch!(
    hiding.flatMap((s) => [
      { type: 'put' as const, key: hiddenKey(s.h.id, nowMs), bytes: s.stored!.bytes },
      { type: 'delete' as const, key: s.h.key },
    ]),
  );
  return hiding.map((s) => s.h.id);
}
