import type { JsonObject } from '../contract/json.js';
import { metadataListingOf } from '../contract/metadata-listing.js';
import type { StorageEntry } from '../contract/storage.js';
import { LANGGRAPH_ROOT, NS_SEPARATOR, segmentOf, threadSegmentOfRun } from './keys.js';
import { compareIds } from './run-state.js';
import type { SaverState } from './saver-state.js';

/** What LangGraph's `list` selects by: thread, namespace, one checkpoint id, ids before one, metadata. */
export interface ListSelection {
  readonly threadId: string | undefined;
  readonly ns: string | undefined;
  readonly onlyId: string | undefined;
  readonly beforeId: string | undefined;
  /** The metadata filter, when it has members: a store with a metadata listing leaves out what cannot match. */
  readonly filter: JsonObject | undefined;
}

/** One listed checkpoint: its run and id. */
export type ListedCheckpoint = readonly [runId: string, id: string];

const HISTORY_KEY = /^langgraph\/([^/]+)\/history\/([^/]+)\.json$/;

/**
 * The checkpoints that may answer `selection`, in `list`'s order: runs in id order, each newest
 * first. One run's folder (a thread's root namespace, or the namespace asked for) is read newest
 * first as the store lists it, so a `limit` stops the listing early; a thread's other namespaces
 * (`<thread>.<ns>`, after `<thread>` in id order) and a listing of every thread are listed whole.
 */
export async function* listedCheckpoints(state: SaverState, selection: ListSelection): AsyncGenerator<ListedCheckpoint> {
  const threadSegment = selection.threadId === undefined ? undefined : await segmentOf(selection.threadId, state.storage);
  const nsSegment = selection.ns === undefined || selection.ns === '' ? selection.ns : await segmentOf(selection.ns, state.storage);
  if (threadSegment === undefined) {
    yield* sortedCheckpoints(state, selection, `${LANGGRAPH_ROOT}/`, undefined, nsSegment);
    return;
  }
  if (nsSegment !== undefined) {
    yield* newestFirst(state, selection, nsSegment === '' ? threadSegment : `${threadSegment}${NS_SEPARATOR}${nsSegment}`);
    return;
  }
  yield* newestFirst(state, selection, threadSegment);
  yield* sortedCheckpoints(state, selection, `${LANGGRAPH_ROOT}/${threadSegment}${NS_SEPARATOR}`, threadSegment, undefined);
}

/** `list(prefix)`, or on a store with a metadata listing and a filter, the listing less what cannot match. */
function candidates(
  state: SaverState,
  selection: ListSelection,
  prefix: string,
  descending: boolean,
): AsyncIterable<StorageEntry> | undefined {
  const narrowed = selection.filter && metadataListingOf(state.storage);
  return narrowed ? narrowed(prefix, selection.filter!, { descending }) : descending ? undefined : state.storage.list(prefix);
}

const wanted = (selection: ListSelection, id: string): boolean =>
  (selection.onlyId === undefined || id === selection.onlyId) && (selection.beforeId === undefined || id < selection.beforeId);

/**
 * One run's checkpoints, newest first: streamed from a descending metadata listing (an id is held
 * back while the ids listed after it extend it with `-`: they sort after it by id, before it by
 * key, as `a-1.json` < `a.json`), else listed whole and sorted.
 */
async function* newestFirst(state: SaverState, selection: ListSelection, runId: string): AsyncGenerator<ListedCheckpoint> {
  const prefix = `${LANGGRAPH_ROOT}/${runId}/history/`;
  const stream = candidates(state, selection, prefix, true);
  if (!stream) {
    const ids: string[] = [];
    for await (const entry of state.storage.list(prefix)) {
      const m = HISTORY_KEY.exec(entry.key);
      if (m && m[1] === runId && wanted(selection, m[2]!)) ids.push(m[2]!);
    }
    for (const id of ids.sort(compareIds).reverse()) yield [runId, id];
    return;
  }
  const held: string[] = [];
  for await (const entry of stream) {
    const m = HISTORY_KEY.exec(entry.key);
    if (!m || m[1] !== runId || !wanted(selection, m[2]!)) continue;
    const id = m[2]!;
    while (held.length > 0 && !id.startsWith(`${held[held.length - 1]!}-`)) yield [runId, held.pop()!];
    held.push(id);
  }
  while (held.length > 0) yield [runId, held.pop()!];
}

/** The checkpoints under `prefix`, listed whole, of the runs the thread and namespace segments allow: runs in id order, each newest first. */
async function* sortedCheckpoints(
  state: SaverState,
  selection: ListSelection,
  prefix: string,
  threadSegment: string | undefined,
  nsSegment: string | undefined,
): AsyncGenerator<ListedCheckpoint> {
  const runs = new Map<string, string[]>();
  for await (const entry of candidates(state, selection, prefix, false)!) {
    const m = HISTORY_KEY.exec(entry.key);
    if (!m) continue;
    const [, runId, id] = m as unknown as [string, string, string];
    if (threadSegment !== undefined && threadSegmentOfRun(runId) !== threadSegment) continue;
    if (nsSegment !== undefined) {
      const dot = runId.indexOf(NS_SEPARATOR);
      if ((dot < 0 ? '' : runId.slice(dot + 1)) !== nsSegment) continue;
    }
    if (!wanted(selection, id)) continue;
    let ids = runs.get(runId);
    if (!ids) runs.set(runId, (ids = []));
    ids.push(id);
  }
  for (const runId of [...runs.keys()].sort(compareIds)) for (const id of runs.get(runId)!.sort(compareIds).reverse()) yield [runId, id];
}
