import { canonicalJson } from '../codec/canonical-json.js';
import { type JsonValue } from '../contract/json.js';
import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { Profile } from '../contract/profile.js';
import { readSnapshot } from '../snapshot-io/read-snapshot.js';
import { collectRunFiles, type ClassifiedEntry } from '../snapshot-io/run-files.js';
import type { StorageAdapter } from '../contract/storage.js';

/** Which snapshots {@link listRunSnapshots} returns. */
export interface ListRunSnapshotsOptions<P = unknown> {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  readonly runId: string;
  /** Only snapshots older (lower sequence) than this one: a sequence number or `{ id }`. */
  readonly before?: number | { readonly id: string };
  /** At most this many. */
  readonly limit?: number;
  /**
   * Only snapshots whose `metadata` holds every given key with an equal (JSON-equal) value,
   * or for which the function returns true.
   */
  readonly filter?: Readonly<Record<string, JsonValue>> | ((snapshot: Snapshot<P>) => boolean);
}

function matches<P>(snapshot: Snapshot<P>, filter: ListRunSnapshotsOptions<P>['filter']): boolean {
  if (filter === undefined) return true;
  if (typeof filter === 'function') return filter(snapshot);
  const metadata = snapshot.metadata ?? {};
  return Object.entries(filter).every(([k, v]) => Object.hasOwn(metadata, k) && canonicalJson(metadata[k]) === canonicalJson(v));
}

/** Reads the snapshots stored under `entries`, skipping unreadable files (`savepoint verify` reports them) but not storage failures. */
async function collectSnapshots<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  entries: ClassifiedEntry[],
): Promise<Snapshot<P>[]> {
  const out: Snapshot<P>[] = [];
  for (const entry of entries) {
    try {
      const s = await readSnapshot(storage, profile, entry.key);
      if (s && s.runId === runId) out.push(s);
    } catch (err) {
      if (!isCheckpointError(err) || err.reasonCode === 'checkpoint_storage_unavailable' || err.reasonCode === 'checkpoint_rate_limited')
        throw err;
    }
  }
  return out;
}

/**
 * Lists one run's snapshots, newest (highest sequence) first, with an optional metadata
 * filter, `before` bound and `limit` — the run-history API LangGraph's `list()` needs, for
 * every profile. The snapshots are those the run's history entries hold (else its `latest`);
 * snapshots held only in batch files are not listed. When the layout names history entries
 * by sequence, documents are read lazily, only as far as `limit` needs; otherwise each
 * history entry is read once to learn its sequence.
 *
 * @example
 * ```ts
 * for await (const s of listRunSnapshots({ storage, profile: defaultProfile, runId: 'run-1', limit: 5, filter: { stage: 'review' } })) {
 *   console.log(s.sequence, s.createdAt);
 * }
 * ```
 */
export async function* listRunSnapshots<P>(options: ListRunSnapshotsOptions<P>): AsyncGenerator<Snapshot<P>> {
  const { storage, profile, runId, before, limit, filter } = options ?? ({} as ListRunSnapshotsOptions<P>);
  if (!storage || !profile) throw new CheckpointError('checkpoint_config_invalid', 'listRunSnapshots: storage and profile are required');
  profile.assertRunId(runId);
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0))
    throw new CheckpointError('checkpoint_config_invalid', 'listRunSnapshots: limit must be a non-negative integer');
  if (before !== undefined && typeof before !== 'number' && typeof before?.id !== 'string') {
    throw new CheckpointError('checkpoint_config_invalid', 'listRunSnapshots: before must be a sequence number or { id }');
  }
  const run = (await collectRunFiles(storage, profile as Profile<unknown>, runId)).runs.get(runId);
  if (!run) return;
  const entries = run.history.filter((e) => !e.key.endsWith('.gz') || !run.history.some((o) => o.key === e.key.slice(0, -3)));
  const bySequence = entries.every((e) => e.info.sequence !== undefined);
  let snapshots: Snapshot<P>[] | undefined;
  if (!bySequence || entries.length === 0 || typeof before === 'object') {
    snapshots = await collectSnapshots(storage, profile, runId, entries.length > 0 ? entries : run.latest ? [run.latest] : []);
    snapshots.sort((a, b) => b.sequence - a.sequence);
  }
  const beforeSequence = typeof before === 'number' ? before : before ? snapshots!.find((s) => s.id === before.id)?.sequence : undefined;
  if (typeof before === 'object' && beforeSequence === undefined) return;
  let left = limit ?? Infinity;
  if (left <= 0) return;
  const accept = (s: Snapshot<P>): boolean => (beforeSequence === undefined || s.sequence < beforeSequence) && matches(s, filter);
  if (snapshots) {
    for (const s of snapshots) {
      if (!accept(s)) continue;
      yield s;
      if (--left <= 0) return;
    }
    return;
  }
  for (const entry of [...entries].sort((a, b) => b.info.sequence! - a.info.sequence!)) {
    if (beforeSequence !== undefined && entry.info.sequence! >= beforeSequence) continue;
    const [s] = await collectSnapshots(storage, profile, runId, [entry]);
    if (!s || !accept(s)) continue;
    yield s;
    if (--left <= 0) return;
  }
}

/** Options of {@link getRunSnapshot}: the run and either the snapshot's `id` or its `sequence`. */
export type GetRunSnapshotOptions<P = unknown> = {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  readonly runId: string;
} & ({ readonly id: string; readonly sequence?: undefined } | { readonly sequence: number; readonly id?: undefined });

/**
 * One snapshot of a run by id or by sequence, verified like every read; `undefined` when
 * the run holds no readable snapshot with it.
 *
 * @example
 * ```ts
 * const third = await getRunSnapshot({ storage, profile: defaultProfile, runId: 'run-1', sequence: 3 });
 * ```
 */
export async function getRunSnapshot<P>(options: GetRunSnapshotOptions<P>): Promise<Snapshot<P> | undefined> {
  const { storage, profile, runId, id, sequence } = options ?? ({} as GetRunSnapshotOptions<P>);
  if ((id === undefined) === (sequence === undefined))
    throw new CheckpointError('checkpoint_config_invalid', 'getRunSnapshot: give exactly one of id and sequence');
  const run = (await collectRunFiles(storage, profile as Profile<unknown>, (profile.assertRunId(runId), runId))).runs.get(runId);
  if (!run) return undefined;
  const named = run.history.filter((e) => (id !== undefined ? e.info.snapshotId === id : e.info.sequence === sequence));
  const candidates = named.length > 0 ? named : [...run.history, ...(run.latest ? [run.latest] : [])];
  const found = await collectSnapshots(storage, profile, runId, candidates);
  return found.find((s) => (id !== undefined ? s.id === id : s.sequence === sequence));
}
