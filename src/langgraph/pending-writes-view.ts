import type { JsonValue } from '../contract/json.js';
import type { StorageAdapter } from '../contract/storage.js';
import { writesDir } from './keys.js';
import { decodeSerialized, type OpaqueValue } from './view.js';
import { decodeStoredWrites } from './writes.js';

/** One pending write of a task against a checkpoint, its value decoded. */
export interface PendingWriteView {
  readonly taskId: string;
  /** The task's path (`~__pregel_pull, <node>`): names the node that wrote it. */
  readonly taskPath: string;
  readonly channel: string;
  readonly value: JsonValue | OpaqueValue;
}

/** LangGraph's channel for a node's `interrupt()`: its pending writes are the thread's interrupts. */
export const INTERRUPT_CHANNEL = '__interrupt__';

/**
 * The pending writes stored for the checkpoint with `sequence` in run `runId` (what its tasks
 * wrote before the next checkpoint: a crashed or interrupted superstep's work), in task and
 * write order. Interrupts are those on {@link INTERRUPT_CHANNEL}.
 */
export async function pendingWritesOf(storage: StorageAdapter, runId: string, sequence: number): Promise<PendingWriteView[]> {
  const out: PendingWriteView[] = [];
  const keys: string[] = [];
  for await (const entry of storage.list(writesDir(runId, sequence))) keys.push(entry.key);
  for (const key of keys.sort()) {
    const stored = await storage.get(key);
    if (!stored) continue;
    const doc = await decodeStoredWrites(storage, key, stored.bytes);
    for (const w of [...doc.writes].sort((a, b) => a.idx - b.idx)) {
      const value = decodeSerialized('text' in w ? { type: w.type, text: w.text } : { type: w.type, data: w.data });
      out.push({ taskId: doc.task_id, taskPath: doc.task_path, channel: w.channel, value });
    }
  }
  return out;
}
