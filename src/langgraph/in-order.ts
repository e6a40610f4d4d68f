import type { Head, InOrder } from './head.js';

/**
 * A run's in-order range (the head's `in_order`, see {@link InOrder}): how savers keep it as they
 * claim sequences and let checkpoints go, and what it tells a saver that lists the run.
 *
 * Why it exists: `keepLast` deletes a leaving checkpoint with its pending writes, whose folder
 * is named by the checkpoint's sequence, and a checkpoint's key names only its id. A saver that
 * did not write the checkpoint (a restarted service, another replica) would read its document
 * to learn the sequence; the range tells it from the run's listing and head instead.
 */

/** FNV-1a (32 bits) of an id's code units: checkpoint ids are ASCII (`CHECKPOINT_ID`). */
export function idHash(id: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) hash = Math.imul(hash ^ id.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/** The range that starts at checkpoint `id`, claimed at `sequence`. */
const startingAt = (id: string, sequence: number): InOrder => ({ fromId: id, fromSequence: sequence, idsHash: idHash(id) });

/** What a claim knows of the head it replaces (the version it is conditioned on). */
export interface HeadBefore {
  readonly sequence: number;
  readonly topId: string | undefined;
  /** The head's range, where it still holds as far as the claiming saver knows (see `RunState.headInOrder`). */
  readonly inOrder: InOrder | undefined;
}

/**
 * The range once checkpoint `id` is claimed at `sequence`. `before`: the head replaced, undefined
 * when the run has none (a new run; `heldTop`, the greatest id it holds, for a run stored before
 * heads). A claim above every id the run has held extends the range, or starts one when there is
 * none or a sequence was skipped; any other claim (an id below the head's top id: an old id put
 * again, a replica whose clock is behind) ends it, since the ids would no longer sort as claimed.
 */
export function claimedInOrder(
  before: HeadBefore | undefined,
  heldTop: string | undefined,
  id: string,
  sequence: number,
): InOrder | undefined {
  if (before === undefined) return heldTop === undefined || id > heldTop ? startingAt(id, sequence) : undefined;
  if (before.topId === undefined || id <= before.topId) return undefined;
  const range = before.inOrder;
  return range !== undefined && sequence === before.sequence + 1
    ? { fromId: range.fromId, fromSequence: range.fromSequence, idsHash: (range.idsHash ^ idHash(id)) >>> 0 }
    : startingAt(id, sequence);
}

/**
 * The range once the run's oldest checkpoints `leaving` (ascending) are deleted in the claim's
 * commit: it starts at the oldest checkpoint that stays (`staying`, with its sequence) when it
 * started at one that leaves. Undefined when that sequence is not known.
 */
export function withoutLeaving(
  range: InOrder | undefined,
  leaving: readonly string[],
  staying: { readonly id: string; readonly sequence: number | undefined },
): InOrder | undefined {
  if (range === undefined || leaving.length === 0 || leaving[leaving.length - 1]! < range.fromId) return range;
  // Its first checkpoint not among them (deleted by other means): the range no longer holds.
  if (staying.sequence === undefined || staying.id <= range.fromId || !leaving.includes(range.fromId)) return undefined;
  let hash = range.idsHash;
  for (const id of leaving) if (id >= range.fromId) hash ^= idHash(id);
  return { fromId: staying.id, fromSequence: staying.sequence, idsHash: hash >>> 0 };
}

/**
 * Where the head's range starts in the run's listed ids (ascending): the index of its first id,
 * when the ids from there on are exactly the checkpoints claimed since — as many as the
 * sequences from the range's first to the head's, the last one the head's checkpoint, and the
 * same ids by their hash (a checkpoint deleted or added by other means, such as a retention
 * rule, shows in one or the other). The checkpoint at `index + k` then has sequence
 * `fromSequence + k`. Undefined when the head has no range or the listing does not fit it.
 */
export function inOrderFirst(ids: readonly string[], head: Head): number | undefined {
  const range = head.inOrder;
  if (range === undefined || ids[ids.length - 1] !== head.checkpointId) return undefined;
  const first = ids.length - (head.sequence - range.fromSequence + 1);
  if (first < 0 || ids[first] !== range.fromId) return undefined;
  let hash = 0;
  for (let i = first; i < ids.length; i++) hash ^= idHash(ids[i]!);
  return hash >>> 0 === range.idsHash ? first : undefined;
}
