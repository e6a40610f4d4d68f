import type { StorageAdapter } from '../contract/storage.js';
import { readHead, type InOrder, type StoredHead } from './head.js';
import { inOrderFirst } from './in-order.js';
import { CHECKPOINT_ID, checkpointKey, idOfCheckpointKey, runDir } from './keys.js';
import type { LangGraphPayload, StoredChannel } from './profile.js';
import type { Snapshot } from '../contract/snapshot.js';

/**
 * The newest checkpoint a saver wrote in a run, or read as the run's newest with its head (a
 * replica taking its turn on a thread): kept so the next put copies unchanged channels without a read.
 */
export interface LastCheckpoint {
  readonly id: string;
  readonly channels: Readonly<Record<string, StoredChannel>>;
  /** Canonical JSON of each of `channels`, so a channel carried over is not encoded again (absent for a checkpoint read). */
  readonly texts?: Readonly<Record<string, string>>;
}

/**
 * What a saver knows about one run (a thread's namespace) after listing it: every checkpoint
 * id in ascending order, the sequences it has learned, the highest sequence, and the version
 * of the run's head (head.ts). Later puts extend it without listing again, so a put costs the
 * same on the thousandth checkpoint as on the first; a put that finds the head moved (another
 * saver stored a checkpoint) learns the run again ({@link refreshRunState}).
 */
export interface RunState {
  readonly runId: string;
  /**
   * Checkpoint ids stored in the run, ascending (LangGraph's uuid6 ids sort by creation): every
   * one when the run was listed; with {@link unlistedUpTo}, those this saver met since.
   */
  readonly ids: string[];
  /**
   * Set when the run was learned from its head alone, not listed (a saver that keeps every
   * checkpoint needs no list of them, and listing a long thread costs what it holds): the head's
   * top id, at or below which the run may hold checkpoints `ids` does not name, so only a read
   * tells whether it holds one ({@link holdsId}). Undefined when `ids` is complete.
   */
  unlistedUpTo: string | undefined;
  /** Sequence of each checkpoint id, where known (reserved before its document is written). */
  readonly sequences: Map<string, number>;
  maxSequence: number;
  /** `maxSequence` when the run was listed: sequences above it were reserved by this saver. */
  loadedMaxSequence: number;
  /** Version of the run's head as this saver last read or wrote it; undefined when the run had none. */
  headVersion: string | undefined;
  /** The head's sequence at that version: a new checkpoint claims one above it. */
  headSequence: number;
  /** The checkpoint the head names (the newest put), or the newest listed in a run stored before heads. */
  headId: string | undefined;
  /** The head's top id at that version (see head.ts). */
  headTopId: string | undefined;
  /**
   * The head's in-order range at that version (see in-order.ts), the next claim's to extend; in a
   * listed run, only when the listing fits it (else the next claim starts a new one).
   */
  headInOrder: InOrder | undefined;
  last?: LastCheckpoint;
  /**
   * Writes keys this saver stored, by checkpoint sequence: pruning deletes them without
   * listing (a list costs what the store holds on some adapters), and they follow a checkpoint
   * whose claim another saver won (saver-writes.ts). Without `keepLast` only those of a
   * checkpoint not stored yet are kept (nothing prunes; only its writes may still move).
   */
  readonly writeKeys: Map<number, Set<string>>;
  /**
   * Writes keys the run's last listing found, by the sequence of a stored checkpoint (at or
   * below {@link writesListedUpTo}): pruning deletes them too, without listing again. Kept apart
   * from `writeKeys`, which holds only this saver's own.
   */
  listedWrites: Map<number, Set<string>>;
  /**
   * The highest sequence whose writes that listing saw (−1 when the run was not listed): a
   * sequence at or below it found in neither map had no writes when listed. Pruning lists the
   * writes folder of any other sequence.
   */
  writesListedUpTo: number;
  /**
   * Sequences above the newest checkpoint whose `parts/` folder already held writes when the
   * run was listed: a saver that died left them for checkpoints it never stored (LangGraph
   * saves a task's writes without waiting for the checkpoint before it). This saver reuses
   * those sequences, so pruning lists their folders and the leftovers go with the new checkpoint.
   */
  leftoverWrites: ReadonlySet<number>;
  /**
   * Puts of new checkpoints whose sequence is not claimed yet (their write step is under way):
   * a task's writes for such a checkpoint wait for it, since a lost claim moves the checkpoint
   * to another sequence, and its writes' folder with it.
   */
  readonly claiming: Map<string, Promise<unknown>>;
}

const PARTS_SEQUENCE = /\/parts\/(\d+)\//;

/** What one listing of a run (and a read of its head, else of its newest document) tells. */
interface Learned {
  readonly ids: string[];
  readonly maxSequence: number;
  readonly newest: { readonly id: string; readonly sequence: number } | undefined;
  readonly headVersion: string | undefined;
  readonly headTopId: string | undefined;
  readonly headInOrder: InOrder | undefined;
  /** Where the head's in-order range starts in `ids` (see `inOrderFirst`): the sequences of the ids from there on are known. */
  readonly inOrderFrom?: number;
  readonly leftoverWrites: Set<number>;
  /** Writes keys of the stored checkpoints' sequences (at or below `maxSequence`), when listed. */
  readonly writes?: Map<number, Set<string>>;
}

/**
 * Lists a run's checkpoint ids and writes folders — one listing of the run's folder, not one
 * of `history/` and one of `parts/` (on fs each listing walks the run's directories,
 * a new thread's first checkpoint waited for both), or takes the keys the caller read
 * (`listed`) — and reads its head, or, in a run stored before heads, its newest document's sequence.
 */
async function learnRun(
  storage: StorageAdapter,
  runId: string,
  readSequence: (key: string) => Promise<Snapshot<LangGraphPayload> | undefined>,
  known?: StoredHead,
  listed?: readonly string[],
): Promise<Learned> {
  const keys: RunKeys = { ids: [], writes: new Map(), hasHead: false };
  const prefix = `${runDir(runId)}/`;
  // Keys read already are taken in one loop: `for await` over them cost a microtask a key.
  if (listed) for (const key of listed) noteKey(keys, runId, prefix, key);
  else for await (const key of keysUnder(storage, prefix)) noteKey(keys, runId, prefix, key);
  const { ids, writes, hasHead } = keys;
  ids.sort(compareIds);
  const stored = !hasHead ? undefined : known && headCovers(known, ids, writes) ? known : await readHead(storage, runId);
  let newest: Learned['newest'];
  if (stored?.head) newest = { id: stored.head.checkpointId, sequence: stored.head.sequence };
  else if (ids.length > 0) {
    const snapshot = await readSequence(checkpointKey(runId, ids.at(-1)!));
    if (snapshot) newest = { id: snapshot.id, sequence: snapshot.sequence };
  }
  const maxSequence = newest?.sequence ?? 0;
  const leftoverWrites = new Set<number>();
  for (const sequence of writes.keys())
    if (sequence > maxSequence) {
      // Left by a saver that died before storing their checkpoint: this saver reuses the sequence,
      // and never takes those writes for its own checkpoint's.
      leftoverWrites.add(sequence);
      writes.delete(sequence);
    }
  const inOrderFrom = stored?.head ? inOrderFirst(ids, stored.head) : undefined;
  const head = stored?.head;
  const headInOrder = inOrderFrom === undefined ? undefined : head?.inOrder;
  return {
    ids,
    maxSequence,
    newest,
    headVersion: stored?.version,
    headTopId: head?.topId,
    headInOrder,
    inOrderFrom,
    leftoverWrites,
    writes,
  };
}

/** What a run's keys tell, as they are listed: its checkpoint ids, its writes keys by sequence, whether it has a head. */
interface RunKeys {
  readonly ids: string[];
  readonly writes: Map<number, Set<string>>;
  hasHead: boolean;
}

/** Takes one key under the run's folder (`prefix`) into what the run's keys tell. */
function noteKey(keys: RunKeys, runId: string, prefix: string, key: string): void {
  const rest = key.slice(prefix.length - 1);
  const id = idOfCheckpointKey(runId, key);
  if (id !== undefined) keys.ids.push(id);
  const parts = rest.startsWith('/parts/') ? PARTS_SEQUENCE.exec(rest) : null;
  if (parts) addWritesKey(keys.writes, Number(parts[1]), key);
  if (rest === '/head.json') keys.hasHead = true;
}

async function* keysUnder(storage: StorageAdapter, prefix: string): AsyncGenerator<string> {
  for await (const entry of storage.list(prefix)) yield entry.key;
}

/**
 * Whether a head read just before the run's listing (`known`) still tells what the listing shows:
 * no checkpoint listed above the greatest id the head records, and no writes folder above its
 * sequence. A put that moved the head in between shows as one or the other, and the head is read
 * again; one that would not (an old id put again, or a new id below the head's greatest from a
 * replica whose clock is behind, with no writes yet) is refused at this saver's next claim, which
 * is conditional on the head's version.
 */
function headCovers(known: StoredHead, ids: readonly string[], writes: ReadonlyMap<number, unknown>): boolean {
  const head = known.head;
  if (head?.topId === undefined) return false;
  const newestListed = ids.at(-1);
  if (newestListed !== undefined && compareIds(newestListed, head.topId) > 0) return false;
  for (const sequence of writes.keys()) if (sequence > head.sequence) return false;
  return true;
}

/** Adds a writes key stored under a listed sequence (at or below `writesListedUpTo`) after the listing. */
export function noteListedWrite(run: RunState, sequence: number, key: string): void {
  addWritesKey(run.listedWrites, sequence, key);
}

function addWritesKey(writes: Map<number, Set<string>>, sequence: number, key: string): void {
  const known = writes.get(sequence);
  if (known) known.add(key);
  else writes.set(sequence, new Set<string>().add(key));
}

/**
 * What the run's head alone tells (one read, whatever the run holds): its newest checkpoint,
 * sequence and version, and the greatest id it has held; no ids, and no leftover writes (only
 * pruning needs those). Undefined when the run has no head (new, or stored before heads) or a
 * head without a top id (written before it was kept): it is listed then.
 */
async function learnHead(storage: StorageAdapter, runId: string, known?: StoredHead): Promise<LearnedHead | undefined> {
  return learnedFromHead(known ?? (await readHead(storage, runId)));
}

type LearnedHead = Learned & { unlistedUpTo: string };

/** What a head read already tells (see {@link learnHead}): undefined when it has no top id. */
function learnedFromHead(stored: StoredHead | undefined): LearnedHead | undefined {
  if (stored?.head?.topId === undefined) return undefined;
  const { checkpointId: id, sequence, topId } = stored.head;
  return {
    ids: [],
    maxSequence: sequence,
    newest: { id, sequence },
    headVersion: stored.version,
    headTopId: topId,
    // Not checked against a listing (there is none): a saver that keeps every checkpoint only extends it.
    headInOrder: stored.head.inOrder,
    leftoverWrites: new Set(),
    unlistedUpTo: topId,
  };
}

/**
 * Learns a run into a new state: from its head alone unless `listIds` (a saver that prunes
 * needs every id), else by listing it (see {@link learnRun}). `known`: the run's head as the
 * caller just read it, not read again unless the listing shows a put made since; `listed`: the
 * run's keys as the caller read them with that head (one statement), not listed again.
 */
export async function loadRunState(
  storage: StorageAdapter,
  runId: string,
  readSequence: (key: string) => Promise<Snapshot<LangGraphPayload> | undefined>,
  listIds = true,
  known?: StoredHead,
  listed?: readonly string[],
): Promise<RunState> {
  const learned =
    (listIds ? undefined : await learnHead(storage, runId, known)) ?? (await learnRun(storage, runId, readSequence, known, listed));
  return runStateFrom(runId, learned);
}

/**
 * A run's state learned from a head just read (a saver that keeps every checkpoint, reading a
 * thread's newest checkpoint with its head): no further read. Undefined when the head has no top
 * id (the run must be listed, {@link loadRunState}).
 */
export function runStateFromHead(runId: string, stored: StoredHead): RunState | undefined {
  const learned = learnedFromHead(stored);
  return learned && runStateFrom(runId, learned);
}

function runStateFrom(runId: string, learned: Learned | LearnedHead): RunState {
  const sequences = new Map<string, number>();
  if (learned.newest) sequences.set(learned.newest.id, learned.newest.sequence);
  inferSequences(sequences, learned);
  return {
    runId,
    ids: learned.ids,
    unlistedUpTo: 'unlistedUpTo' in learned ? (learned.unlistedUpTo as string) : undefined,
    sequences,
    maxSequence: learned.maxSequence,
    loadedMaxSequence: learned.maxSequence,
    headVersion: learned.headVersion,
    headSequence: learned.maxSequence,
    headId: learned.newest?.id,
    headTopId: learned.headTopId,
    headInOrder: learned.headInOrder,
    writeKeys: new Map(),
    listedWrites: learned.writes ?? new Map(),
    writesListedUpTo: learned.writes ? learned.maxSequence : -1,
    leftoverWrites: learned.leftoverWrites,
    claiming: new Map(),
  };
}

/**
 * Learns a run again after another saver moved its head: the ids it holds now (from its head
 * alone unless `listIds`, as {@link loadRunState}), its head and highest sequence. What this saver learned of checkpoints still there (their sequences,
 * their writes' keys) stays true and is kept; reservations above the head stay reserved.
 */
export async function refreshRunState(
  storage: StorageAdapter,
  run: RunState,
  readSequence: (key: string) => Promise<Snapshot<LangGraphPayload> | undefined>,
  known?: StoredHead,
  listIds = true,
): Promise<void> {
  // A run learned from its head, or one whose saver needs no list of ids (`listIds` false), is learned
  // from its head (`known`: the head just read): the ids the saver met stay true.
  const fromHead = run.unlistedUpTo === undefined && listIds ? undefined : await learnHead(storage, run.runId, known);
  const learned = fromHead ?? (await learnRun(storage, run.runId, readSequence));
  if (fromHead) {
    if (run.unlistedUpTo === undefined || fromHead.unlistedUpTo > run.unlistedUpTo) run.unlistedUpTo = fromHead.unlistedUpTo;
  } else {
    run.unlistedUpTo = undefined;
    run.ids.length = 0;
    run.ids.push(...learned.ids);
    run.listedWrites = learned.writes ?? new Map();
    run.writesListedUpTo = learned.maxSequence;
  }
  if (learned.newest) run.sequences.set(learned.newest.id, learned.newest.sequence);
  run.maxSequence = Math.max(run.maxSequence, learned.maxSequence);
  run.loadedMaxSequence = Math.max(run.loadedMaxSequence, learned.maxSequence);
  run.headVersion = learned.headVersion;
  run.headSequence = learned.maxSequence;
  run.headId = learned.newest?.id;
  run.headTopId = learned.headTopId;
  run.headInOrder = inferSequences(run.sequences, learned) ? learned.headInOrder : undefined;
  run.leftoverWrites = new Set([...learned.leftoverWrites].filter((sequence) => sequence > run.maxSequence));
}

/**
 * Takes the sequences the head's in-order range gives the listed ids (see `inOrderFirst`) into
 * `sequences`. Returns false, taking none, when one of them differs from a sequence already
 * known: the range is then not trusted.
 */
function inferSequences(sequences: Map<string, number>, learned: Learned): boolean {
  const first = learned.inOrderFrom;
  const range = learned.headInOrder;
  if (first === undefined || range === undefined) return true;
  const { ids } = learned;
  for (let i = first; i < ids.length; i++) {
    const known = sequences.get(ids[i]!);
    if (known !== undefined && known !== range.fromSequence + i - first) return false;
  }
  for (let i = first; i < ids.length; i++) sequences.set(ids[i]!, range.fromSequence + i - first);
  return true;
}

/** Code-unit order, the order `list()` returns and LangGraph's ids sort in. */
export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Index of the first id not below `id` (binary search: a put stays O(log n) on a thread kept whole). */
export function lowerBound(ids: readonly string[], id: string): number {
  let lo = 0;
  let hi = ids.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid]! < id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** True when the run holds checkpoint `id`, as far as this saver knows. */
export function hasId(state: RunState, id: string): boolean {
  const ids = state.ids;
  // A new checkpoint's id is above every id held (uuid6 ids grow): no search of a long thread's ids, twice a put.
  if (ids.length === 0 || ids[ids.length - 1]! < id) return false;
  return ids[lowerBound(ids, id)] === id;
}

/** The greatest checkpoint id the run has held once `id` is stored: the head's `top_id` (see head.ts). */
export function topIdWith(state: RunState, id: string): string {
  let top = id;
  const last = state.ids.length > 0 ? state.ids[state.ids.length - 1]! : undefined;
  // A name another tool gave a history file may be no checkpoint id: the head's text carries the top id unescaped.
  if (last !== undefined && last > top && CHECKPOINT_ID.test(last)) top = last;
  if (state.unlistedUpTo !== undefined && state.unlistedUpTo > top) top = state.unlistedUpTo;
  return top;
}

/**
 * Whether the run holds checkpoint `id`: undefined when only a read of its document can tell
 * (a run learned from its head, an id at or below the head's that this saver has not met).
 */
export function holdsId(state: RunState, id: string): boolean | undefined {
  if (hasId(state, id)) return true;
  return state.unlistedUpTo !== undefined && id <= state.unlistedUpTo ? undefined : false;
}

/** Adds `id` to the ascending id list (at the end in the usual case: ids grow). */
export function insertId(state: RunState, id: string): void {
  const ids = state.ids;
  if (ids.length === 0 || ids[ids.length - 1]! < id) {
    ids.push(id);
    return;
  }
  const at = lowerBound(ids, id);
  if (ids[at] !== id) ids.splice(at, 0, id);
}

/** Drops the sequence reserved for a checkpoint not stored yet, so the next reservation claims one above the head. */
export function unreserve(state: RunState, id: string): number | undefined {
  const sequence = state.sequences.get(id);
  state.sequences.delete(id);
  return sequence;
}

/**
 * The sequence of checkpoint `id`: known, else reserved as the next one. Synchronous, so
 * a put and the writes LangGraph sends for the same checkpoint before that put started
 * (it chains puts but not writes) agree on one sequence.
 */
export function reserveSequence(state: RunState, id: string): number {
  let sequence = state.sequences.get(id);
  if (sequence === undefined) {
    sequence = ++state.maxSequence;
    state.sequences.set(id, sequence);
  }
  return sequence;
}
