import type { RunnableConfig } from '@langchain/core/runnables';
import type { CheckpointListOptions, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { canonicalJson } from '../codec/canonical-json.js';
import type { JsonObject } from '../contract/json.js';
import { metadataListingOf } from '../contract/metadata-listing.js';
import type { StorageEntry } from '../contract/storage.js';
import { checkpointIdOf, configurableOf, namespaceOf, requireThreadId, type Configurable } from './config.js';
import { LANGGRAPH_ROOT, NS_SEPARATOR, checkpointKey, segmentOf, threadSegmentOfRun } from './keys.js';
import { compareIds } from './run-state.js';
import { metadataOf, toTuple } from './saver-reads.js';
import { readCheckpoint, type SaverState } from './saver-state.js';

const sameJson = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === 'object' && typeof b === 'object' && a !== null && b !== null && canonicalJson(a) === canonicalJson(b));

/** What LangGraph's `list` selects by: thread, namespace, one checkpoint id, ids before one. */
interface ListSelection {
  readonly threadId: string | undefined;
  readonly ns: string | undefined;
  readonly onlyId: string | undefined;
  readonly beforeId: string | undefined;
  /** The metadata filter, when it has members: a store with a metadata listing leaves out what cannot match. */
  readonly filter: JsonObject | undefined;
}

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
  const runs = await listedIds(state, selection);
  const order: (readonly [string, string])[] = [];
  for (const runId of [...runs.keys()].sort(compareIds))
    for (const id of runs.get(runId)!.sort(compareIds).reverse()) order.push([runId, id]);
  const ahead: Promise<Settled>[] = [];
  let next = 0;
  while (remaining === undefined || remaining > 0) {
    // Without a filter each checkpoint read is one yielded: read no more ahead than the limit asks for.
    const window = selection.filter === undefined && remaining !== undefined ? Math.min(READ_AHEAD, remaining) : READ_AHEAD;
    while (ahead.length < window && next < order.length) ahead.push(selectedTuple(state, selection, ...order[next++]!));
    const settled = await ahead.shift();
    if (!settled) return;
    if ('error' in settled) throw settled.error;
    if (!settled.tuple) continue;
    if (remaining !== undefined) remaining--;
    yield settled.tuple;
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

/**
 * The keys that may hold the selection's checkpoints: one run's history when thread and namespace
 * are given, else the thread's (or every thread's) keys; on a store with a metadata listing, less
 * the documents whose metadata cannot match the filter (the caller still checks each one it reads).
 */
function candidates(
  state: SaverState,
  selection: ListSelection,
  threadSegment: string | undefined,
  nsSegment: string | undefined,
): AsyncIterable<StorageEntry> {
  const run =
    threadSegment === undefined || nsSegment === undefined
      ? undefined
      : nsSegment === ''
        ? threadSegment
        : `${threadSegment}${NS_SEPARATOR}${nsSegment}`;
  const prefix = run !== undefined ? `${LANGGRAPH_ROOT}/${run}/history/` : `${LANGGRAPH_ROOT}/${threadSegment ?? ''}`;
  const narrowed = selection.filter && metadataListingOf(state.storage);
  return narrowed ? narrowed(prefix, selection.filter!) : state.storage.list(prefix);
}

/** The checkpoint ids of each run the selection names, as listed (unsorted). */
async function listedIds(state: SaverState, selection: ListSelection): Promise<Map<string, string[]>> {
  const { threadId, ns, onlyId, beforeId } = selection;
  const threadSegment = threadId === undefined ? undefined : await segmentOf(threadId);
  const nsSegment = ns === undefined || ns === '' ? ns : await segmentOf(ns);
  const runs = new Map<string, string[]>();
  for await (const entry of candidates(state, selection, threadSegment, nsSegment)) {
    const m = /^langgraph\/([^/]+)\/history\/([^/]+)\.json$/.exec(entry.key);
    if (!m) continue;
    const [, runId, id] = m as unknown as [string, string, string];
    if (threadSegment !== undefined && threadSegmentOfRun(runId) !== threadSegment) continue;
    if (nsSegment !== undefined) {
      const dot = runId.indexOf(NS_SEPARATOR);
      if ((dot < 0 ? '' : runId.slice(dot + 1)) !== nsSegment) continue;
    }
    if (onlyId !== undefined && id !== onlyId) continue;
    if (beforeId !== undefined && id >= beforeId) continue;
    let ids = runs.get(runId);
    if (!ids) runs.set(runId, (ids = []));
    ids.push(id);
  }
  return runs;
}
