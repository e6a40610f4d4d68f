import { assertOptionsArgument, assertStorageArgument } from '../contract/arguments.js';
import { systemClock, type Clock } from '../contract/clock.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { StorageAdapter } from '../contract/storage.js';
import { chunkKey } from '../codec/chunking.js';
import { addVersions, holdsChunks, markChunks, listStore, type ChunkListing } from '../snapshot-io/chunk-refs.js';
import { canBatch, deleteInBatches, intactCopy, sweepInBatches } from './chunk-sweep-batches.js';
import { moveSteps } from './chunk-sweep-move.js';
import { eachLimit } from './each-limit.js';
import { findingsOf, freeRemembered, freesByMemory, keepFindings, planRemembered, type RememberedPlan } from './chunk-sweep-remembered.js';
import { moveManyOf, moveOf } from '../contract/move.js';
import { forgetWritten } from '../snapshot-io/chunk-cut.js';
import { forgetChunks, hiddenKey, KNOWN_CHUNK_TTL_MS } from '../snapshot-io/chunk-store.js';

/** Options of {@link sweepChunks}. */
export interface ChunkSweepOptions {
  /**
   * How long a chunk stays hidden before it is deleted. It must exceed the time a writer
   * trusts that a chunk is stored (10 minutes) plus the time one checkpoint's write takes,
   * in any process: a document written by a writer that learned of a chunk before the sweep
   * hid it is then stored before the sweep looks again. @default 1 hour
   */
  readonly graceMs?: number;
  /** Gives the time hidden copies are stamped with and compared against. @default systemClock */
  readonly clock?: Clock;
  /** Decide and report, change nothing. @default false */
  readonly dryRun?: boolean;
  /**
   * This process sweeps the same adapter again (the automatic sweep does). On a store whose
   * every write makes a new version (`capabilities.versionsPerWrite`: memory, fs, PostgreSQL),
   * an unreferenced chunk is then not hidden: the sweep remembers it, in this process, with the
   * version it listed, and a sweep of this adapter at least `graceMs` later deletes it if it is
   * still unreferenced at that version. Left false, a sweep hides (a one-off `savepoint prune`
   * frees by hiding, as its memory ends with it). @default false
   */
  readonly rememberUnreferenced?: boolean;
}

/** What a {@link sweepChunks} did. */
export interface ChunkSweepReport {
  /** Chunks some document references. */
  readonly referenced: number;
  /** Chunks no document referenced, hidden (copied to `<key>.hidden-<ms>`, then removed from their key). */
  readonly hidden: readonly string[];
  /** Hidden chunks referenced again (a document written meanwhile), put back under their key. */
  readonly restored: readonly string[];
  /**
   * Keys deleted: hidden copies older than the grace period and still unreferenced, and chunks an
   * earlier sweep of this adapter found unreferenced at the same version at least the grace
   * period before (`rememberUnreferenced`).
   */
  readonly deleted: readonly string[];
  /**
   * With `rememberUnreferenced` on a store whose writes make new versions: the chunks found
   * unreferenced and left in place, remembered for a later sweep of this adapter.
   */
  readonly remembered?: readonly string[];
  /** Set when the sweep changed nothing because a chunk-tree node could not be read (what is below it is unknown). */
  readonly stopped?: string;
}

/** The default grace period of {@link sweepChunks}. */
export const CHUNK_SWEEP_GRACE_MS = 60 * 60 * 1000;

/** Puts a hidden chunk back under its key when its copy is intact; false when the copy is damaged. */
async function restore(storage: StorageAdapter, id: string, copyKey: string): Promise<boolean> {
  const bytes = await intactCopy(storage, id, copyKey);
  if (!bytes) return false;
  await storage.put(chunkKey(id), bytes);
  return true;
}

/** Hides chunk `id`: its bytes copied to a hidden key stamped `nowMs`, then its own key removed. */
async function hide(storage: StorageAdapter, id: string, key: string, nowMs: number): Promise<boolean> {
  const stored = await storage.get(key);
  if (!stored) return false;
  await storage.put(hiddenKey(id, nowMs), stored.bytes);
  await storage.delete(key);
  return true;
}

/**
 * Frees the chunks no document references (mark and sweep, in two steps as a lock-free
 * "fossil" collection): a chunk found unreferenced is first hidden — copied to
 * `chunks/<2>/<id>.hidden-<ms>`, then removed from its key — and its hidden copy is deleted by
 * a later sweep, once it is older than `graceMs` and still unreferenced. A document referencing
 * a hidden chunk still reads (the read path falls back to the copy) and makes the next sweep put
 * it back. Writers write a chunk again once their knowledge of it is 10 minutes old, so a
 * document written after a hide that reuses the chunk either wrote it anew or was written
 * within the grace period, before the later sweep marks.
 *
 * Crash safe at every step: a copy is durable before its chunk is removed, a chunk is put back
 * before its copy is removed, and nothing is deleted while any node of a chunk tree cannot be
 * read (`stopped`). A store that holds no chunk at all is left after a listing of `chunks/`
 * alone. Otherwise one listing finds the chunks and the documents, and the documents sorting
 * before the chunks are listed again after it (listStore), so a chunk written while the sweep
 * runs is listed only with the document it was written for (on a store whose batch is atomic).
 * A sweep run again over the same adapter reads only the documents whose version changed and
 * the tree nodes it has not read (markChunks' `remember`).
 *
 * With `rememberUnreferenced`, on a store whose every write makes a new version, nothing is
 * hidden: an unreferenced chunk is remembered with the version listed, and deleted at that
 * version by a sweep of this adapter at least `graceMs` later that finds it still unreferenced
 * (chunk-sweep-remembered.ts; the argument is in docs/storage.md, "Freeing without hiding").
 */
export async function sweepChunks(storage: StorageAdapter, options: ChunkSweepOptions = {}): Promise<ChunkSweepReport> {
  assertStorageArgument(storage, 'sweepChunks');
  assertOptionsArgument(options, 'sweepChunks');
  const clock = options.clock ?? systemClock;
  const graceMs = options.graceMs ?? CHUNK_SWEEP_GRACE_MS;
  if (!(Number.isFinite(graceMs) && graceMs >= 0))
    throw new CheckpointError('checkpoint_config_invalid', 'sweepChunks: graceMs must be a non-negative number of milliseconds');
  const nowMs = clock.now();
  // A store whose documents are all too small to be chunked (the usual LangGraph thread) holds none:
  // one listing of the chunks' prefix, not two of every key, tells (an automatic sweep runs every minute).
  if (!(await holdsChunks(storage))) return nothingToSweep();
  const { chunks, documents } = await listStore(storage);
  if (chunks.live.size === 0 && chunks.hidden.size === 0) return nothingToSweep();
  const marks = await markChunks(storage, { remember: true, documents });
  const report = { referenced: marks.referenced.size, hidden: [] as string[], restored: [] as string[], deleted: [] as string[] };
  if (marks.unreadable.length > 0) {
    // What is referenced is unknown: remembered chunks start over.
    if (!options.dryRun) keepFindings(storage, clock, new Map());
    const first = marks.unreadable[0]!;
    return { ...report, stopped: `${first.document}: ${first.reason}` };
  }
  const plan = planSweep(chunks, marks.referenced, nowMs, graceMs);
  const remembering = options.rememberUnreferenced === true && freesByMemory(storage);
  const earlier = remembering ? findingsOf(storage, clock) : undefined;
  // The versions a listing by name left out, looked up after it and before T1 (markedAtMs) — only of the unreferenced
  // chunks no earlier finding covers: a remembered chunk keeps the version found, which its delete is conditional on.
  if (earlier) await addVersions(storage, chunks, (id) => !marks.referenced.has(id) && !earlier.has(id));
  const times = { sweptAtMs: nowMs, markedAtMs: clock.now(), graceMs };
  const kept = earlier ? planRemembered(chunks, marks.referenced, earlier, times) : undefined;
  // Remembering, no chunk is hidden: the unreferenced ones are freed or remembered instead.
  const steps = kept ? { ...plan, hide: [] } : plan;
  if (options.dryRun) dryRunReport(steps, kept, report);
  else {
    // Kept before anything is done: a chunk this marking found referenced starts over, even if a step below fails
    // (and a sweep that hides leaves nothing remembered).
    keepFindings(storage, clock, kept?.findings ?? new Map());
    await applySweep(storage, steps, nowMs, report);
    if (kept) report.deleted.push(...(await freeRemembered(storage, kept.free)).map(chunkKey));
  }
  // Reports list chunks in one order whatever order the calls ended in.
  for (const list of [report.restored, report.deleted, report.hidden]) list.sort();
  if (!options.dryRun) {
    // This process no longer trusts what it hid or freed: a writer of it writes those chunks again.
    const gone = kept ? kept.free.map((c) => c.id) : report.hidden;
    forgetChunks(storage, gone);
    forgetWritten(storage, gone);
  }
  return kept ? { ...report, remembered: [...kept.findings.keys()].sort() } : report;
}

/** What a dry run reports: what the sweep would do. */
function dryRunReport(plan: SweepPlan, kept: RememberedPlan | undefined, out: SweepLists): void {
  out.restored.push(...plan.restore.map((r) => r.id));
  out.deleted.push(...plan.expired, ...(kept?.free.map((c) => c.key) ?? []));
  out.hidden.push(...plan.hide.map((h) => h.id));
}

/** Puts back, deletes expired copies and hides, by move, in batches or a call per chunk, as the store allows. */
async function applySweep(storage: StorageAdapter, plan: SweepPlan, nowMs: number, out: SweepLists): Promise<void> {
  const move = moveOf(storage);
  // By move, expired copies still go in batches where the store has them (one commit per 256, not a call each).
  if (move) await sweepStepByStep(storage, plan, moveSteps(storage, move, nowMs, moveManyOf(storage)), out, canBatch(storage));
  else if (canBatch(storage)) await sweepInBatches(storage, plan, nowMs, out);
  else await sweepStepByStep(storage, plan, copySteps(storage, nowMs), out);
}

const nothingToSweep = (): ChunkSweepReport => ({ referenced: 0, hidden: [], restored: [], deleted: [] });

/** What a sweep will do, decided from one listing and one marking (pure). */
export interface SweepPlan {
  /** Hidden chunks referenced again: put back (unless stored under their key too), then their copies removed. */
  readonly restore: readonly { readonly id: string; readonly copies: readonly string[]; readonly live: boolean }[];
  /** Hidden copies past the grace period and still unreferenced: deleted. */
  readonly expired: readonly string[];
  /** Chunks stored under their key that nothing references: hidden. */
  readonly hide: readonly { readonly id: string; readonly key: string }[];
}

/** Decides what a sweep does with each chunk of `chunks`, given the ids documents reference. */
export function planSweep(chunks: ChunkListing, referenced: ReadonlyMap<string, string>, nowMs: number, graceMs: number): SweepPlan {
  const restore: SweepPlan['restore'][number][] = [];
  const expired: string[] = [];
  for (const [id, copies] of chunks.hidden) {
    if (referenced.has(id)) restore.push({ id, copies: copies.map((c) => c.key), live: chunks.live.has(id) });
    else for (const c of copies) if (nowMs - c.atMs >= graceMs) expired.push(c.key);
  }
  const hide = [...chunks.live].filter(([id]) => !referenced.has(id)).map(([id, key]) => ({ id, key }));
  return { restore, expired, hide };
}

/** The lists a sweep reports, filled as it goes. */
export interface SweepLists {
  readonly hidden: string[];
  readonly restored: string[];
  readonly deleted: string[];
}

/** How one chunk is put back home (its copies removed) and hidden: each true when it was done. */
export interface ChunkSteps {
  restore(chunk: SweepPlan['restore'][number]): Promise<boolean>;
  hide(chunk: SweepPlan['hide'][number]): Promise<boolean>;
  /** Where the store hides many chunks in one call: hides `chunks`, answering the ids hidden. */
  hideMany?(chunks: SweepPlan['hide']): Promise<string[]>;
}

/**
 * Chunks hidden per `hideMany` call, one call at a time: on fs one journal record each, small
 * enough that a writer's commit queued behind it waits for little.
 */
const HIDES_PER_CALL = 64;

/** A sweep's steps as single calls, a few chunks at a time (stores without an atomic batch). */
async function sweepStepByStep(
  storage: StorageAdapter,
  plan: SweepPlan,
  steps: ChunkSteps,
  out: SweepLists,
  batched = false,
): Promise<void> {
  await eachLimit(plan.restore, async (chunk) => {
    if (await steps.restore(chunk)) out.restored.push(chunk.id);
  });
  if (batched) {
    await deleteInBatches(storage, plan.expired);
    out.deleted.push(...plan.expired);
  } else
    await eachLimit(plan.expired, async (key) => {
      await storage.delete(key);
      out.deleted.push(key);
    });
  if (steps.hideMany)
    for (let at = 0; at < plan.hide.length; at += HIDES_PER_CALL)
      out.hidden.push(...(await steps.hideMany(plan.hide.slice(at, at + HIDES_PER_CALL))));
  else
    await eachLimit(plan.hide, async (chunk) => {
      if (await steps.hide(chunk)) out.hidden.push(chunk.id);
    });
}

/** The steps by copy and delete: a copy put home, a chunk copied to its hidden key and removed. */
const copySteps = (storage: StorageAdapter, nowMs: number): ChunkSteps => ({
  restore: async ({ id, copies, live }) => {
    if (!live && !(await restore(storage, id, copies[0]!))) return false;
    for (const key of copies) await storage.delete(key);
    return true;
  },
  hide: ({ id, key }) => hideQuietly(storage, id, key, nowMs),
});

/** {@link hide}, where a chunk removed meanwhile (another sweep) is no error. */
async function hideQuietly(storage: StorageAdapter, id: string, key: string, nowMs: number): Promise<boolean> {
  try {
    return await hide(storage, id, key, nowMs);
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_not_found')) return false;
    throw err;
  }
}

/** The smallest grace period that keeps the rule of {@link sweepChunks} (what a writer trusts, plus a write's time). */
export const MIN_SAFE_GRACE_MS = KNOWN_CHUNK_TTL_MS + 5 * 60 * 1000;
