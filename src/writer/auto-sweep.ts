import type { Clock } from '../contract/clock.js';
import { CheckpointError, isCheckpointError, toCheckpointError } from '../contract/errors.js';
import { newUuidV4 } from '../contract/ids.js';
import type { StorageAdapter } from '../contract/storage.js';
import { CHUNK_SWEEP_GRACE_MS, sweepChunks, type ChunkSweepReport } from '../retention/chunk-sweep.js';
import { createRunLock, defaultIsProcessAlive, defaultLockIdentity } from './run-lock.js';

/**
 * The automatic chunk sweep: automatic retention (the writer's per-run bound, the saver's
 * `keepLast`) deletes checkpoints as it writes, and this frees the chunks only they referenced,
 * at a bounded rate. A sweep lists and marks the whole store, so it runs once enough
 * checkpoints were deleted that its cost, shared among them, stays a constant per checkpoint.
 */

/** Options of the automatic sweep (`sweepChunks` of `createWriter` and `SavepointSaver`). */
export interface AutoSweepOptions {
  /**
   * Checkpoints automatic retention deletes on a store (in this process) before a sweep of it
   * runs — or more: a sixteenth of the chunks its documents referenced at the last sweep, so that a sweep's
   * cost per deleted checkpoint does not grow with the store. @default 64
   */
  readonly afterDeleted?: number;
  /** Least time between the starts of two sweeps of one store by this process (by the writer's or saver's clock). @default 60000 */
  readonly minIntervalMs?: number;
  /** How long an unreferenced chunk stays hidden before it is deleted (`sweepChunks`'s `graceMs`). @default 1 hour */
  readonly graceMs?: number;
}

/** What one automatic sweep did: its report, or the error that ended it (nothing is lost: the next sweep goes on). */
export type AutoSweepOutcome =
  { readonly ok: true; readonly report: ChunkSweepReport } | { readonly ok: false; readonly error: CheckpointError };

/** The automatic sweep as one writer or saver runs it: its options resolved, and its clock. */
export interface AutoSweep {
  readonly afterDeleted: number;
  readonly minIntervalMs: number;
  readonly graceMs: number;
  readonly clock: Clock;
}

/** What this process knows of the sweeps of one store, shared by every writer and saver on it. */
interface StoreSweeps {
  /** Checkpoints deleted by automatic retention since the last sweep started. */
  deleted: number;
  /** When the last sweep started (clock ms); undefined before the first. */
  startedAtMs: number | undefined;
  /** Chunks documents referenced at the last sweep: what the store holds once hidden copies are gone. */
  chunks: number;
  /** The sweep in flight: one at a time per store. */
  running: Promise<void> | undefined;
}

const stores = new WeakMap<StorageAdapter, StoreSweeps>();

function sweepsOf(storage: StorageAdapter): StoreSweeps {
  let s = stores.get(storage);
  if (!s) stores.set(storage, (s = { deleted: 0, startedAtMs: undefined, chunks: 0, running: undefined }));
  return s;
}

/** Chunks per deleted checkpoint a sweep may cost before the threshold rises (see {@link AutoSweepOptions.afterDeleted}). */
const CHUNKS_PER_DELETE = 16;

/**
 * How many thresholds' worth of deletes may pile up while a sweep runs before a writer waits for
 * it: what a sweep leaves behind stays bounded even where writing outpaces sweeping.
 */
const BEHIND_LIMIT = 4;

/** Deleted checkpoints that make a sweep due: `afterDeleted`, or more on a store whose last sweep found many chunks. */
const thresholdOf = (s: Readonly<StoreSweeps>, sweep: AutoSweep): number =>
  Math.max(sweep.afterDeleted, Math.ceil(s.chunks / CHUNKS_PER_DELETE));

/** Whether a sweep is due (pure): none running, enough checkpoints deleted, and the interval since the last start over. */
function sweepDue(s: Readonly<StoreSweeps>, sweep: AutoSweep, nowMs: number): boolean {
  if (s.running || s.deleted < thresholdOf(s, sweep)) return false;
  return s.startedAtMs === undefined || nowMs - s.startedAtMs >= sweep.minIntervalMs;
}

/**
 * Counts `count` checkpoints automatic retention deleted from `storage`, and starts a sweep
 * in the background when one is due. Never throws: a sweep's error goes to `onOutcome`, not to
 * the checkpoint that happened to start it. Returns the running sweep when deletes have got
 * {@link BEHIND_LIMIT} thresholds ahead of it (a writer awaiting it before its next group holds
 * the garbage bounded), else undefined.
 */
export function noteDeleted(
  storage: StorageAdapter,
  sweep: AutoSweep,
  count: number,
  onOutcome: (outcome: AutoSweepOutcome) => void,
): Promise<void> | undefined {
  const s = sweepsOf(storage);
  s.deleted += count;
  const nowMs = sweep.clock.now();
  if (s.running) return s.deleted >= BEHIND_LIMIT * thresholdOf(s, sweep) ? s.running : undefined;
  if (!sweepDue(s, sweep, nowMs)) return undefined;
  s.deleted = 0;
  s.startedAtMs = nowMs;
  s.running = runSweep(storage, sweep, s, onOutcome);
  return undefined;
}

/** The store-wide lease an automatic sweep holds while it runs, so that of several processes one sweeps at a time. */
export const SWEEP_LOCK_KEY = '.savepoint-sweep-lock.json';
/** How long the sweep's lease lasts without renewal (renewed every third of it while the sweep runs). */
const SWEEP_LEASE_MS = 5 * 60 * 1000;

/**
 * Runs `sweepChunks` under the store-wide sweep lease where the store's conditional writes hold
 * across processes (fs, PostgreSQL, GitHub); undefined when another process holds it (this one
 * skips its turn: that sweep frees the same chunks). A sweep is safe without the lease; it only
 * keeps processes from doing the same work twice.
 */
async function sweepUnderLease(storage: StorageAdapter, sweep: AutoSweep): Promise<ChunkSweepReport | undefined> {
  if (!storage.capabilities.crossProcessConditional)
    return sweepChunks(storage, { clock: sweep.clock, graceMs: sweep.graceMs, rememberUnreferenced: true });
  const lock = createRunLock({
    storage,
    key: SWEEP_LOCK_KEY,
    runId: 'chunk-sweep',
    owner: newUuidV4(),
    identity: defaultLockIdentity(),
    leaseMs: SWEEP_LEASE_MS,
    clock: sweep.clock,
    isProcessAlive: defaultIsProcessAlive,
    takeover: 'stale',
    atomic: false,
  });
  try {
    await lock.acquire();
  } catch (err) {
    if (isCheckpointError(err, 'checkpoint_run_locked')) return undefined;
    throw err;
  }
  try {
    return await sweepChunks(storage, { clock: sweep.clock, graceMs: sweep.graceMs, rememberUnreferenced: true });
  } finally {
    await lock.release().catch(() => undefined); // a lease left behind ends by itself
  }
}

async function runSweep(
  storage: StorageAdapter,
  sweep: AutoSweep,
  s: StoreSweeps,
  onOutcome: (outcome: AutoSweepOutcome) => void,
): Promise<void> {
  let outcome: AutoSweepOutcome | undefined;
  try {
    const report = await sweepUnderLease(storage, sweep);
    if (report) {
      s.chunks = report.referenced;
      outcome = { ok: true, report };
    }
  } catch (raw) {
    outcome = { ok: false, error: toCheckpointError(raw, 'checkpoint_storage_unavailable', 'the automatic chunk sweep failed') };
  } finally {
    s.running = undefined;
  }
  if (!outcome) return;
  try {
    onOutcome(outcome);
  } catch {
    // A listener's error must not become an unhandled rejection of a sweep nobody awaits.
  }
}

/** Resolves once no automatic sweep of `storage` is running in this process (a writer's `close()`, tests). */
export async function sweepSettled(storage: StorageAdapter): Promise<void> {
  for (let s = stores.get(storage); s?.running;) await s.running;
}

/** Checks the `sweepChunks` option of `who` and resolves its defaults; undefined when it is `false`. */
export function resolveAutoSweep(option: boolean | AutoSweepOptions | undefined, who: string, clock: Clock): AutoSweep | undefined {
  if (option === false) return undefined;
  if (option !== undefined && option !== true && (typeof option !== 'object' || option === null || Array.isArray(option)))
    throw new CheckpointError('checkpoint_config_invalid', `${who}: sweepChunks must be a boolean or an options object`);
  const given = typeof option === 'object' ? option : {};
  const afterDeleted = given.afterDeleted ?? 64;
  const minIntervalMs = given.minIntervalMs ?? 60_000;
  const graceMs = given.graceMs ?? CHUNK_SWEEP_GRACE_MS;
  if (!(Number.isInteger(afterDeleted) && afterDeleted >= 1))
    throw new CheckpointError('checkpoint_config_invalid', `${who}: sweepChunks.afterDeleted must be a positive integer`);
  for (const [name, value] of [
    ['minIntervalMs', minIntervalMs],
    ['graceMs', graceMs],
  ] as const)
    if (!(typeof value === 'number' && Number.isFinite(value) && value >= 0))
      throw new CheckpointError('checkpoint_config_invalid', `${who}: sweepChunks.${name} must be a non-negative number of milliseconds`);
  return { afterDeleted, minIntervalMs, graceMs, clock };
}
