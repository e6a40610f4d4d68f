/** What the snapshot page shows: the payload first (a LangGraph checkpoint as LangGraph reads it), the envelope on demand. */
import type { Snapshot } from '../contract/snapshot.js';
import { diffSnapshots, type SnapshotChange } from '../runs/diff.js';
import { langGraphView } from '../langgraph/view.js';
import { INTERRUPT_CHANNEL, pendingWritesOf } from '../langgraph/pending-writes-view.js';
import type { ViewerSource } from './source.js';
import type { TimelineEntry } from './timeline.js';

/** A LangGraph checkpoint's child as the page links it. */
export interface ChildView {
  readonly checkpointId: string;
  readonly sequence: number | null;
  readonly source: string | null;
  readonly createdAt: string | null;
}

/** The children of checkpoint `id` on a LangGraph thread's timeline (two or more: a fork), oldest first. */
export function childrenOnTimeline(entries: readonly TimelineEntry[], id: string): ChildView[] {
  return entries
    .filter((e) => e.parent === id && e.id !== null)
    .map((e) => ({ checkpointId: e.id!, sequence: e.sequence, source: e.source, createdAt: e.createdAt }));
}

/** A snapshot as the page reads it: the LangGraph profile's checkpoints decoded, any other payload as stored. */
function asRead(source: ViewerSource, s: Snapshot<unknown>): Snapshot<unknown> {
  if (source.profile.name !== 'langgraph') return s;
  const view = langGraphView(s);
  return { ...s, payload: { channels: view.channels, next: view.next, step: view.step, metadata: view.metadata } };
}

/** The changes from `a` to `b`: the payload's first, the envelope's (id, createdAt, checksum, sequence…) apart, for the page to show on demand. */
export function diffView(
  source: ViewerSource,
  a: Snapshot<unknown>,
  b: Snapshot<unknown>,
): { changes: SnapshotChange[]; envelope: SnapshotChange[] } {
  const all = diffSnapshots(asRead(source, a), asRead(source, b), { all: true });
  const isPayload = (c: SnapshotChange): boolean => c.path === '/payload' || c.path.startsWith('/payload/');
  return { changes: all.filter(isPayload), envelope: all.filter((c) => !isPayload(c)) };
}

/**
 * The snapshot with, for a LangGraph checkpoint, the graph's view of it: thread, checkpoint,
 * parent, children, step, source node, next nodes, channels decoded, pending writes and interrupts.
 */
export async function snapshotView(
  source: ViewerSource,
  runId: string,
  snapshot: Snapshot<unknown>,
  children: readonly ChildView[] = [],
): Promise<Record<string, unknown>> {
  if (source.profile.name !== 'langgraph') return { ...snapshot };
  const view = langGraphView(snapshot);
  const writes = await pendingWritesOf(source.storage, runId, snapshot.sequence);
  const interrupts = writes.filter((w) => w.channel === INTERRUPT_CHANNEL).map((w) => w.value);
  return { ...snapshot, langgraph: { ...view, children, pendingWrites: writes, interrupts } };
}
