import type { StoredHead } from './head.js';
import { checkpointKey, runIdOf } from './keys.js';
import { holdsId, insertId, loadRunState, reserveSequence, type RunState } from './run-state.js';
import { learnLeaving } from './saver-retention.js';
import { readCheckpoint, type SaverState } from './saver-state.js';

/**
 * The state of run `runId`, loaded once (one listing) and shared by every call that waits for it.
 * `headAbsent`: the caller just read the run's head and found none, so it is not read again;
 * `known`: the head the caller just read (see `loadRunState`); `keys`: the run's keys read with
 * it, so the run is not listed again.
 */
export function runOf(
  state: SaverState,
  runId: string,
  headAbsent = false,
  known?: StoredHead,
  keys?: readonly string[],
): Promise<RunState> {
  let run = state.runs.get(runId);
  if (!run) {
    // A saver that keeps every checkpoint learns a run from its head; one that prunes lists it (its ids are the ones to prune).
    const listIds = state.keepLast !== false || headAbsent;
    const loading = loadRunState(state.storage, runId, (key) => readCheckpoint(state, key), listIds, known, keys);
    run = loading;
    state.runs.set(runId, loading);
    loading.then(
      (loaded) => {
        if (state.runs.get(runId) !== loading) return;
        state.loaded.set(runId, loaded);
        // What the first put lets go is learned now, beside the calls before it, not once that put is under way.
        void learnLeaving(state, loaded);
      },
      () => state.runs.delete(runId),
    );
  }
  return run;
}

/** Takes `run` as the saver's state of its run, learned from a read the saver made anyway, unless a load of it is already under way. */
export function adoptRun(state: SaverState, run: RunState): void {
  if (state.runs.has(run.runId)) return;
  state.runs.set(run.runId, Promise.resolve(run));
  state.loaded.set(run.runId, run);
}

/** Forgets what the saver knew of a run (its files were deleted). */
export function forgetRun(state: SaverState, runId: string): void {
  state.runs.delete(runId);
  state.loaded.delete(runId);
}

/** The run id of a (thread, namespace) pair, remembered for the next put (runIdOf is async). */
export async function runIdFor(state: SaverState, threadId: string, ns: string): Promise<string> {
  const key = `${threadId.length}:${threadId}${ns}`;
  const known = state.runIds.get(key);
  if (known !== undefined) return known;
  const runId = await runIdOf(threadId, ns, state.storage);
  if (state.runIds.size >= 1024) state.runIds.clear();
  state.runIds.set(key, runId);
  return runId;
}

/**
 * The run id of a (thread, namespace) pair the saver has met, without building its map key
 * (a new string to hash on every call) when it is the pair of the last call. Inside a graph
 * the saver's calls run between LangGraph's, cache-cold: each step it skips counts.
 */
export function knownRunId(state: SaverState, threadId: string, ns: string): string | undefined {
  const last = state.lastRun;
  if (last !== undefined && last.threadId === threadId && last.ns === ns) return last.runId;
  const runId = state.runIds.get(`${threadId.length}:${threadId}${ns}`);
  if (runId !== undefined) state.lastRun = { threadId, ns, runId };
  return runId;
}

/**
 * The sequence of checkpoint `id` without a promise: known, or reserved now for a checkpoint
 * the run does not hold (every put of a new checkpoint); undefined when its document must be
 * read ({@link sequenceOf}). An await is a microtask, and LangGraph's AsyncLocalStorage makes
 * each one cost.
 */
export function sequenceNow(run: RunState, id: string): number | undefined {
  return run.sequences.get(id) ?? (holdsId(run, id) === false ? reserveSequence(run, id) : undefined);
}

/** The sequence of a stored checkpoint (read from its document when not known yet), else a new one. */
export async function sequenceOf(state: SaverState, run: RunState, id: string): Promise<number> {
  const known = run.sequences.get(id);
  if (known !== undefined) return known;
  if (holdsId(run, id) !== false) await readStored(state, run, id);
  return reserveSequence(run, id);
}

/** Whether the run holds checkpoint `id`, reading its document when only a read can tell (see {@link holdsId}). */
export async function holdsIdNow(state: SaverState, run: RunState, id: string): Promise<boolean> {
  return holdsId(run, id) ?? (await readStored(state, run, id));
}

/** Reads checkpoint `id`'s document; when stored, the run's state learns its id and sequence. Returns whether it is stored. */
async function readStored(state: SaverState, run: RunState, id: string): Promise<boolean> {
  const stored = await readCheckpoint(state, checkpointKey(run.runId, id));
  if (!stored) return false;
  if (!run.sequences.has(id)) run.sequences.set(id, stored.sequence);
  insertId(run, id);
  return true;
}

/** True for a sequence the saver reserved itself and found no writes under (no other saver can have written its writes). */
export function ownsSequence(run: RunState, sequence: number): boolean {
  return sequence > run.loadedMaxSequence && !run.leftoverWrites.has(sequence);
}
