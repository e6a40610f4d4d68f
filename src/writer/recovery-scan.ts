import { isCheckpointError } from '../contract/errors.js';
import { decodeRunIndexToKeep } from '../codec/run-index.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import { decodeStoredSnapshotTolerant } from '../snapshot-io/read-snapshot.js';
import type { KeyInfo } from '../contract/layout.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import { hasLinkedRead, isAbsentLinked, type LinkedValues } from '../contract/linked-read.js';
import type { StorageAdapter, StorageEntry, StoredObject } from '../contract/storage.js';
import type { HeadLocation } from './sequence-recovery.js';
import { numberByRunOrder, type RunOrderEntry } from '../snapshot-io/run-order.js';
import { BATCH_NAME, batchMembers, commonDir, dirOf, entryOf, knownOf, see, type RunRecovery } from './recovery-evidence.js';

/** True when the read says the snapshot's number is only provisional (its document carries none). */
const sequenceDerived = (warnings: readonly string[]): boolean => warnings.includes('checkpoint_sequence_derived');

/** Which run of which profile: what {@link runPrefix} and {@link holdsRunFiles} need (a recovery, or a writer's config). */
type RunOf<P> = Pick<RunRecovery<P>, 'profile' | 'runId' | 'latestKey'>;

/** The folder(s) holding the run's files: the deepest folder holding both `latest` and history. */
export function runPrefix<P>(r: RunOf<P>): string {
  const { layout, triggers } = r.profile;
  const firstTrigger = Object.keys(triggers)[0] ?? 'manual';
  const sampleHistory = layout.historyKey?.({ runId: r.runId, id: 'x', sequence: 1, source: firstTrigger });
  return sampleHistory ? commonDir(dirOf(r.latestKey), dirOf(sampleHistory)) : dirOf(r.latestKey);
}

/** Whether `keys` hold a file of the run other than its lock (which the writer takes just before). */
export function holdsRunFiles<P>(r: RunOf<P>, keys: readonly string[]): boolean {
  return keys.some((key) => {
    const info = r.profile.layout.classify(key);
    return info?.runId === r.runId && info.kind !== 'lock';
  });
}

/**
 * Reads the run's evidence in order: `latest`, the index, the listing of the run's files. On a
 * store with a linked read they are asked in one round trip (all three on PostgreSQL): `latest`
 * the value, the index the first key under its own name, the listing the run folder's entries;
 * an absent `latest` comes with the run's keys instead, and a run holding no file but its lock (a
 * new run) is not read further. A part the store leaves unread is read after, as on a store
 * without the capability.
 */
export async function readRunFiles<P>(r: RunRecovery<P>): Promise<void> {
  const indexKey = r.profile.layout.indexKey?.(r.runId);
  if (!hasLinkedRead(r.storage)) {
    await takeLatest(r, await r.storage.get(r.latestKey));
    if (indexKey) takeIndex(r, indexKey, await r.storage.get(indexKey));
    await listRunFiles(r);
    return;
  }
  const prefix = runPrefix(r);
  const answer = await r.storage.getLinked(r.latestKey, {
    entries: prefix,
    keysIfAbsent: prefix,
    ...(indexKey ? { first: { prefix: indexKey, count: 1 } } : {}),
  });
  if (isAbsentLinked(answer)) {
    if (!holdsRunFiles(r, answer.absent.keys)) return;
  } else await takeLatest(r, answer?.value);
  const present = isAbsentLinked(answer) ? undefined : answer;
  if (indexKey) takeIndex(r, indexKey, await indexOfAnswer(r.storage, indexKey, present));
  if (present?.entries) takeListing(r, present.entries.entries);
  else await listRunFiles(r);
}

/**
 * The run's index as a linked read asked for it (`first` under the index's key), or by a plain
 * read when the store left that part unread (or gave no answer). Undefined: absent.
 */
export async function indexOfAnswer(
  storage: StorageAdapter,
  indexKey: string,
  answer: LinkedValues | undefined,
): Promise<StoredObject | undefined> {
  if (!answer?.first) return storage.get(indexKey);
  const first = answer.first.objects[0];
  return first?.key === indexKey ? first : undefined;
}

/** `latest` as read (undefined: absent): its number and snapshot, or a corrupt file. */
async function takeLatest<P>(r: RunRecovery<P>, latestObj: StoredObject | undefined): Promise<void> {
  if (!latestObj) return;
  try {
    const read = await decodeStoredSnapshotTolerant(r.storage, r.profile, r.latestKey, latestObj.bytes);
    r.latest = read.snapshot;
    if (read.warnings.length > 0) r.foreignLatest = latestObj.bytes;
    if (sequenceDerived(read.warnings)) {
      r.derived.push({ snapshot: read.snapshot });
      return; // numbered with the run (numberDerived)
    }
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    r.latest = undefined;
  }
  if (r.latest) {
    see(r, r.latest.sequence);
    knownOf(r, r.latest.sequence, r.latest.id, r.latest.createdAt);
  } else r.corrupt.push(r.latestKey);
}

/** The run index as read (undefined: absent): every number it lists, and its entries by file. */
function takeIndex<P>(r: RunRecovery<P>, indexKey: string, obj: StoredObject | undefined): void {
  if (obj) {
    r.index.version = obj.version;
    try {
      r.index.doc = decodeRunIndexToKeep(obj.bytes, indexKey);
    } catch {
      r.corrupt.push(indexKey);
    }
  }
  for (const e of r.index.doc?.checkpoints ?? []) {
    see(r, e.sequence);
    knownOf(r, e.sequence, e.checkpoint_id, e.timestamp);
    const list = r.indexed.get(e.file_path) ?? [];
    list.push(e);
    r.indexed.set(e.file_path, list);
  }
}

/** Lists the folder(s) holding the run's files. */
async function listRunFiles<P>(r: RunRecovery<P>): Promise<void> {
  const entries: StorageEntry[] = [];
  for await (const entry of r.storage.list(runPrefix(r))) entries.push(entry);
  takeListing(r, entries);
}

/** The run's files as listed; keys of other runs are filtered out by classify. */
function takeListing<P>(r: RunRecovery<P>, entries: readonly StorageEntry[]): void {
  const { layout } = r.profile;
  for (const entry of entries) {
    const info = layout.classify(entry.key);
    if (!info || info.runId !== r.runId) continue;
    r.listed.set(entry.key, { entry, info });
  }
}

/** Records a decoded snapshot the index does not list. */
function addUnindexed<P>(r: RunRecovery<P>, s: Snapshot<P>, key: string): void {
  see(r, s.sequence);
  knownOf(r, s.sequence, s.id, s.createdAt);
  r.unindexed.push(entryOf(s as Snapshot<unknown>, key));
}

/** An entry the recovering writer stored itself and the index does not list, as it holds it. */
function takeWritten<P>(r: RunRecovery<P>, e: RunIndexEntry): void {
  see(r, e.sequence);
  knownOf(r, e.sequence, e.checkpoint_id, e.timestamp);
  r.unindexed.push(e);
}

/** A history entry the index does not list: decoded (its number and where it is), or corrupt. */
async function scanHistoryFile<P>(r: RunRecovery<P>, key: string, entry: StorageEntry, info: KeyInfo): Promise<void> {
  const own = r.written.get(key);
  if (own) {
    for (const e of own) takeWritten(r, e);
    return;
  }
  const obj = await r.storage.get(key);
  if (!obj) return;
  let read;
  try {
    read = await decodeStoredSnapshotTolerant(r.storage, r.profile, key, obj.bytes);
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    r.corrupt.push(key);
    if (info.sequence === undefined) r.unnumbered.push(info.snapshotId);
    return;
  }
  const s = read.snapshot;
  const location: HeadLocation = info.compressed ? { kind: 'fixed' } : { kind: 'history', key, version: entry.version };
  if (sequenceDerived(read.warnings)) {
    r.derived.push({ snapshot: s, key, location });
    return;
  }
  addUnindexed(r, s, key);
  r.decoded.set(s.sequence, { snapshot: s, location });
}

/** A batch file the index does not list: its valid members (and where they are), or corrupt. */
async function scanBatchFile<P>(r: RunRecovery<P>, key: string, entry: StorageEntry): Promise<void> {
  const obj = await r.storage.get(key);
  if (!obj) return;
  let members;
  try {
    members = await decodeBatchFile(r.storage, r.profile, key, obj.bytes);
  } catch (err) {
    if (!isCheckpointError(err)) throw err;
    r.corrupt.push(key);
    return;
  }
  const raw = await batchMembers(r.storage, r.profile, key, obj.bytes);
  for (const member of members) {
    if (!member.ok) continue;
    const s = member.snapshot;
    addUnindexed(r, s, key);
    r.decoded.set(s.sequence, {
      snapshot: s,
      location: raw ? { kind: 'batch', key, version: entry.version, members: raw } : { kind: 'fixed' },
    });
  }
}

/** Every number the listed files claim (by name, even when corrupt), and the snapshots the index does not list. */
export async function scanListed<P>(r: RunRecovery<P>): Promise<void> {
  for (const [key, { entry, info }] of r.listed) {
    if (info.kind === 'part') see(r, info.sequence);
    if (info.kind === 'history') {
      see(r, info.sequence);
      if (!r.indexed.has(key)) await scanHistoryFile(r, key, entry, info);
    }
    if (info.kind === 'batch') {
      const m = BATCH_NAME.exec(key);
      if (m) see(r, Number(m[2]));
      if (!r.indexed.has(key)) await scanBatchFile(r, key, entry);
    }
  }
}

/**
 * Numbers the snapshots whose documents carry none by the run's order (`numberByRunOrder`,
 * as resume does), with every numbered snapshot known (latest, index, history), then records
 * them as the others are: their numbers count, history copies not indexed join the index.
 */
export function numberDerived<P>(r: RunRecovery<P>): void {
  if (r.derived.length === 0) return;
  const numbered: RunOrderEntry[] = [];
  if (r.latest && !r.derived.some((d) => d.snapshot === r.latest))
    numbered.push({ id: r.latest.id, createdAt: r.latest.createdAt, sequence: r.latest.sequence });
  for (const { snapshot: s } of r.decoded.values()) numbered.push({ id: s.id, createdAt: s.createdAt, sequence: s.sequence });
  for (const e of r.index.doc?.checkpoints ?? []) numbered.push({ id: e.checkpoint_id, createdAt: e.timestamp, sequence: e.sequence });
  const derived = r.derived.map((d) => ({ id: d.snapshot.id, createdAt: d.snapshot.createdAt }));
  const numbers = numberByRunOrder([...numbered, ...derived]);
  const carried = new Map(numbered.map((n) => [n.id, n.sequence]));
  for (const d of r.derived) {
    const n = numbers.get(d.snapshot.id);
    const sequence = n?.sequence ?? carried.get(d.snapshot.id)!;
    if (n?.outOfOrder) r.outOfOrder.add(d.snapshot.id);
    const s = { ...d.snapshot, sequence };
    if (d.key === undefined || d.location === undefined) {
      r.latest = s;
      see(r, sequence);
      knownOf(r, sequence, s.id, s.createdAt);
      continue;
    }
    addUnindexed(r, s, d.key);
    r.decoded.set(sequence, { snapshot: s, location: d.location });
  }
}
