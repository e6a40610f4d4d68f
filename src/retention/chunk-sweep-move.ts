import { isCheckpointError } from '../contract/errors.js';
import type { KeyMove, MovableStorage } from '../contract/move.js';
import type { StorageAdapter } from '../contract/storage.js';
import { chunkKey } from '../codec/chunking.js';
import { hiddenKey } from '../snapshot-io/chunk-store.js';
import { intactCopy } from './chunk-sweep-batches.js';
import type { ChunkSteps, SweepPlan } from './chunk-sweep.js';

/**
 * The steps of a sweep on a store that moves a value in one step (`capabilities.move`): a chunk is
 * hidden by moving it to `<key>.hidden-<ms>`, and put back by moving its copy home, instead of a
 * read, a put and a delete each. Crash safety is the store's: a move never leaves the bytes
 * under neither key, so a crash at any step leaves each chunk live, hidden, or both — the
 * states a sweep already handles (a hidden chunk still reads; a referenced one is put back; a
 * chunk both live and hidden keeps its live key and loses the copy). Copies older than the
 * grace period are deleted as before. Copies hidden by the copy-and-delete steps (older
 * versions, or another process on a store without the capability) are the same keys.
 */
export const moveSteps = (
  storage: StorageAdapter,
  move: MovableStorage['move'],
  nowMs: number,
  moveMany?: MovableStorage['moveMany'],
): ChunkSteps => ({
  restore: async ({ id, copies, live }) => {
    const [first, ...others] = copies;
    // A damaged copy is not moved home: the chunk's readers report it, as they would the copy.
    const back = live || ((await intactCopy(storage, id, first!)) !== undefined && (await moveQuietly(move, first!, chunkKey(id))));
    if (!back) return false;
    for (const key of live ? copies : others) await storage.delete(key);
    return true;
  },
  hide: async ({ id, key }) => {
    const target = hiddenKey(id, nowMs);
    if (await moveQuietly(move, key, target)) return true;
    return dropLiveBesideCopy(storage, id, key, target);
  },
  ...(moveMany ? { hideMany: (chunks: SweepPlan['hide']) => hideByMoveMany(storage, moveMany, chunks, nowMs) } : {}),
});

/**
 * Hides `chunks` by one `moveMany` (on fs one journal record for all of them, not one each): the
 * ids hidden. A chunk whose move changed nothing goes on as a single hide's would
 * ({@link dropLiveBesideCopy}).
 */
async function hideByMoveMany(
  storage: StorageAdapter,
  moveMany: NonNullable<MovableStorage['moveMany']>,
  chunks: SweepPlan['hide'],
  nowMs: number,
): Promise<string[]> {
  const moves = chunks.map(({ id, key }): KeyMove => ({ from: key, to: hiddenKey(id, nowMs) }));
  const moved = await moveMany(moves);
  const hidden: string[] = [];
  for (const [i, { id, key }] of chunks.entries())
    if (moved[i] || (await dropLiveBesideCopy(storage, id, key, moves[i]!.to))) hidden.push(id);
  return hidden;
}

/**
 * A hide whose move found its target taken: a sweep of the same millisecond hid this chunk
 * before, and it was written home again since. Once that copy is intact, the live key goes,
 * which leaves what the move would have (the bytes hidden under this sweep's stamp); left
 * live, the chunk outlived the grace period by a whole sweep. Only the version seen is
 * deleted: a chunk written home again meanwhile is the next sweep's.
 */
async function dropLiveBesideCopy(storage: StorageAdapter, id: string, key: string, copy: string): Promise<boolean> {
  const live = await storage.get(key);
  if (!live || (await intactCopy(storage, id, copy)) === undefined) return false;
  try {
    return await storage.delete(key, { ifVersion: live.version });
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_conflict')) return false;
    throw err;
  }
}

/**
 * A move where "nothing to do" is no error: the source gone (another sweep moved or deleted it)
 * answers false, and so does a target already taken (a chunk written home again since the
 * listing, or a copy of the same stamp): the next sweep sees the store as it is then.
 */
async function moveQuietly(move: MovableStorage['move'], from: string, to: string): Promise<boolean> {
  try {
    return await move(from, to);
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_conflict')) return false;
    throw err;
  }
}
