import { CheckpointError } from '../contract/errors.js';
import { getManyOf, readMany, type StoredObject } from '../contract/storage.js';
import { planKeepLast } from '../writer/auto-retention.js';
import { noteDeleted, type AutoSweep, type AutoSweepOutcome } from '../writer/auto-sweep.js';
import type { WritePlan } from '../writer/ordered-write.js';
import { getBounded } from '../snapshot-io/bounded-read.js';
import { sealedDocumentMembers } from '../snapshot-io/read-snapshot.js';
import { mapLimit } from '../storage/map-limit.js';
import { writeGroup } from '../writer/write-step.js';
import { checkpointKey, writesDir } from './keys.js';
import { withoutLeaving } from './in-order.js';
import { hasId, type RunState } from './run-state.js';
import { checkpointFrom, DOCUMENT_READ_LIMIT, readCheckpoint, type SaverState } from './saver-state.js';

const NONE: readonly never[] = Object.freeze([]);

/** A saver's automatic chunk sweep: when it runs, and who hears of each one. */
interface SaverSweep {
  readonly sweep: AutoSweep;
  readonly onOutcome: (outcome: AutoSweepOutcome) => void;
}

/** The automatic sweep of each saver that has one (`keepLast` and content chunks on, `sweepChunks` not off). */
const sweeps = new WeakMap<SaverState, SaverSweep>();

/** Has `keepLast`'s deletes start a chunk sweep of the store now and then (see writer/auto-sweep.ts). */
export function enableAutoSweep(state: SaverState, sweep: AutoSweep, onOutcome: (outcome: AutoSweepOutcome) => void): void {
  sweeps.set(state, { sweep, onOutcome });
}

/** Counts `count` checkpoints `keepLast` deletes, starting a sweep in the background when one is due. */
function noteLeaving(state: SaverState, count: number): void {
  const s = sweeps.get(state);
  // Not awaited, even when the sweep falls behind (the writer waits there): this runs inside a
  // put's planning, which stays synchronous. The sweep's promise never rejects.
  if (s) void noteDeleted(state.storage, s.sweep, count, s.onOutcome);
}

/**
 * The checkpoints (and their pending writes) that `keepLast` lets go once `id` is stored,
 * when all their keys are known and the adapter has an atomic batch — so they can be
 * deleted in the put's own commit. Undefined otherwise ({@link prune} deletes them after).
 */
export function leavingWith(state: SaverState, run: RunState, id: string): { ids: readonly string[]; keys: string[] } | undefined {
  if (state.keepLast === false || !state.storage.capabilities.atomicBatch || typeof state.storage.batch !== 'function') return undefined;
  const ids = planKeepLast(run.ids, state.keepLast, id, hasId(run, id));
  // None leaving; or the new id among the oldest (an old checkpoint put again): the plain path decides.
  if (ids === undefined || ids.length === 0) return undefined;
  const keys: string[] = [];
  for (const old of ids) {
    const sequence = run.sequences.get(old);
    const writes = sequence === undefined ? undefined : writesOf(run, sequence);
    if (!writes) return undefined;
    keys.push(checkpointKey(run.runId, old), ...writes);
  }
  // Counted before the batch that deletes them: a sweep it starts beside that batch is safe (the grace rule), only early.
  noteLeaving(state, ids.length);
  return { ids, keys };
}

/**
 * The writes keys of the checkpoint with `sequence`, as far as the saver knows them without a
 * listing: its own and those the run's listing found; undefined when only a listing can tell.
 */
function writesOf(run: RunState, sequence: number): Iterable<string> | undefined {
  const own = run.writeKeys.get(sequence);
  const listed = run.listedWrites.get(sequence);
  if (own && listed) return new Set([...own, ...listed]);
  return own ?? listed ?? (sequence <= run.writesListedUpTo ? NONE : undefined);
}

/** At most this many documents read at once to learn their sequences, one `get` each. */
const SEQUENCE_READS = 8;

/**
 * On a store with a multi-get, the checkpoints whose documents one read takes: those leaving now
 * and the next ones to leave, up to a window that starts small (a replica taking a short turn
 * reads few documents it will not prune) and doubles with each read of the run, up to its bound.
 */
const FIRST_SEQUENCE_WINDOW = 8;
const MAX_SEQUENCE_WINDOW = 64;
/** Bytes of documents a window reads at most, by the size of those read so far: large checkpoints are read a few at a time. */
const WINDOW_BYTES = 1024 * 1024;

/** What a saver is learning of one run's leaving checkpoints. */
interface LeavingReads {
  /** Reads and decodes under way, by checkpoint id: a put waits for the one its batch needs rather than reading again. */
  readonly pending: Map<string, Promise<void>>;
  /**
   * Documents a multi-get read ahead, not decoded yet: each is decoded when its checkpoint is about
   * to leave, so a turn's first put decodes what it lets go, not the whole window.
   */
  readonly ahead: Map<string, StoredObject | undefined>;
  /** How many documents the next multi-get takes. */
  window: number;
}

const leavingReads = new WeakMap<RunState, LeavingReads>();

function leavingReadsOf(run: RunState): LeavingReads {
  let reads = leavingReads.get(run);
  if (!reads) leavingReads.set(run, (reads = { pending: new Map(), ahead: new Map(), window: FIRST_SEQUENCE_WINDOW }));
  return reads;
}

/**
 * Learns the sequences of the checkpoints the run's next new put lets go (`keepLast`), where
 * the saver does not know them (a thread another saver wrote, whose head's in-order range did
 * not tell them: see in-order.ts), by reading their documents: so
 * that put deletes them, and their writes, in its own batch rather than one delete at a time
 * after it. On a store with a multi-get, one read takes the documents of the next ones to leave
 * too (see {@link FIRST_SEQUENCE_WINDOW}): one statement for many supersteps instead of one each.
 * Undefined when nothing is to learn; read failures leave a sequence unknown, and
 * {@link prune} then deletes that checkpoint as before.
 */
export function learnLeaving(state: SaverState, run: RunState): Promise<void> | undefined {
  if (state.keepLast === false || !state.storage.capabilities.atomicBatch || typeof state.storage.batch !== 'function') return undefined;
  const leaving = run.ids.length + 1 - state.keepLast;
  if (leaving <= 0) return undefined;
  let waits: Promise<void>[] | undefined;
  let unread: string[] | undefined;
  for (let i = 0; i < leaving; i++) {
    const id = run.ids[i]!;
    if (run.sequences.has(id)) continue;
    const reads = leavingReadsOf(run);
    const pending = reads.pending.get(id) ?? (reads.ahead.has(id) ? decodeAhead(state, run, reads, id) : undefined);
    if (pending) (waits ??= []).push(pending);
    else (unread ??= []).push(id);
  }
  if (unread) (waits ??= []).push(startReads(state, run, unread, leaving));
  // A read waited for may have been another's read-ahead, which left this put's documents undecoded.
  return waits && Promise.all(waits).then(() => decodeLeaving(state, run, leaving));
}

/** Decodes the documents read ahead of the first `leaving` checkpoints whose sequences are still unknown. */
async function decodeLeaving(state: SaverState, run: RunState, leaving: number): Promise<void> {
  const reads = leavingReadsOf(run);
  const decodes: Promise<void>[] = [];
  for (let i = 0; i < Math.min(leaving, run.ids.length); i++) {
    const id = run.ids[i]!;
    if (run.sequences.has(id)) continue;
    const pending = reads.pending.get(id) ?? (reads.ahead.has(id) ? decodeAhead(state, run, reads, id) : undefined);
    if (pending) decodes.push(pending);
  }
  await Promise.all(decodes);
}

/** Decodes a document read ahead, now that its checkpoint is about to leave. */
function decodeAhead(state: SaverState, run: RunState, reads: LeavingReads, id: string): Promise<void> {
  const stored = reads.ahead.get(id);
  reads.ahead.delete(id);
  const decoding = learnSequence(state, run, id, stored).then(() => void reads.pending.delete(id));
  reads.pending.set(id, decoding);
  return decoding;
}

/** Starts reading the documents of `unread` (and, on a store with a multi-get, of the next ones to leave after the first `leaving`). */
function startReads(state: SaverState, run: RunState, unread: string[], leaving: number): Promise<void> {
  const reads = leavingReadsOf(run);
  // A store declaring the capability without carrying the member (a wrapper that spread it) is read one get a document.
  const multi = getManyOf(state.storage) !== undefined;
  const now = unread.length;
  // Documents read ahead of checkpoints the run no longer holds (another saver let them go) are dropped.
  for (const id of reads.ahead.keys()) if (!hasId(run, id)) reads.ahead.delete(id);
  if (multi) {
    const end = Math.min(run.ids.length, leaving + reads.window - now);
    reads.window = Math.min(MAX_SEQUENCE_WINDOW, reads.window * 2);
    for (let i = leaving; i < end; i++) {
      const id = run.ids[i]!;
      if (!run.sequences.has(id) && !reads.pending.has(id) && !reads.ahead.has(id)) unread.push(id);
    }
  }
  const read = (
    multi ? readAhead(state, run, reads, unread, now) : mapLimit(unread, SEQUENCE_READS, (id) => readSequence(state, run, id))
  ).then(() => {
    for (const id of unread) reads.pending.delete(id);
  });
  for (const id of unread) reads.pending.set(id, read);
  return read;
}

/** Reads checkpoint `id`'s document for its sequence; a failed or missing read leaves it unknown. */
async function readSequence(state: SaverState, run: RunState, id: string): Promise<void> {
  const stored = await getBounded(state.storage, checkpointKey(run.runId, id), DOCUMENT_READ_LIMIT).catch(() => undefined);
  if (stored) await learnSequence(state, run, id, stored);
}

/**
 * Learns checkpoint `id`'s sequence from its document as read (`stored`); one that fails to decode
 * stays unknown. The document is about to be deleted: a sealed one stored whole is only parsed
 * and its seal checked, not decoded into a snapshot (nor kept in the saver's cache of documents).
 */
async function learnSequence(state: SaverState, run: RunState, id: string, stored: StoredObject | undefined): Promise<void> {
  const members = stored && stored.bytes.length <= DOCUMENT_READ_LIMIT ? await sealedDocumentMembers(stored.bytes) : undefined;
  const named = members && sequenceNamed(members, id);
  if (named !== undefined) {
    if (hasId(run, id)) run.sequences.set(id, named);
    return;
  }
  const snapshot = await checkpointFrom(state, checkpointKey(run.runId, id), stored).catch(() => undefined);
  if (snapshot && snapshot.id === id && hasId(run, id)) run.sequences.set(id, snapshot.sequence);
}

/** The sequence a checkpoint document's members give, when they name checkpoint `id` (as its snapshot would). */
function sequenceNamed(members: Readonly<Record<string, unknown>>, id: string): number | undefined {
  const sequence = members['sequence'];
  // Sequences start at 1, as the profile's schema requires: anything else is left to the full decode, which refuses it.
  return members['snapshot_id'] === id && Number.isSafeInteger(sequence) && (sequence as number) >= 1 ? (sequence as number) : undefined;
}

/**
 * Reads the documents of checkpoints `ids` in one multi-get: the first `now` (leaving with the
 * next put) decoded for their sequences, the others kept for when they leave. A failed read leaves
 * every sequence unknown.
 */
async function readAhead(state: SaverState, run: RunState, reads: LeavingReads, ids: readonly string[], now: number): Promise<void> {
  const stored = await readMany(
    state.storage,
    ids.map((id) => checkpointKey(run.runId, id)),
  ).catch(() => undefined);
  if (!stored) return;
  let bytes = 0;
  for (const object of stored) bytes += object?.bytes.length ?? 0;
  reads.window = Math.max(1, Math.min(reads.window, Math.floor(WINDOW_BYTES / Math.max(1, bytes / ids.length))));
  for (let i = now; i < ids.length; i++) reads.ahead.set(ids[i]!, stored[i]);
  await Promise.all(ids.slice(0, now).map((id, i) => learnSequence(state, run, id, stored[i])));
}

/** Drops a deleted checkpoint from the run's state. */
export function forget(run: RunState, id: string): void {
  const at = run.ids.indexOf(id);
  if (at >= 0) run.ids.splice(at, 1);
  const sequence = run.sequences.get(id);
  if (sequence !== undefined) {
    run.writeKeys.delete(sequence);
    run.listedWrites.delete(sequence);
  }
  run.sequences.delete(id);
}

/**
 * Deletes the oldest checkpoints of the run beyond `keepLast`, each with its pending writes
 * (document first, so none is left without its writes), one write step each. Never the
 * checkpoint the head names (the newest put), even when its id is the lowest: a replica whose
 * clock is behind makes such ids.
 */
export async function prune(state: SaverState, run: RunState): Promise<void> {
  if (state.keepLast === false) return;
  while (run.ids.length > state.keepLast) {
    const at = run.ids[0] === run.headId ? 1 : 0;
    const id = run.ids[at]!;
    const key = checkpointKey(run.runId, id);
    try {
      const sequence = run.sequences.get(id) ?? (await readCheckpoint(state, key).catch(() => undefined))?.sequence;
      const deletes = [key];
      if (sequence !== undefined) {
        const known = writesOf(run, sequence);
        if (known) deletes.push(...known);
        else for await (const entry of state.storage.list(writesDir(run.runId, sequence))) deletes.push(entry.key);
      }
      const plan: WritePlan = { creates: NONE, replaces: NONE, deletes };
      await writeGroup(state.storage, plan, false);
      if (sequence !== undefined) {
        run.writeKeys.delete(sequence);
        run.listedWrites.delete(sequence);
      }
    } catch (err) {
      throw new CheckpointError(
        'checkpoint_retention_prune_failed',
        `SavepointSaver: could not delete an old checkpoint of run ${run.runId} (the new one is stored)`,
        {
          cause: err,
          details: { runId: run.runId },
        },
      );
    }
    // Deleted without a claim: the stored head's in-order range still counts it (a saver meeting the run
    // finds it does not fit), and this saver's next claim writes the range without it.
    const next = run.ids[at + 1];
    run.headInOrder =
      next === undefined || at > 0 ? undefined : withoutLeaving(run.headInOrder, [id], { id: next, sequence: run.sequences.get(next) });
    run.ids.splice(at, 1);
    run.sequences.delete(id);
    noteLeaving(state, 1);
  }
}
