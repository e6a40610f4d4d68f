import { encodeBatchFile } from '../profiles/batch-file.js';
import type { RunIndexEntry } from '../model/run-index.js';
import type { StorageAdapter } from '../storage/adapter.js';
import { isBufferedStorage, isHeldLocally, rateBudgetOf, tellsHeldWrites } from '../storage/buffered.js';
import type { HeadLocation } from './sequence-recovery.js';

/** One snapshot of a batch file: its sequence and its document bytes as stored. */
export interface BatchMember {
  readonly sequence: number;
  readonly bytes: Uint8Array;
}

/** A batch file that takes over the file of the run's newest snapshot while it is still held locally. */
export interface HeldBatch {
  /** `batch_{first}_{last}.json`. */
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly members: readonly BatchMember[];
  /** The held file it replaces (the newest snapshot's `cp_` file or a smaller batch file), deleted in the same write. */
  readonly replaced: string;
}

/**
 * Below the rate-limit floor, checkpoints awaited one at a time arrive one per group commit,
 * so a group never holds the two checkpoints a batch file needs (phased-workflow-github.md
 * `batching_strategy`). An adapter that holds writes below the floor (githubStorage's
 * `holdBelowFloor`) has not sent the previous checkpoint's file yet: while `isPending` says
 * so, the new checkpoints join it in one `batch_{first}_{last}.json` that replaces the held
 * file in the same atomic write, and the adapter pushes only the end state — one batch file.
 *
 * Returns undefined (the caller writes as usual) when the head's file already left the
 * machine, cannot be read back unchanged, or the batch would exceed `maxBytes`.
 */
export async function joinHeldHead(
  storage: StorageAdapter,
  batchKey: (runId: string, first: number, last: number) => string,
  runId: string,
  head: { readonly sequence: number; readonly location: HeadLocation },
  added: readonly BatchMember[],
  maxBytes: number,
): Promise<HeldBatch | undefined> {
  const loc = head.location;
  if (added.length === 0 || (loc.kind !== 'history' && loc.kind !== 'batch') || isHeldLocally(storage, loc.key) !== true) return undefined;
  let held: readonly BatchMember[];
  if (loc.kind === 'batch') held = loc.members;
  else {
    // Served from the adapter's queue: no request.
    const stored = await storage.get(loc.key);
    if (!stored || stored.version !== loc.version) return undefined;
    held = [{ sequence: head.sequence, bytes: stored.bytes }];
  }
  const members = [...held, ...added];
  const bytes = encodeBatchFile(members);
  if (bytes.length > maxBytes) return undefined;
  return { key: batchKey(runId, members[0]!.sequence, members.at(-1)!.sequence), bytes, members, replaced: loc.key };
}

/** Index entries of the replaced file, pointed at the batch file that now holds their snapshots (each once). */
export function repointEntries(entries: readonly RunIndexEntry[], batch: HeldBatch): RunIndexEntry[] {
  const seen = new Set<string>();
  const out: RunIndexEntry[] = [];
  for (const e of entries) {
    if (e.file_path !== batch.replaced || seen.has(e.checkpoint_id)) continue;
    seen.add(e.checkpoint_id);
    out.push(Object.freeze({ ...e, file_path: batch.key }));
  }
  return out;
}

/**
 * A run's terminal checkpoint does not wait for the hold's bounds: when the adapter holds
 * writes (it has `isPending`) and the budget is low but not exhausted, the held queue is
 * pushed now, so the run's end is on the backend when `checkpoint()` resolves. True when
 * it was pushed; false leaves it held (pushed by the bounds, `flush()` or `close()`).
 */
export async function pushHeldAtRunEnd(storage: StorageAdapter): Promise<boolean> {
  if (!tellsHeldWrites(storage) || !isBufferedStorage(storage)) return false;
  // An exhausted budget would make flush() wait for the reset: the checkpoint stays queued instead.
  if (!((rateBudgetOf(storage)?.remaining ?? 0) > 0)) return false;
  try {
    await storage.flush();
    return true;
  } catch {
    return false;
  }
}
