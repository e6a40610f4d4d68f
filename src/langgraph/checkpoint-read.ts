import { hasLinkedRead, isAbsentLinked, type ListedObject } from '../contract/linked-read.js';
import type { Snapshot } from '../contract/snapshot.js';
import { checkpointKey, runDir, writesDir } from './keys.js';
import type { PrefetchedWrites } from './newest.js';
import type { LangGraphPayload } from './profile.js';
import { checkpointFrom, readCheckpoint, type SaverState } from './saver-state.js';
import { keptValue } from './decoded-cache.js';

/** A checkpoint document as read, and its writes folder when it was read with it. */
export interface CheckpointRead {
  readonly snapshot: Snapshot<LangGraphPayload> | undefined;
  /** Undefined when the writes are left to the caller; a prefix other than the checkpoint's sequence's is not used (see saver-reads.ts). */
  readonly writes: PrefetchedWrites | undefined;
}

/**
 * A checkpoint by id, with its writes where that saves a round trip: on a store with a linked
 * read, the document and the folder its `sequence` names in one (one statement on PostgreSQL,
 * one synchronous pass on fs, each writes file reached once); on
 * another store, when this saver knows the checkpoint's sequence, its writes folder read beside
 * the document instead of after it. Otherwise the document alone: the caller lists its writes
 * once the document gives the sequence.
 */
export async function readCheckpointWithWrites(state: SaverState, runId: string, id: string): Promise<CheckpointRead> {
  const key = checkpointKey(runId, id);
  const storage = state.storage;
  if (hasLinkedRead(storage)) {
    // A document the store will not parse in place (a chunked one's envelope has no sequence) comes back alone.
    const answer = await storage.getLinked(key, { list: { member: 'sequence', before: `${runDir(runId)}/parts/`, after: '/' } });
    const read = isAbsentLinked(answer) ? undefined : answer;
    const value = read?.value;
    // A document decoded before from the same bytes (an old checkpoint read again) is taken without a promise.
    const kept = value && keptValue(state.documents, key, value);
    return { snapshot: kept ?? (await checkpointFrom(state, key, value)), writes: read?.listed };
  }
  const known = state.loaded.get(runId)?.sequences.get(id);
  if (known === undefined) return { snapshot: await readCheckpoint(state, key), writes: undefined };
  const writes = readWritesFolder(state, runId, known);
  writes.catch(() => undefined); // awaited below only when the document is there; a failure is thrown then
  const snapshot = await readCheckpoint(state, key);
  return { snapshot, writes: snapshot ? await writes : undefined };
}

/** A checkpoint's writes folder, listed and read now: each document's stored bytes. */
async function readWritesFolder(state: SaverState, runId: string, sequence: number): Promise<PrefetchedWrites> {
  const prefix = writesDir(runId, sequence);
  const keys: string[] = [];
  for await (const entry of state.storage.list(prefix)) keys.push(entry.key);
  const stored = await Promise.all(keys.map((key) => state.storage.get(key)));
  const objects: ListedObject[] = [];
  // A key deleted between the listing and its read is left out, as if listed after.
  for (const [i, object] of stored.entries()) if (object) objects.push({ key: keys[i]!, bytes: object.bytes, version: object.version });
  return { prefix, objects };
}
