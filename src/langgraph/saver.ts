import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointTuple,
  type DeltaChannelHistory,
  type PendingWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import { systemClock, type Clock } from '../contract/clock.js';
import { CheckpointError } from '../contract/errors.js';
import { deleteRun } from '../runs/delete-run.js';
import { declareReadersOf, type StorageAdapter } from '../contract/storage.js';
import { LANGGRAPH_ROOT, headKey, segmentOf, threadSegmentOfRun } from './keys.js';
import { langGraphProfile } from './profile.js';
import { deltaChannelHistory } from './saver-delta.js';
import { listCheckpointTuples } from './saver-list.js';
import { getCheckpointTuple } from './saver-reads.js';
import { putCheckpoint } from './saver-put.js';
import { forgetRun } from './saver-runs.js';
import { createSaverState, type SaverState } from './saver-state.js';
import { putTaskWrites } from './saver-writes.js';
import { enableAutoSweep } from './saver-retention.js';
import { resolveAutoSweep, type AutoSweepOptions, type AutoSweepOutcome } from '../writer/auto-sweep.js';

/** Options of {@link SavepointSaver}. */
export interface SavepointSaverOptions {
  /** Where checkpoints go: `memoryStorage()`, `fsStorage({ dir })`, `githubStorage(…)`, or your own adapter. */
  readonly storage: StorageAdapter;
  /** LangGraph serializer. @default LangGraph's `JsonPlusSerializer` */
  readonly serde?: SerializerProtocol;
  /**
   * Checkpoints kept per thread namespace: after each put, the oldest beyond this many are
   * deleted with their pending writes (the newest is never deleted). `false` keeps every
   * checkpoint, as LangGraph's own savers do (time travel and forks reach any of them).
   * @default false
   */
  readonly keepLast?: number | false;
  /** Clock for the documents' `created_at`. @default systemClock */
  readonly clock?: Clock;
  /**
   * Store checkpoint documents of 16 KiB and more as content chunks shared by every checkpoint
   * and thread of the store holding the same bytes (docs/storage.md, "Content chunks"): a
   * thread's whole history then costs about what its changes cost. @default true
   */
  readonly dedup?: boolean;
  /**
   * With `keepLast` and content chunks on: free the chunks only the deleted checkpoints referenced,
   * by a chunk sweep of the whole store in the background once enough checkpoints were deleted
   * (`afterDeleted`, `minIntervalMs`, `graceMs`: docs/storage.md, "Content chunks"). A put never
   * fails because of a sweep. `false` leaves chunks to `runRetention` and `savepoint prune`.
   * @default true
   */
  readonly sweepChunks?: boolean | AutoSweepOptions;
  /**
   * Hears how each automatic sweep ended: its report, or its error (the next sweep goes on).
   * Without it, a failed sweep is reported once per saver on the console by its reason code.
   */
  readonly onSweep?: (outcome: AutoSweepOutcome) => void;
}

/** Without an `onSweep` listener: a failed sweep is told on the console once, by its reason code alone (no key, no message). */
function warnOnce(): (outcome: AutoSweepOutcome) => void {
  let told = false;
  return (outcome) => {
    if (outcome.ok || told) return;
    told = true;
    console.warn(`savepoint: an automatic chunk sweep failed (${outcome.error.reasonCode}); the next one goes on`);
  };
}

/**
 * A LangGraph.js checkpointer over any savepoint `StorageAdapter`: `graph.compile({ checkpointer: new SavepointSaver({ storage }) })`.
 *
 * Each (thread, namespace) is a savepoint run under `langgraph/<run_id>/`; each checkpoint
 * one sealed (sha256) document `history/<checkpoint_id>.json` holding the serializer's
 * output as it is; each task's pending writes a sealed part file that retention keeps and
 * deletes with its checkpoint. A put writes one document (plus the changed channels' bytes
 * in it) and never rewrites anything that grows with the thread. Every checkpoint is kept,
 * as LangGraph's savers keep them; `keepLast: 50` bounds each thread; `runRetention({ profile: langGraphProfile })` and
 * `savepoint verify|ls|prune --profile langgraph` work on the same store.
 *
 * Any number of savers may serve one thread (replicas of a service, taking turns or at once):
 * each new checkpoint claims the next sequence by replacing the run's head on the version the
 * saver last saw, so sequences stay unique and increasing, `getTuple` returns the checkpoint
 * put last, and `keepLast` counts the thread's checkpoints, not one saver's.
 *
 * @example
 * ```ts
 * import { SavepointSaver } from 'savepoint/langgraph';
 * import { fsStorage } from 'savepoint/fs';
 *
 * const checkpointer = new SavepointSaver({ storage: fsStorage({ dir: '.checkpoints' }) });
 * const app = graph.compile({ checkpointer });
 * await app.invoke(input, { configurable: { thread_id: 'order-42' } });
 * ```
 */
export class SavepointSaver extends BaseCheckpointSaver {
  readonly storage: StorageAdapter;
  readonly keepLast: number | false;
  /** What the saver knows between calls (see saver-state.ts); its steps are functions over it. */
  private readonly state: SaverState;

  constructor(options: SavepointSaverOptions) {
    super(options?.serde);
    if (!options || typeof options.storage?.get !== 'function') {
      throw new CheckpointError('checkpoint_config_invalid', 'SavepointSaver: options.storage must be a StorageAdapter');
    }
    const keepLast = options.keepLast ?? false;
    if (keepLast !== false && !(Number.isInteger(keepLast) && keepLast >= 1)) {
      throw new CheckpointError('checkpoint_config_invalid', 'SavepointSaver: keepLast must be a positive integer or false', {
        details: { keepLast: String(keepLast) },
      });
    }
    if (options.dedup !== undefined && typeof options.dedup !== 'boolean')
      throw new CheckpointError('checkpoint_config_invalid', 'SavepointSaver: dedup must be a boolean');
    const clock = options.clock ?? systemClock;
    const sweep = resolveAutoSweep(options.sweepChunks, 'SavepointSaver', clock);
    if (options.onSweep !== undefined && typeof options.onSweep !== 'function')
      throw new CheckpointError('checkpoint_config_invalid', 'SavepointSaver: onSweep must be a function');
    // Once every option is checked (a refused saver fixes nothing), and before anything reads its
    // capabilities: only savepoint reads a saver's documents (a new fs directory packs them).
    declareReadersOf(options.storage, 'savepoint');
    this.storage = options.storage;
    this.keepLast = keepLast;
    this.state = createSaverState(this, options.storage, keepLast, clock, options.dedup ?? true);
    if (sweep && keepLast !== false && this.state.dedup) enableAutoSweep(this.state, sweep, options.onSweep ?? warnOnce());
  }

  put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    return putCheckpoint(this.state, config, checkpoint, metadata, newVersions);
  }

  putWrites(config: RunnableConfig, writes: PendingWrite[], taskId: string, taskPath?: string): Promise<void> {
    return putTaskWrites(this.state, config, writes, taskId, taskPath);
  }

  getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    return getCheckpointTuple(this.state, config);
  }

  list(config: RunnableConfig, options?: CheckpointListOptions): AsyncGenerator<CheckpointTuple> {
    return listCheckpointTuples(this.state, config, options);
  }

  /**
   * The writes and seed that rebuild `DeltaChannel` values (LangGraph's contract): one listing
   * of the thread's namespace and one read per ancestor, instead of a `getTuple` per ancestor.
   */
  override getDeltaChannelHistory(options: { config: RunnableConfig; channels: string[] }): Promise<Record<string, DeltaChannelHistory>> {
    return deltaChannelHistory(this.state, options?.config ?? {}, options?.channels ?? []);
  }

  async deleteThread(threadId: string): Promise<void> {
    if (typeof threadId !== 'string' && typeof threadId !== 'number')
      throw new CheckpointError('checkpoint_config_invalid', 'deleteThread: threadId must be a string');
    const segment = await segmentOf(String(threadId), this.storage);
    const runIds = new Set<string>();
    for await (const entry of this.storage.list(`${LANGGRAPH_ROOT}/${segment}`)) {
      const runId = entry.key.split('/')[1]!;
      if (threadSegmentOfRun(runId) === segment) runIds.add(runId);
    }
    for (const runId of runIds) {
      forgetRun(this.state, runId);
      await deleteRun({ storage: this.storage, profile: langGraphProfile, runId });
      // The head is no file of the profile's layout: it goes last, so a put racing the delete still finds it moved.
      await this.storage.delete(headKey(runId));
      forgetRun(this.state, runId);
    }
  }
}
