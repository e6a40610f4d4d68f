import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { type JsonObject } from '../contract/json.js';
import { utf8Decode, utf8Encode } from '../codec/utf8.js';
import { gunzip, isGzip } from '../codec/gzip.js';
import { isCheckpointError } from '../contract/errors.js';
import type { RunIndexEntry } from '../codec/run-index.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import type { Profile } from '../contract/profile.js';
import { decodeStoredSnapshot } from '../snapshot-io/read-snapshot.js';
import type { StorageAdapter, StorageEntry } from '../contract/storage.js';
import type { KeyInfo } from '../contract/layout.js';
import type { IndexState } from './ordered-write.js';
import type { HeadLocation } from './sequence-recovery.js';

/** What recovering a run has found so far (see recoverRun in sequence-recovery.ts). */
export interface RunRecovery<P> {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  readonly runId: string;
  readonly latestKey: string;
  /** Files that failed validation. */
  readonly corrupt: string[];
  /** The snapshot of the highest number known so far (the first found of that number): unreadable files are numbered after it. */
  newestKnown: KnownSnapshot | undefined;
  /** Ids (from the name) of unreadable history files whose sequence nothing names. */
  readonly unnumbered: (string | undefined)[];
  /** Highest number any evidence claims so far. */
  lastSequence: number;
  /** `latest`, when it decodes. */
  latest: Snapshot<P> | undefined;
  /** `latest`'s bytes when another tool wrote it (read with a foreign-read warning). */
  foreignLatest?: Uint8Array;
  readonly index: IndexState;
  /** Index entries by file. */
  readonly indexed: Map<string, RunIndexEntry[]>;
  /** The run's files as listed, each with what its key names (classified once). */
  readonly listed: Map<string, ListedFile>;
  /** Valid snapshots the index does not list. */
  readonly unindexed: RunIndexEntry[];
  /** Entries the recovering writer stored itself, by file: taken as they are, their files not read again. */
  readonly written: ReadonlyMap<string, readonly RunIndexEntry[]>;
  /** Snapshots decoded from the listing, by sequence, with where they are stored. */
  readonly decoded: Map<number, { snapshot: Snapshot<P>; location: HeadLocation }>;
  /**
   * Snapshots whose documents carry no number (`checkpoint_sequence_derived`), held back until
   * the run's order numbers them (`numberDerived`); `key` and `location` unless it is `latest`.
   */
  readonly derived: { snapshot: Snapshot<P>; key?: string; location?: HeadLocation }[];
  /** Ids of derived snapshots older by time than a numbered one with a lower number: history, never the head. */
  readonly outOfOrder: Set<string>;
}

export function createRecovery<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  written: readonly RunIndexEntry[] = [],
): RunRecovery<P> {
  const byFile = new Map<string, RunIndexEntry[]>();
  for (const e of written) {
    const entries = byFile.get(e.file_path);
    if (entries) entries.push(e);
    else byFile.set(e.file_path, [e]);
  }
  return {
    storage,
    profile,
    runId,
    latestKey: profile.layout.latestKey(runId),
    corrupt: [],
    newestKnown: undefined,
    unnumbered: [],
    lastSequence: 0,
    latest: undefined,
    index: {},
    indexed: new Map(),
    listed: new Map(),
    unindexed: [],
    written: byFile,
    decoded: new Map(),
    derived: [],
    outOfOrder: new Set(),
  };
}

/** Counts a number some evidence claims. */
export function see<P>(r: RunRecovery<P>, n: number | undefined): void {
  if (n !== undefined && Number.isFinite(n) && n > r.lastSequence) r.lastSequence = n;
}

/** Records a snapshot whose number is known (only the newest is kept: see {@link unreadableNumbers}). */
export function knownOf<P>(r: RunRecovery<P>, sequence: number, id: string, createdAt: string): void {
  if (!r.newestKnown || sequence > r.newestKnown.sequence) r.newestKnown = { sequence, id, createdAt };
}

export const BATCH_NAME = /batch_(\d+)_(\d+)\.json$/;
/** The compact UTC time of a snapshot-lifecycle id (`cp_20251214T153000123Z_…`). */
const ID_TIME = /^cp_(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z_/;

/** Epoch ms a snapshot id carries in its name, if it carries one. */
function idTime(id: string | undefined): number | undefined {
  const m = id === undefined ? null : ID_TIME.exec(id);
  if (!m) return undefined;
  const [y, mo, d, h, mi, sec, ms] = m.slice(1).map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(y, mo - 1, d, h, mi, sec, ms);
}

/** A snapshot whose number is known. */
export interface KnownSnapshot {
  readonly sequence: number;
  readonly id: string;
  readonly createdAt: string;
}

/** A listed file of the run: its entry, and what its key names. */
export interface ListedFile {
  readonly entry: StorageEntry;
  readonly info: KeyInfo;
}

/**
 * Numbers that unreadable history files may hold when nothing names their sequence
 * (`history/<snapshot_id>.json` with latest and index unreadable too): each such file newer
 * than the newest known snapshot (by the time in its id; a name without a time counts) took
 * one number after it. Numbering resumes after them all, so no number is ever used twice;
 * an unreadable file that was in fact older only costs a gap.
 */
export function unreadableNumbers(newest: KnownSnapshot | undefined, unreadableIds: readonly (string | undefined)[]): number {
  if (unreadableIds.length === 0) return 0;
  // The time its id carries, else its created_at.
  const after = newest ? (idTime(newest.id) ?? Date.parse(newest.createdAt)) : Number.NEGATIVE_INFINITY;
  const newer = unreadableIds.filter((id) => {
    const t = idTime(id);
    return t === undefined || !(t < after);
  }).length;
  return newer === 0 ? 0 : (newest?.sequence ?? 0) + newer;
}

export function dirOf(key: string): string {
  const i = key.lastIndexOf('/');
  return i < 0 ? '' : key.slice(0, i + 1);
}

/** The deepest folder holding both folders `a` and `b` (each `''` or ending in `/`). */
export function commonDir(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return dirOf(a.slice(0, i));
}

export const entryOf = (s: Snapshot<unknown>, key: string): RunIndexEntry =>
  // Frozen, as the writer's own entries are: the index encoder reuses a frozen entry's bytes.
  Object.freeze({
    sequence: s.sequence,
    checkpoint_id: s.id,
    trigger: s.source,
    timestamp: s.createdAt,
    file_path: key,
    status: s.status,
  });

export async function tryDecode<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  key: string,
  bytes: Uint8Array,
): Promise<Snapshot<P> | undefined> {
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
export async function batchMembers<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  key: string,
  bytes: Uint8Array,
): Promise<{ sequence: number; bytes: Uint8Array }[] | undefined> {
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
