import { hasLinkedRead, isAbsentLinked, readLinked, type ListedObject } from '../contract/linked-read.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeHead, type StoredHead } from './head.js';
import { headKey, historyDir, runDir } from './keys.js';
import type { LangGraphPayload } from './profile.js';
import { refreshRunState, runStateFromHead, type RunState } from './run-state.js';
import { adoptRun, runOf } from './saver-runs.js';
import { checkpointFrom, readCheckpoint, type SaverState } from './saver-state.js';

/** The writes folder of a run's newest checkpoint, read with it: the folder and each document's stored bytes. */
export interface PrefetchedWrites {
  readonly prefix: string;
  readonly objects: readonly ListedObject[];
}

/** A run's head, and the checkpoint it names with that checkpoint's writes when the store had them. */
export interface Newest {
  readonly stored: StoredHead;
  /** The checkpoint the head names; undefined when its document is not stored (a put cut short between the two). */
  readonly snapshot: Snapshot<LangGraphPayload> | undefined;
  readonly writes: PrefetchedWrites | undefined;
}

/**
 * A run without a head, met by the saver in the read that found none: its state learned from the
 * keys read with it, where the store reads them in the same round trip (PostgreSQL, the packed
 * layout). A new thread has no key, and its first superstep no listing.
 */
export interface Headless {
  readonly run: Promise<RunState>;
}

/**
 * Whether the saver reads a run's newest checkpoint with its head in one linked read
 * (contract/linked-read.ts). A store without one is read as before: the head, then the document
 * with a bounded read, then the writes.
 */
export const readsNewestLinked = (state: SaverState): boolean => hasLinkedRead(state.storage);

/**
 * A run's head, the checkpoint it names and that checkpoint's writes, in one linked read: one
 * round trip on PostgreSQL where they were three, for every turn a replica takes on a thread
 * another replica served last. The saver learns the run on the way ({@link learnNewest}).
 * {@link Headless} for a run without a head that the saver meets now, when the store listed the
 * run with the read; else undefined when the run has no head.
 */
export async function readNewest(state: SaverState, runId: string): Promise<Newest | Headless | undefined> {
  const dir = runDir(runId);
  const key = headKey(runId);
  const met = state.runs.has(runId);
  // A saver that prunes and meets the run: its keys in the same round trip, where the store reads them so
  // (PostgreSQL); elsewhere the run is listed after, beside the graph's step. With the head's in-order range
  // they tell the sequences of the checkpoints leaving next, whose documents are then not read (in-order.ts).
  const meeting = state.keepLast !== false && !met;
  const read = await readLinked(
    state.storage,
    key,
    {
      get: { member: 'checkpoint_id', before: historyDir(runId), after: '.json' },
      list: { member: 'sequence', before: `${dir}/parts/`, after: '/' },
      ...(meeting ? { keys: `${dir}/` } : {}),
      // Without a head the run is listed anyway (it may hold checkpoints stored before heads): in the same round trip where the store can.
      ...(met ? {} : { keysIfAbsent: `${dir}/` }),
    },
    false,
  );
  if (isAbsentLinked(read)) return { run: runOf(state, runId, true, undefined, read.absent.keys) };
  if (!read) return undefined;
  const stored: StoredHead = { head: decodeHead(read.value.bytes, key), version: read.value.version };
  const snapshot = stored.head && read.got ? await checkpointFrom(state, read.got.key, read.got.object) : undefined;
  await learnNewest(state, runId, stored, snapshot, read.keys?.keys);
  return { stored, snapshot, writes: read.listed };
}

/**
 * Brings what the saver knows of a run up to a head just read: a run it knows, learned again
 * when the head moved (without reading the head again); a run it does not know, taken from the
 * head when the saver keeps every checkpoint (no listing needed). The checkpoint the head
 * names becomes the run's last, so the turn's first put finds its parent without a read.
 */
async function learnNewest(
  state: SaverState,
  runId: string,
  stored: StoredHead,
  snapshot: Snapshot<LangGraphPayload> | undefined,
  keys: readonly string[] | undefined,
): Promise<void> {
  let run = state.loaded.get(runId);
  if (run) {
    // A put under way moves the head itself: its claim is not another saver's.
    if (run.claiming.size === 0 && stored.version !== run.headVersion) {
      await refreshRunState(state.storage, run, (k) => readCheckpoint(state, k), stored, state.keepLast !== false);
    }
  } else if (!state.runs.has(runId) && state.keepLast === false) {
    run = runStateFromHead(runId, stored);
    if (run) adoptRun(state, run);
  } else if (!state.runs.has(runId)) {
    // A saver that prunes lists the run (unless read with its head): started now, beside the graph's step, and the checkpoint just read is its last once listed.
    runOf(state, runId, false, stored, keys).then(
      (listed) => takeAsLast(listed, stored, snapshot),
      () => undefined,
    );
    return;
  }
  if (run) takeAsLast(run, stored, snapshot);
}

/** The checkpoint the head names, just read, as the run's last: the turn's first put finds its parent without a read. */
function takeAsLast(run: RunState, stored: StoredHead, snapshot: Snapshot<LangGraphPayload> | undefined): void {
  if (!snapshot || run.headId !== snapshot.id || run.headVersion !== stored.version || run.last?.id === snapshot.id) return;
  run.sequences.set(snapshot.id, snapshot.sequence);
  run.last = { id: snapshot.id, channels: snapshot.payload.channel_values };
}
