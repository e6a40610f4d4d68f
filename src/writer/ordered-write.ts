import { CheckpointError, isCheckpointError } from '../model/errors.js';
import { createRunIndexEncoder, decodeRunIndex, emptyRunIndex, mergeRunIndex, pruneRunIndex, type RunIndex, type RunIndexEncoder, type RunIndexEntry } from '../model/run-index.js';
import type { BatchOperation, StorageAdapter } from '../storage/adapter.js';
import { isPendingResult } from '../storage/buffered.js';
import type { WriteFence } from './run-lock.js';

/** One key to create (history entry, part file, batch file): create-only, idempotent on equal bytes. */
export interface CreateOp {
  readonly key: string;
  readonly bytes: Uint8Array;
}

/** One key to replace only if it still holds `ifVersion` (rewrite of the still-open snapshot). */
export interface ReplaceOp {
  readonly key: string;
  readonly bytes: Uint8Array;
  readonly ifVersion: string;
}

/** Everything one group commit stores, in the order it is stored. */
export interface WritePlan {
  /** Part files first, then history entries (or one batch file) in sequence order. */
  readonly creates: readonly CreateOp[];
  /** Rewrites of the open snapshot's stored entry, adding coalesced triggers to its `source_details`. */
  readonly replaces: readonly ReplaceOp[];
  /** The new `latest` document. */
  readonly latest?: { readonly key: string; readonly bytes: Uint8Array };
  /**
   * Entries to merge into the run index (conditional replace), and the `file_path`s of
   * entries to drop from it (the writer's automatic per-run retention; their files are
   * deleted only after this plan is durable).
   */
  readonly index?: { readonly key: string; readonly entries: readonly RunIndexEntry[]; readonly remove?: ReadonlySet<string> };
  /**
   * Keys to delete in the same atomic batch, after the index that no longer lists them: the
   * files of snapshots the writer's per-run retention lets go. Only with an atomic batch (one
   * commit instead of one more per checkpoint); the sequential path never receives them — the
   * writer deletes those after the plan is durable.
   */
  readonly deletes?: readonly string[];
}

/** The writer's cached copy of the run index and the version it was read or written at. */
export interface IndexState {
  doc?: RunIndex;
  version?: string;
  /** Reuses the bytes of the entries the previous rewrite shared (see createRunIndexEncoder). */
  encoder?: RunIndexEncoder;
}

/** What a successful {@link executeWrite} reports. */
export interface WriteReport {
  /** Version of every key written. */
  readonly versions: ReadonlyMap<string, string>;
  /** True when any put was accepted into the adapter's local durable-later queue. */
  readonly pending: boolean;
  readonly mode: 'sequential' | 'batch';
}

const bytesEqual = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((v, i) => v === b[i]);

const isConflict = (err: unknown): boolean => isCheckpointError(err, 'checkpoint_conflict');

function foreign(key: string): CheckpointError {
  return new CheckpointError('checkpoint_conflict', `${key} holds content this writer did not write (another writer on the run?)`, { details: { key } });
}

/**
 * After a conditional write lost, tells whether the key already holds exactly our bytes —
 * an earlier attempt that landed although it reported failure ("timed out but landed").
 * Returns its version then; throws `checkpoint_conflict` when it holds something else.
 */
async function landedVersion(storage: StorageAdapter, key: string, bytes: Uint8Array): Promise<string | undefined> {
  const current = await storage.get(key);
  if (!current) return undefined;
  if (bytesEqual(current.bytes, bytes)) return current.version;
  throw foreign(key);
}

async function readIndex(storage: StorageAdapter, key: string, state: IndexState): Promise<void> {
  const current = await storage.get(key);
  state.version = current?.version;
  state.doc = undefined;
  if (current) {
    try {
      state.doc = decodeRunIndex(current.bytes, key);
    } catch {
      // A corrupt index is replaced (conditionally, on its version) by one rebuilt from our entries.
    }
  }
}

function mergedIndex(runId: string, state: IndexState, plan: NonNullable<WritePlan['index']>, now: string): { doc: RunIndex; bytes: Uint8Array } {
  let base = state.doc ?? emptyRunIndex(runId, now);
  let entries = plan.entries;
  const remove = plan.remove;
  if (remove && remove.size > 0) {
    base = pruneRunIndex(base, remove, now);
    // Entries re-indexed after a crash (unindexed files) may be the very ones being pruned.
    entries = entries.filter((e) => !remove.has(e.file_path));
  }
  const doc = mergeRunIndex(base, entries, now);
  return { doc, bytes: (state.encoder ??= createRunIndexEncoder()).encode(doc) };
}

/**
 * Stores a group in the crash-safe order: history entries create-only (parts before the
 * document that references them), then the rewrite of the open snapshot, then `latest`
 * (replace), then the index (conditional replace, merged with `mergeRunIndex` and retried
 * on a conflict). A crash between any two calls leaves the previous `latest` intact or the
 * new one complete, and every acknowledged snapshot in history.
 *
 * With `useBatch` (adapter declares `atomicBatch`), the same operations go in one `batch()`.
 * Every step is idempotent, so the whole plan can be retried after an ambiguous failure.
 *
 * `fence` (the run lease, see run-lock.ts) adds its `check` to the batch, and is confirmed
 * after a batch conflict and, on the sequential path, before `latest` is replaced.
 */
export async function executeWrite(
  storage: StorageAdapter,
  runId: string,
  plan: WritePlan,
  index: IndexState,
  now: () => string,
  useBatch: boolean,
  fence?: WriteFence,
): Promise<WriteReport> {
  const versions = new Map<string, string>();
  let pending = false;

  if (useBatch && storage.batch) {
    let creates = plan.creates;
    let replaces = plan.replaces;
    for (let round = 0; ; round++) {
      const ops: BatchOperation[] = [];
      for (const c of creates) ops.push({ type: 'put', key: c.key, bytes: c.bytes, ifAbsent: true });
      for (const r of replaces) ops.push({ type: 'put', key: r.key, bytes: r.bytes, ifVersion: r.ifVersion });
      if (plan.latest) ops.push({ type: 'put', key: plan.latest.key, bytes: plan.latest.bytes });
      if (fence?.check) ops.push(fence.check);
      let merged: { doc: RunIndex; bytes: Uint8Array } | undefined;
      if (plan.index) {
        merged = mergedIndex(runId, index, plan.index, now());
        ops.push({ type: 'put', key: plan.index.key, bytes: merged.bytes, ...(index.version !== undefined ? { ifVersion: index.version } : { ifAbsent: true }) });
      }
      for (const key of plan.deletes ?? []) ops.push({ type: 'delete', key });
      try {
        const outcomes = ops.length > 0 ? await storage.batch(ops) : [];
        for (const o of outcomes) if (o.type === 'put') versions.set(o.key, o.version);
        if (plan.index && merged) {
          index.doc = merged.doc;
          index.version = versions.get(plan.index.key);
        }
        // An adapter with a durable-later queue (githubStorage under an exhausted rate limit) marks queued puts.
        let queued = false;
        for (const o of outcomes) if (o.type === 'put' && isPendingResult(o)) queued = true;
        return { versions, pending: queued, mode: 'batch' };
      } catch (err) {
        if (!isConflict(err) || round >= 4) throw err;
        await fence?.confirm(); // the lease's check lost: checkpoint_run_locked, nothing to reconcile
        // Find out which condition lost: keys an earlier attempt already stored drop out,
        // foreign content is a real conflict, a moved index is re-read and merged again.
        const keptCreates: CreateOp[] = [];
        for (const c of creates) {
          const landed = await landedVersion(storage, c.key, c.bytes);
          if (landed === undefined) keptCreates.push(c);
          else versions.set(c.key, landed);
        }
        const keptReplaces: ReplaceOp[] = [];
        for (const r of replaces) {
          const current = await storage.get(r.key);
          if (current && bytesEqual(current.bytes, r.bytes)) versions.set(r.key, current.version);
          else if (!current || current.version !== r.ifVersion) throw foreign(r.key);
          else keptReplaces.push(r);
        }
        creates = keptCreates;
        replaces = keptReplaces;
        if (plan.index) await readIndex(storage, plan.index.key, index);
      }
    }
  }

  if (plan.deletes && plan.deletes.length > 0) throw new CheckpointError('checkpoint_config_invalid', 'deletes in a write plan need an atomic batch');
  for (const c of plan.creates) {
    try {
      const r = await storage.put(c.key, c.bytes, { ifAbsent: true });
      versions.set(c.key, r.version);
      pending ||= isPendingResult(r);
    } catch (err) {
      if (!isConflict(err)) throw err;
      const landed = await landedVersion(storage, c.key, c.bytes);
      if (landed === undefined) throw err;
      versions.set(c.key, landed);
    }
  }
  for (const r of plan.replaces) {
    try {
      const res = await storage.put(r.key, r.bytes, { ifVersion: r.ifVersion });
      versions.set(r.key, res.version);
      pending ||= isPendingResult(res);
    } catch (err) {
      if (!isConflict(err)) throw err;
      const landed = await landedVersion(storage, r.key, r.bytes);
      if (landed === undefined) throw err;
      versions.set(r.key, landed);
    }
  }
  // A writer that lost its lease while creating history must not replace another writer's latest.
  await fence?.confirm();
  if (plan.latest) {
    const r = await storage.put(plan.latest.key, plan.latest.bytes);
    versions.set(plan.latest.key, r.version);
    pending ||= isPendingResult(r);
  }
  if (plan.index) {
    for (let round = 0; ; round++) {
      const merged = mergedIndex(runId, index, plan.index, now());
      try {
        const r = await storage.put(plan.index.key, merged.bytes, index.version !== undefined ? { ifVersion: index.version } : { ifAbsent: true });
        index.doc = merged.doc;
        index.version = r.version;
        versions.set(plan.index.key, r.version);
        pending ||= isPendingResult(r);
        break;
      } catch (err) {
        if (!isConflict(err) || round >= 4) throw err;
        await readIndex(storage, plan.index.key, index);
      }
    }
  }
  return { versions, pending, mode: 'sequential' };
}
