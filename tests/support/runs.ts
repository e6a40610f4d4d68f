/**
 * Runs in a store, for tests: reading a run's history and latest back, and writing runs the
 * way the writer lays them out (history → latest → index) with `profile.document.encode` and
 * `storage.put`, intact or damaged.
 */
import { listAll, type Profile, type Snapshot, type StorageAdapter, type TriggerRecord } from 'savepoint';
import { encodeRunIndex, gzip, readSnapshot, toRfc3339, type RunIndexEntry } from 'savepoint/toolkit';
import { T0 } from './clock.js';

/** Every snapshot stored in a run's history (default-style layouts), by sequence. */
export async function historyOf<P>(storage: StorageAdapter, profile: Profile<P>, runId: string): Promise<Snapshot<P>[]> {
  const out: Snapshot<P>[] = [];
  for (const e of await listAll(storage, profile.layout.runsPrefix)) {
    const info = profile.layout.classify(e.key);
    if (info?.kind !== 'history' || info.runId !== runId) continue;
    const s = await readSnapshot(storage, profile, e.key);
    if (s) out.push(s);
  }
  return out.sort((a, b) => a.sequence - b.sequence);
}

export const latestOf = <P>(storage: StorageAdapter, profile: Profile<P>, runId: string): Promise<Snapshot<P> | undefined> =>
  readSnapshot(storage, profile, profile.layout.latestKey(runId));

/**
 * The triggers coalesced into snapshot `id`, wherever they are stored: its history entry's own
 * records, then those later history entries carry for it (`coalesced_into`, immutable history);
 * or, when `latest` holds it with a longer list (its extra records not carried yet), latest's.
 * Records a snapshot carries for its predecessor are not its own and are left out.
 */
export function triggersOf<P>(history: readonly Snapshot<P>[], latest: Snapshot<P> | undefined, id: string): TriggerRecord[] {
  const own = (s: Snapshot<P> | undefined): TriggerRecord[] => (s ? s.sourceDetails.filter((r) => r.coalesced_into === undefined) : []);
  const stored = [
    ...own(history.find((s) => s.id === id)),
    ...history.flatMap((s) => s.sourceDetails.filter((r) => r.coalesced_into === id).map(({ coalesced_into: _into, ...r }) => r)),
  ];
  const inLatest = latest?.id === id ? own(latest) : [];
  return inLatest.length > stored.length ? inLatest : stored;
}

export interface Written<P> {
  readonly snapshot: Snapshot<P>;
  readonly bytes: Uint8Array;
  /** Key of its history entry (plain, before any gzip). */
  readonly historyKey: string;
}

/** Encodes snapshot `sequence` of a run (deterministic content from the sequence). */
export async function encodeSnapshot<P>(
  profile: Profile<P>,
  runId: string,
  sequence: number,
  payload: P,
  over: { source?: string; status?: string; createdAtMs?: number; id?: string } = {},
): Promise<Written<P>> {
  const createdAtMs = over.createdAtMs ?? T0 + sequence * 60_000;
  const source = over.source ?? Object.keys(profile.triggers)[0]!;
  const id = over.id ?? profile.newSnapshotId({ runId, sequence, source, createdAtMs });
  const { bytes, snapshot } = await profile.document.encode({
    id,
    runId,
    sequence,
    createdAt: toRfc3339(createdAtMs),
    source,
    sourceDetails: [],
    status: over.status ?? profile.statuses.active,
    payload,
  });
  const historyKey = profile.layout.historyKey!({ runId, id, sequence, source });
  return { snapshot, bytes, historyKey };
}

/** The index entry of a written snapshot. */
export function indexEntry<P>(w: Written<P>, filePath = w.historyKey): RunIndexEntry {
  return {
    sequence: w.snapshot.sequence,
    checkpoint_id: w.snapshot.id,
    trigger: w.snapshot.source,
    timestamp: w.snapshot.createdAt,
    file_path: filePath,
    status: w.snapshot.status,
  };
}

/** Writes the run's index over `entries`. */
export async function putIndex<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  entries: readonly RunIndexEntry[],
): Promise<void> {
  const sorted = [...entries].sort((a, b) => a.sequence - b.sequence);
  await storage.put(
    profile.layout.indexKey!(runId),
    encodeRunIndex({ run_id: runId, checkpoint_count: sorted.length, checkpoints: sorted, last_updated: toRfc3339(T0 + 10 ** 8) }),
  );
}

export interface RunBuild<P> {
  readonly written: Written<P>[];
}

/**
 * Writes snapshots 1..count of a run as the writer would: each history entry, then latest,
 * then the index. `latestAt` makes latest hold an older snapshot (a stale latest).
 */
export async function writeRun<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  count: number,
  state: (n: number) => P,
  opts: {
    latestAt?: number;
    index?: boolean | number;
    status?: (n: number) => string;
    source?: (n: number) => string;
    createdAtMs?: (n: number) => number;
  } = {},
): Promise<RunBuild<P>> {
  const written: Written<P>[] = [];
  for (let n = 1; n <= count; n++) {
    const w = await encodeSnapshot(profile, runId, n, state(n), {
      ...(opts.status ? { status: opts.status(n) } : {}),
      ...(opts.source ? { source: opts.source(n) } : {}),
      ...(opts.createdAtMs ? { createdAtMs: opts.createdAtMs(n) } : {}),
    });
    written.push(w);
    await storage.put(w.historyKey, w.bytes);
  }
  const latest = written[(opts.latestAt ?? count) - 1];
  if (latest) await storage.put(profile.layout.latestKey(runId), latest.bytes);
  const indexUpTo = opts.index === false ? 0 : typeof opts.index === 'number' ? opts.index : count;
  if (profile.layout.indexKey && opts.index !== false)
    await putIndex(
      storage,
      profile,
      runId,
      written.slice(0, indexUpTo).map((w) => indexEntry(w)),
    );
  return { written };
}

/** Flips one bit of `bytes` (a copy). */
export function flipBit(bytes: Uint8Array, bit: number): Uint8Array {
  const out = bytes.slice();
  const i = Math.floor(bit / 8) % out.length;
  out[i] = out[i]! ^ (1 << (bit % 8));
  return out;
}

/** Replaces a stored value with a corrupted copy. */
export async function corrupt(storage: StorageAdapter, key: string, how: (bytes: Uint8Array) => Uint8Array): Promise<void> {
  const stored = await storage.get(key);
  if (!stored) throw new Error(`no ${key} to corrupt`);
  await storage.put(key, how(stored.bytes));
}

/** Gzips a history entry in place (as retention does after 24 h): `key` → `key.gz`. */
export async function compressEntry(storage: StorageAdapter, key: string): Promise<string> {
  const stored = await storage.get(key);
  if (!stored) throw new Error(`no ${key} to compress`);
  await storage.put(`${key}.gz`, gzip(stored.bytes));
  await storage.delete(key);
  return `${key}.gz`;
}
