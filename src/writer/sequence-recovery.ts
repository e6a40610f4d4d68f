import { canonicalJson, parseJson, type JsonObject } from '../codec/canonical-json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { gunzip, isGzip } from '../codec/gzip.js';
import { isCheckpointError } from '../model/errors.js';
import { decodeRunIndex, type RunIndexEntry } from '../model/run-index.js';
import type { Snapshot } from '../model/snapshot.js';
import { decodeBatchFile } from '../profiles/batch-file.js';
import type { Profile } from '../profiles/define-profile.js';
import { decodeStoredSnapshot } from '../profiles/read-snapshot.js';
import type { StorageAdapter, StorageEntry } from '../storage/adapter.js';
import type { IndexState } from './ordered-write.js';

/** Where the newest snapshot is stored, as far as rewriting it (coalescing) is concerned. */
export type HeadLocation =
  | { readonly kind: 'history'; readonly key: string; readonly version: string }
  | { readonly kind: 'batch'; readonly key: string; readonly version: string; readonly members: readonly { sequence: number; bytes: Uint8Array }[] }
  /** Profiles without history: the snapshot lives in `latest` only. */
  | { readonly kind: 'latest' }
  /** Stored where it must not be rewritten (compressed, or not found): closed for coalescing. */
  | { readonly kind: 'fixed' };

/** The newest stored snapshot of a run. */
export interface RecoveredHead<P> {
  readonly snapshot: Snapshot<P>;
  readonly location: HeadLocation;
}

/** What a writer learns when it opens a run. */
export interface RecoveredRun<P> {
  /** Highest sequence number any stored file claims (0 for a new run). The next snapshot gets this + 1. */
  readonly lastSequence: number;
  /** The newest valid snapshot (history may hold one newer than a stale `latest` after a crash). */
  readonly head?: RecoveredHead<P>;
  /** The run index as read. */
  readonly index: IndexState;
  /** Valid stored snapshots the index does not list (a crash between history and index); merged into the next index write. */
  readonly unindexed: readonly RunIndexEntry[];
  /** Files that failed validation (their numbers are still never reused when their names carry one). */
  readonly corrupt: readonly string[];
}

const BATCH_NAME = /batch_(\d+)_(\d+)\.json$/;
/** The compact UTC time of a snapshot-lifecycle id (`cp_20251214T153000123Z_…`). */
const ID_TIME = /^cp_(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z_/;

/** Epoch ms a snapshot id carries in its name, if it carries one. */
function idTime(id: string | undefined): number | undefined {
  const m = id === undefined ? null : ID_TIME.exec(id);
  if (!m) return undefined;
  const [y, mo, d, h, mi, sec, ms] = m.slice(1).map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
}

/** A snapshot whose number is known, with the time its id (or its created_at) carries. */
interface Known {
  readonly sequence: number;
  readonly atMs: number;
}

/**
 * Numbers that unreadable history files may hold when nothing names their sequence
 * (`history/<snapshot_id>.json` with latest and index unreadable too): each such file newer
 * than the newest known snapshot (by the time in its id; a name without a time counts) took
 * one number after it. Numbering resumes after them all, so no number is ever used twice;
 * an unreadable file that was in fact older only costs a gap.
 */
function unreadableNumbers(known: readonly Known[], unreadableIds: readonly (string | undefined)[]): number {
  let newest: Known | undefined;
  for (const k of known) if (!newest || k.sequence > newest.sequence) newest = k;
  const after = newest?.atMs ?? Number.NEGATIVE_INFINITY;
  const newer = unreadableIds.filter((id) => {
    const t = idTime(id);
    return t === undefined || !(t < after);
  }).length;
  return newer === 0 ? 0 : (newest?.sequence ?? 0) + newer;
}

function dirOf(key: string): string {
  const i = key.lastIndexOf('/');
  return i < 0 ? '' : key.slice(0, i + 1);
}

/** The deepest folder holding both folders `a` and `b` (each `''` or ending in `/`). */
function commonDir(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return dirOf(a.slice(0, i));
}

const entryOf = (s: Snapshot<unknown>, key: string): RunIndexEntry => ({
  sequence: s.sequence,
  checkpoint_id: s.id,
  trigger: s.source,
  timestamp: s.createdAt,
  file_path: key,
  status: s.status,
});

async function tryDecode<P>(storage: StorageAdapter, profile: Profile<P>, key: string, bytes: Uint8Array): Promise<Snapshot<P> | undefined> {
  try {
    return await decodeStoredSnapshot(storage, profile, key, bytes);
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
}

/**
 * Member documents of a batch file as canonical bytes, paired with their sequences (what
 * the writer re-encodes when it rewrites one member); `undefined` unless every member is valid.
 */
async function batchMembers<P>(storage: StorageAdapter, profile: Profile<P>, key: string, bytes: Uint8Array): Promise<{ sequence: number; bytes: Uint8Array }[] | undefined> {
  try {
    const decoded = await decodeBatchFile(storage, profile, key, bytes);
    const plain = isGzip(bytes) ? gunzip(bytes, key) : bytes;
    const envelope = parseJson(utf8Decode(plain, key), key) as { checkpoints: JsonObject[] };
    const out: { sequence: number; bytes: Uint8Array }[] = [];
    for (const [i, m] of decoded.entries()) {
      const doc = envelope.checkpoints[i];
      if (!m.ok || !doc) return undefined;
      out.push({ sequence: m.snapshot.sequence, bytes: utf8Encode(canonicalJson(doc)) });
    }
    return out;
  } catch (err) {
    if (isCheckpointError(err)) return undefined;
    throw err;
  }
}

/**
 * Recovers a run's numbering and newest snapshot from storage, so a new process continues
 * the sequence and never reuses a number. Evidence, in order: `latest`, the index, and a
 * listing of the run's files — a crash may have left a history entry (or part files, or a
 * batch file) newer than `latest` and the index. Every number a stored file claims counts,
 * even when that file is corrupt, as long as its name carries the number.
 */
export async function recoverRun<P>(storage: StorageAdapter, profile: Profile<P>, runId: string): Promise<RecoveredRun<P>> {
  const layout = profile.layout;
  const latestKey = layout.latestKey(runId);
  const corrupt: string[] = [];
  const known: Known[] = [];
  const knownOf = (sequence: number, id: string, createdAt: string): void => {
    known.push({ sequence, atMs: idTime(id) ?? Date.parse(createdAt) });
  };
  /** Ids (from the name) of unreadable history files whose sequence nothing names. */
  const unnumbered: (string | undefined)[] = [];
  let lastSequence = 0;
  const see = (n: number | undefined): void => {
    if (n !== undefined && Number.isFinite(n) && n > lastSequence) lastSequence = n;
  };

  const latestObj = await storage.get(latestKey);
  let latest: Snapshot<P> | undefined;
  if (latestObj) {
    latest = await tryDecode(storage, profile, latestKey, latestObj.bytes);
    if (latest) {
      see(latest.sequence);
      knownOf(latest.sequence, latest.id, latest.createdAt);
    } else corrupt.push(latestKey);
  }

  const index: IndexState = {};
  const indexKey = layout.indexKey?.(runId);
  if (indexKey) {
    const obj = await storage.get(indexKey);
    if (obj) {
      index.version = obj.version;
      try {
        index.doc = decodeRunIndex(obj.bytes, indexKey);
      } catch {
        corrupt.push(indexKey);
      }
    }
  }
  const indexed = new Map<string, RunIndexEntry[]>();
  for (const e of index.doc?.checkpoints ?? []) {
    see(e.sequence);
    knownOf(e.sequence, e.checkpoint_id, e.timestamp);
    const list = indexed.get(e.file_path) ?? [];
    list.push(e);
    indexed.set(e.file_path, list);
  }

  // List the folder(s) holding the run's files; keys of other runs are filtered out by classify.
  let prefix = dirOf(latestKey);
  const firstTrigger = Object.keys(profile.triggers)[0] ?? 'manual';
  const sampleHistory = layout.historyKey?.({ runId, id: 'x', sequence: 1, source: firstTrigger });
  if (sampleHistory) prefix = commonDir(prefix, dirOf(sampleHistory));
  const listed = new Map<string, StorageEntry>();
  for await (const entry of storage.list(prefix)) {
    const info = layout.classify(entry.key);
    if (!info || info.runId !== runId) continue;
    listed.set(entry.key, entry);
  }

  const unindexed: RunIndexEntry[] = [];
  const decoded = new Map<number, { snapshot: Snapshot<P>; location: HeadLocation }>();
  for (const [key, entry] of listed) {
    const info = layout.classify(key)!;
    if (info.kind === 'part') see(info.sequence);
    if (info.kind === 'history') {
      see(info.sequence);
      if (indexed.has(key)) continue;
      const obj = await storage.get(key);
      if (!obj) continue;
      const s = await tryDecode(storage, profile, key, obj.bytes);
      if (!s) {
        corrupt.push(key);
        if (info.sequence === undefined) unnumbered.push(info.snapshotId);
        continue;
      }
      see(s.sequence);
      knownOf(s.sequence, s.id, s.createdAt);
      unindexed.push(entryOf(s as Snapshot<unknown>, key));
      decoded.set(s.sequence, { snapshot: s, location: info.compressed ? { kind: 'fixed' } : { kind: 'history', key, version: entry.version } });
    }
    if (info.kind === 'batch') {
      const m = BATCH_NAME.exec(key);
      if (m) see(Number(m[2]));
      if (indexed.has(key)) continue;
      const obj = await storage.get(key);
      if (!obj) continue;
      let members;
      try {
        members = await decodeBatchFile(storage, profile, key, obj.bytes);
      } catch (err) {
        if (!isCheckpointError(err)) throw err;
        corrupt.push(key);
        continue;
      }
      const raw = await batchMembers(storage, profile, key, obj.bytes);
      for (const member of members) {
        if (!member.ok) continue;
        const s = member.snapshot;
        see(s.sequence);
        knownOf(s.sequence, s.id, s.createdAt);
        unindexed.push(entryOf(s as Snapshot<unknown>, key));
        decoded.set(s.sequence, { snapshot: s, location: raw ? { kind: 'batch', key, version: entry.version, members: raw } : { kind: 'fixed' } });
      }
    }
  }

  see(unreadableNumbers(known, unnumbered));

  // The head: the newest valid snapshot anywhere, preferring history's copy (history is the truth).
  const locate = async (s: Snapshot<P>): Promise<HeadLocation> => {
    const known = decoded.get(s.sequence);
    if (known && known.snapshot.id === s.id) return known.location;
    if (!layout.historyKey) return { kind: 'latest' };
    const entry = index.doc?.checkpoints.find((e) => e.sequence === s.sequence && e.checkpoint_id === s.id);
    const key = entry?.file_path ?? layout.historyKey({ runId, id: s.id, sequence: s.sequence, source: s.source });
    const stored = listed.get(key);
    if (!stored) return { kind: 'fixed' };
    const info = layout.classify(key);
    if (info?.compressed) return { kind: 'fixed' };
    if (info?.kind === 'batch') {
      const obj = await storage.get(key);
      const raw = obj ? await batchMembers(storage, profile, key, obj.bytes) : undefined;
      return raw && obj ? { kind: 'batch', key, version: obj.version, members: raw } : { kind: 'fixed' };
    }
    return { kind: 'history', key, version: stored.version };
  };

  let head: RecoveredHead<P> | undefined;
  const newestDecoded = [...decoded.keys()].sort((a, b) => b - a)[0];
  if (newestDecoded !== undefined && (!latest || newestDecoded > latest.sequence)) {
    const d = decoded.get(newestDecoded)!;
    head = { snapshot: d.snapshot, location: d.location };
  } else {
    const maxIndexed = index.doc?.checkpoints.at(-1);
    if (maxIndexed && (!latest || maxIndexed.sequence > latest.sequence)) {
      const obj = await storage.get(maxIndexed.file_path);
      const s = obj ? await tryDecode(storage, profile, maxIndexed.file_path, obj.bytes) : undefined;
      if (s && s.sequence === maxIndexed.sequence) head = { snapshot: s, location: await locate(s) };
    }
    if (!head && latest) head = { snapshot: latest, location: await locate(latest) };
  }
  return { lastSequence, ...(head ? { head } : {}), index, unindexed, corrupt };
}
