import type { RunnableConfig } from '@langchain/core/runnables';
import type { CheckpointListOptions, CheckpointTuple } from '@langchain/langgraph-checkpoint';
import { canonicalJson } from '../codec/canonical-json.js';
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
  };
  const runs = await listedIds(state, selection);
  for (const runId of [...runs.keys()].sort(compareIds)) {
    for (const id of runs.get(runId)!.sort(compareIds).reverse()) {
      if (remaining !== undefined && remaining <= 0) return;
      const snapshot = await readCheckpoint(state, checkpointKey(runId, id));
      if (!snapshot) continue; // deleted while listing
      const p = snapshot.payload;
      if (
        (selection.threadId !== undefined && p.thread_id !== selection.threadId) ||
        (selection.ns !== undefined && p.checkpoint_ns !== selection.ns)
      )
        continue;
      if (filter && Object.keys(filter).length > 0) {
        const metadata = (await metadataOf(state, p)) as Record<string, unknown>;
        if (!Object.entries(filter).every(([k, v]) => sameJson(metadata?.[k], v))) continue;
      }
      if (remaining !== undefined) remaining--;
      yield await toTuple(state, snapshot);
    }
  }
}

/** The checkpoint ids of each run the selection names, as listed (unsorted). */
async function listedIds(state: SaverState, selection: ListSelection): Promise<Map<string, string[]>> {
  const { threadId, ns, onlyId, beforeId } = selection;
  const threadSegment = threadId === undefined ? undefined : await segmentOf(threadId);
  const nsSegment = ns === undefined || ns === '' ? ns : await segmentOf(ns);
  const runs = new Map<string, string[]>();
  for await (const entry of state.storage.list(threadSegment === undefined ? `${LANGGRAPH_ROOT}/` : `${LANGGRAPH_ROOT}/${threadSegment}`)) {
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
