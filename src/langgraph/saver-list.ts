import type { RunnableConfig } from '@langchain/core/runnables';
import type { CheckpointListOptions, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { canonicalJson } from '../codec/canonical-json.js';
import type { JsonObject } from '../contract/json.js';
import { checkpointIdOf, configurableOf, namespaceOf, requireThreadId, type Configurable } from './config.js';
import { checkpointKey } from './keys.js';
import { listedCheckpoints, type ListSelection } from './list-order.js';
import { metadataOf, toTuple } from './saver-reads.js';
import { readCheckpoint, type SaverState } from './saver-state.js';

const sameJson = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && canonicalJson(a) === canonicalJson(b));

/** LangGraph's `list`: runs in id order, each run's checkpoints newest first. */
export async function* listCheckpointTuples(
  state: SaverState,
  config: RunnableConfig,
  options?: CheckpointListOptions,
): AsyncGenerator<CheckpointTuple> {
  const { before, filter } = options ?? {};
  let remaining = options?.limit;
  const c = configurableOf(config, 'list') ?? {};
  const selection: ListSelection = {
    threadId: c.thread_id === undefined || c.thread_id === null ? undefined : requireThreadId(config, 'list'),
    ns: c.checkpoint_ns === undefined || c.checkpoint_ns === null ? undefined : namespaceOf(config),
    onlyId: checkpointIdOf(c),
    beforeId: checkpointIdOf(before?.configurable as Configurable | undefined),
    filter: filter && Object.keys(filter).length > 0 ? (filter as JsonObject) : undefined,
  };
  const listed = listedCheckpoints(state, selection);
  const ahead: Promise<Settled>[] = [];
  let more = true;
  try {
    while (remaining === undefined || remaining > 0) {
      // No more ahead than the limit still asks for: reads past the last match would go on after the caller has its answer.
      const window = remaining === undefined ? READ_AHEAD : Math.min(READ_AHEAD, remaining);
      while (more && ahead.length < window) {
        const next = await listed.next();
        if (next.done) more = false;
        else ahead.push(selectedTuple(state, selection, ...next.value));
      }
      const settled = await ahead.shift();
      if (!settled) return;
      if ('error' in settled) throw settled.error;
      if (!settled.tuple) continue;
      if (remaining !== undefined) remaining--;
      yield settled.tuple;
    }
  } finally {
    // Stopped at the limit, or by the caller: the listing ends here too.
    await listed.return(undefined);
  }
}

/** Checkpoints read at once while listing: the store's round trips overlap instead of adding up. */
const READ_AHEAD = 8;

/** A read's outcome, its failure kept as a value: a read ahead the caller never reaches (it stopped iterating) must not reject unhandled. */
type Settled = { readonly tuple: CheckpointTuple | undefined } | { readonly error: unknown };

/** The tuple of one listed checkpoint; undefined when it is gone (deleted while listing), of another thread or namespace, or not matching the filter. */
async function selectedTuple(state: SaverState, selection: ListSelection, runId: string, id: string): Promise<Settled> {
  try {
    const snapshot = await readCheckpoint(state, checkpointKey(runId, id));
    if (!snapshot) return { tuple: undefined };
    const p = snapshot.payload;
    if (
      (selection.threadId !== undefined && p.thread_id !== selection.threadId) ||
      (selection.ns !== undefined && p.checkpoint_ns !== selection.ns)
    )
      return { tuple: undefined };
    const filter = selection.filter;
    if (filter) {
      const metadata = (await metadataOf(state, p)) as Record<string, unknown>;
      if (!Object.entries(filter).every(([k, v]) => sameJson(metadata?.[k], v))) return { tuple: undefined };
    }
    return { tuple: await toTuple(state, snapshot) };
  } catch (error) {
    return { error };
  }
}
