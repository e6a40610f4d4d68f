import type { Clock } from '../contract/clock.js';
import { isCheckpointError } from '../contract/errors.js';
import type { StorageAdapter } from '../contract/storage.js';
import type { ChunkListing } from '../snapshot-io/chunk-refs.js';
import { canBatch } from './chunk-sweep-batches.js';
import { eachLimit } from './each-limit.js';

/**
 * Freeing chunks without hiding them, on a store whose every write makes a new version
 * (`capabilities.versionsPerWrite`): a sweep remembers, in this process, the chunks it found
 * unreferenced with the versions it listed, and a sweep of the same adapter at least the grace
 * period later deletes each one it finds still unreferenced at that same version — a delete
 * conditional on that version. One delete per freed chunk, no hidden copy, nothing stored: a
 * process that forgets (a restart) only frees later. The safety argument is in docs/storage.md
 * ("Freeing without hiding").
 */

/** A chunk found unreferenced: the version listed, and when (clock ms, once marking was over). */
export interface Finding {
  readonly version: string;
  readonly atMs: number;
}

/** What the sweeps of one adapter remember between them: their findings, by the clock that timed them. */
interface SweepMemory {
  readonly clock: Clock;
  readonly findings: ReadonlyMap<string, Finding>;
}

const memories = new WeakMap<StorageAdapter, SweepMemory>();

/** Whether a sweep of `storage` may free chunks by remembering them (its versions never repeat). */
export const freesByMemory = (storage: StorageAdapter): boolean => storage.capabilities.versionsPerWrite === true;

/** The findings of earlier sweeps of `storage` timed by `clock` (none when they were timed by another clock). */
export function findingsOf(storage: StorageAdapter, clock: Clock): ReadonlyMap<string, Finding> {
  const memory = memories.get(storage);
  return memory && memory.clock === clock ? memory.findings : new Map();
}

/** Keeps `findings` for the next sweep of `storage` (replacing the earlier ones). */
export function keepFindings(storage: StorageAdapter, clock: Clock, findings: ReadonlyMap<string, Finding>): void {
  memories.set(storage, { clock, findings });
}

/** A chunk to delete now: its key, at the version found and listed again. */
export interface ChunkToFree {
  readonly id: string;
  readonly key: string;
  readonly version: string;
}

/** What a remembering sweep does with the unreferenced chunks under their keys (pure). */
export interface RememberedPlan {
  /** Found unreferenced at this version at least the grace period ago, and still: deleted at that version. */
  readonly free: readonly ChunkToFree[];
  /** What the next sweep remembers: every other unreferenced chunk, found now or earlier at the version listed now. */
  readonly findings: ReadonlyMap<string, Finding>;
}

/**
 * Decides, from one listing and one marking, which unreferenced chunks to free and what to
 * remember. A chunk referenced now, gone, or listed at another version than found starts over:
 * only a chunk unreferenced in every sweep since the finding is freed, and its delete is
 * conditional on the version found. A remembered chunk listed without a version (a listing by
 * name; its version is not looked up again) keeps its finding: a put since changed its version,
 * so the delete fails and the next sweep finds it anew. `sweptAtMs` is when this sweep started
 * (before it listed); `markedAtMs` when its marking ended.
 */
export function planRemembered(
  chunks: ChunkListing,
  referenced: ReadonlyMap<string, string>,
  earlier: ReadonlyMap<string, Finding>,
  times: { readonly sweptAtMs: number; readonly markedAtMs: number; readonly graceMs: number },
): RememberedPlan {
  const free: ChunkToFree[] = [];
  const findings = new Map<string, Finding>();
  for (const [id, key] of chunks.live) {
    if (referenced.has(id)) continue;
    const found = earlier.get(id);
    const version = chunks.liveVersions.get(id) ?? found?.version;
    if (version === undefined) continue; // not looked up: remembered by no sweep until one is
    if (found?.version !== version) findings.set(id, { version, atMs: times.markedAtMs });
    else if (times.sweptAtMs - found.atMs >= times.graceMs) free.push({ id, key, version });
    else findings.set(id, found);
  }
  return { free, findings };
}

/** Conditional deletes per batch: one commit each (one journal record on fs). */
const DELETES_PER_BATCH = 256;

/**
 * Deletes each chunk of `free` at its version; the ids deleted. A chunk written again since its
 * listing has another version and stays (`checkpoint_conflict`, no error), and so does one
 * already gone. In atomic batches where the store has them; a batch refused for one changed
 * chunk is done again one delete at a time.
 */
export async function freeRemembered(storage: StorageAdapter, free: readonly ChunkToFree[]): Promise<string[]> {
  const freed: string[] = [];
  const oneByOne = (chunks: readonly ChunkToFree[]): Promise<void> =>
    eachLimit(chunks, async (chunk) => {
      if (await deletedAtVersion(storage, chunk)) freed.push(chunk.id);
    });
  if (!canBatch(storage)) {
    await oneByOne(free);
    return freed;
  }
  for (let at = 0; at < free.length; at += DELETES_PER_BATCH) {
    const slice = free.slice(at, at + DELETES_PER_BATCH);
    if (await batchDeleted(storage, slice)) freed.push(...slice.map((c) => c.id));
    else await oneByOne(slice);
  }
  return freed;
}

/** One atomic batch deleting `chunks` at their versions: false when one of them changed (nothing deleted). */
async function batchDeleted(storage: StorageAdapter, chunks: readonly ChunkToFree[]): Promise<boolean> {
  try {
    await storage.batch!(chunks.map((c) => ({ type: 'delete' as const, key: c.key, ifVersion: c.version })));
    return true;
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_conflict')) return false;
    throw err;
  }
}

/** Deletes `chunk` at its version: false when it changed or is gone. */
async function deletedAtVersion(storage: StorageAdapter, chunk: ChunkToFree): Promise<boolean> {
  try {
    return await storage.delete(chunk.key, { ifVersion: chunk.version });
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_conflict')) return false;
    throw err;
  }
}
