import type { Snapshot } from '../contract/snapshot.js';
import { langGraphView } from './view.js';
import type { LangGraphPayload } from './profile.js';

/** The parent checkpoint id of a snapshot the langgraph profile read, without decoding its channels. */
export const parentCheckpointOf = (snapshot: Snapshot<unknown>): string | null =>
  (snapshot.payload as Partial<LangGraphPayload> | undefined)?.parent_checkpoint_id ?? null;

/** One checkpoint of a thread as a fork list shows it: LangGraph's ids, step and source, and savepoint's sequence. */
export interface ForkCheckpoint {
  readonly checkpointId: string;
  readonly parentCheckpointId: string | null;
  /** `metadata.step`. */
  readonly step: number | null;
  /** `metadata.source`: `input`, `loop`, `update` or `fork`. */
  readonly source: string;
  /** When LangGraph took the checkpoint. */
  readonly ts: string;
  readonly sequence: number;
}

/**
 * A fork of a thread: a checkpoint with two or more children, each the start of a branch
 * (`updateState` on an older checkpoint, a replay from one, or `source: 'fork'`).
 */
export interface ThreadFork {
  /** The checkpoint the branches start from; only its id when it is no longer stored (retention). */
  readonly parent: ForkCheckpoint | { readonly checkpointId: string };
  /** Its children, oldest first. */
  readonly children: readonly ForkCheckpoint[];
}

/** A snapshot the langgraph profile read, as a {@link ForkCheckpoint}. */
export function forkCheckpointOf(snapshot: Snapshot<unknown>): ForkCheckpoint {
  const view = langGraphView(snapshot);
  return {
    checkpointId: view.checkpointId,
    parentCheckpointId: view.parentCheckpointId,
    step: view.step,
    source: view.source,
    ts: view.ts,
    sequence: snapshot.sequence,
  };
}

/** The children of each checkpoint id (oldest first), from a thread's checkpoints. */
export function childrenByParent(checkpoints: readonly ForkCheckpoint[]): Map<string, ForkCheckpoint[]> {
  const children = new Map<string, ForkCheckpoint[]>();
  for (const c of [...checkpoints].sort((a, b) => a.sequence - b.sequence)) {
    if (c.parentCheckpointId === null) continue;
    const list = children.get(c.parentCheckpointId) ?? [];
    list.push(c);
    children.set(c.parentCheckpointId, list);
  }
  return children;
}

/** The forks of a thread (checkpoints with two or more children), in the order they happened (by their second child). */
export function threadForks(checkpoints: readonly ForkCheckpoint[]): ThreadFork[] {
  const byId = new Map(checkpoints.map((c) => [c.checkpointId, c]));
  const forks: ThreadFork[] = [];
  for (const [parentId, children] of childrenByParent(checkpoints)) {
    if (children.length < 2) continue;
    forks.push({ parent: byId.get(parentId) ?? { checkpointId: parentId }, children });
  }
  return forks.sort((a, b) => a.children[1]!.sequence - b.children[1]!.sequence);
}
