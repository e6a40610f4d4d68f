import { toCheckpointError } from '../contract/errors.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import type { Profile } from '../contract/profile.js';
import { isPreservedRun } from './auto-retention.js';
import { noteDeleted, type AutoSweepOutcome } from './auto-sweep.js';
import { failure, type WriterState } from './state.js';

/** The `candidates` the per-run policy lets go (planPrune), unless the run is preserved. */
export async function prunable<P>(state: WriterState<P>, candidates: RunIndexEntry[]): Promise<RunIndexEntry[]> {
  const { storage, profile, runId } = state.config;
  try {
    return (await isPreservedRun(storage, profile as Profile<unknown>, runId)) ? [] : candidates;
  } catch (raw) {
    failure(state, toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not read the preserved runs list'), 'retention');
    return [];
  }
}

/** The files of pruned snapshots: their documents and the part files this writer wrote for them. */
export function prunedKeys(prune: readonly RunIndexEntry[], partsBySequence: ReadonlyMap<number, readonly string[]>): Set<string> {
  const keys = new Set<string>();
  for (const e of prune) {
    keys.add(e.file_path);
    for (const part of partsBySequence.get(e.sequence) ?? []) keys.add(part);
  }
  return keys;
}

/**
 * Forgets pruned snapshots, deleting their files once the index that no longer lists them
 * is durable — unless the plan's atomic batch already deleted them (`alreadyDeleted`). A
 * failed delete leaves an unindexed file, which the next open indexes again and prunes again.
 */
export async function removePruned<P>(state: WriterState<P>, prune: readonly RunIndexEntry[], alreadyDeleted: boolean): Promise<void> {
  const gone = new Set(prune);
  state.history = state.history.filter((e) => !gone.has(e));
  const keys = prunedKeys(prune, state.partsBySequence);
  for (const e of prune) state.partsBySequence.delete(e.sequence);
  const deleted: string[] = alreadyDeleted ? [...keys] : [];
  for (const key of alreadyDeleted ? [] : keys) {
    try {
      await state.config.storage.delete(key);
      deleted.push(key);
    } catch (raw) {
      failure(state, toCheckpointError(raw, 'checkpoint_retention_prune_failed', `could not delete ${key}`), 'retention');
    }
  }
  state.emitter.emit('pruned', { runId: state.config.runId, sequences: prune.map((e) => e.sequence), keys: deleted });
  const { autoSweep, storage } = state.config;
  if (!autoSweep) return;
  // Awaited only when deletes got far ahead of a running sweep: the next group waits, this one is acknowledged already.
  const behind = noteDeleted(storage, autoSweep, prune.length, (outcome) => reportSweep(state, outcome));
  if (behind) await behind;
}

/** A finished automatic sweep as the writer's events tell it: `swept`, or an `error` during retention. */
function reportSweep<P>(state: WriterState<P>, outcome: AutoSweepOutcome): void {
  const { runId } = state.config;
  if (!outcome.ok) {
    failure(state, outcome.error, 'retention');
    return;
  }
  const { referenced, hidden, restored, deleted, stopped } = outcome.report;
  state.emitter.emit('swept', {
    runId,
    referenced,
    hidden: hidden.length,
    restored: restored.length,
    deleted: deleted.length,
    ...(stopped === undefined ? {} : { stopped }),
  });
}
