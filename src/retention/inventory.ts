import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import { documentReadLimit, getBounded } from '../snapshot-io/bounded-read.js';
import { assertStorageProfileOptions } from '../contract/arguments.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import { decodeRunIndex, type RunIndexEntry } from '../codec/run-index.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import type { Profile } from '../contract/profile.js';
import type { KeyKind, ProfileLayout } from '../contract/layout.js';
import { decodeStoredSnapshot } from '../snapshot-io/read-snapshot.js';
import type { StorageAdapter } from '../contract/storage.js';
import { decodePreservedRuns, preservedRunIds } from './preserved-runs.js';
import { decodeRetentionSummary } from './summary.js';

/** A stored file as listed: key, version and size. */
export interface RetentionFile {
  readonly key: string;
  readonly version: string;
  readonly size: number;
}

/** One snapshot of a run, as retention sees it. */
export interface InventorySnapshot {
  readonly runId: string;
  readonly id: string;
  readonly sequence: number;
  /** RFC 3339 creation time. */
  readonly createdAt: string;
  /** `createdAt` in epoch milliseconds. */
  readonly createdAtMs: number;
  readonly status: string;
  /** The trigger, where known. */
  readonly source?: string;
  /**
   * History entries holding it: the plain file and/or its `.gz` form (both only after an
   * interrupted compression). Empty for a snapshot only `latest.json` holds.
   */
  readonly files: readonly (RetentionFile & { readonly compressed: boolean })[];
  /** Keys of batch files holding it. */
  readonly batches: readonly string[];
  /** Part files of an oversized snapshot (they go with it). */
  readonly parts: readonly RetentionFile[];
  /** `latest.json` holds this snapshot. */
  readonly latest: boolean;
  /** Where `status` and `createdAt` came from: the run index, or the decoded document. */
  readonly origin: 'index' | 'document';
}

/** A batch file (phased-workflow-github.md `batch_{first}_{last}.json`). */
export interface InventoryBatch extends RetentionFile {
  /** Ids of its readable members. */
  readonly memberIds: readonly string[];
  /** Members that failed validation: while there are any, the file is never deleted by default. */
  readonly unreadableMembers: number;
}

/** A history or batch file that could not be read. Kept unless the plan is made with `deleteUnreadable`. */
export interface UnreadableFile extends RetentionFile {
  readonly kind: 'history' | 'batch';
  readonly reasonCode: ReasonCode;
}

/** One run, as retention sees it. */
export interface InventoryRun {
  readonly runId: string;
  /** Its snapshots in ascending (sequence, time, id) order. */
  readonly snapshots: readonly InventorySnapshot[];
  /** `latest.json`, when present. */
  readonly latest?: RetentionFile & {
    /** Id of the snapshot it holds; absent when it could not be read. */
    readonly snapshotId?: string;
    readonly readable: boolean;
  };
  /** The run index, when the profile keeps one and it exists. */
  readonly index?: RetentionFile & { readonly readable: boolean; readonly entries: readonly RunIndexEntry[] };
  /** Where the run's summary goes (`layout.summaryKey`); absent when the layout keeps none. */
  readonly summaryKey?: string;
  /** The archived-run summary, when present. */
  readonly summary?: RetentionFile & {
    /** Its `last_checkpoint_at` (read only for runs with nothing else left, where it ranks the run). */
    readonly lastCheckpointAtMs?: number;
  };
  readonly batches: readonly InventoryBatch[];
  /** Part files that belong to no snapshot of the inventory. */
  readonly orphanParts: readonly (RetentionFile & { readonly sequence: number })[];
  readonly unreadable: readonly UnreadableFile[];
}

/** Something retention could not read. Reported, never silently dropped. */
export interface InventoryProblem {
  readonly key: string;
  readonly runId?: string;
  readonly kind: KeyKind;
  readonly reasonCode: ReasonCode;
  readonly message: string;
}

/** Everything retention knows about a store: the input of {@link planRetention}. */
export interface RetentionInventory {
  /** The profile's name and whether it allows compressed history. */
  readonly profile: { readonly name: string; readonly compressHistory: boolean };
  /** Runs in ascending run-id order. */
  readonly runs: readonly InventoryRun[];
  /** Runs listed in `preserved_runs.json`. */
  readonly preservedRuns: readonly string[];
  /**
   * False when `preserved_runs.json` exists but cannot be read: the planner then keeps
   * everything, because it cannot know which runs are preserved.
   */
  readonly preservedRunsReadable: boolean;
  readonly problems: readonly InventoryProblem[];
}

/** Options of {@link buildInventory}. */
export interface BuildInventoryOptions<P = unknown> {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  /**
   * Reads in flight at once when documents must be decoded.
   * @default 8
   */
  readonly concurrency?: number;
}

interface RawFile extends RetentionFile {
  readonly compressed: boolean;
  readonly snapshotId?: string;
  readonly sequence?: number;
}

interface RawRun {
  latest?: RawFile;
  index?: RawFile;
  summary?: RawFile;
  history: RawFile[];
  batches: RawFile[];
  parts: RawFile[];
}

interface Meta {
  id: string;
  sequence: number;
  createdAt: string;
  status: string;
  source?: string;
  origin: 'index' | 'document';
}

/** A limiter: runs the tasks given to it with at most `n` in flight. */
type Limiter = <T>(task: () => Promise<T>) => Promise<T>;

function createLimiter(n: number): Limiter {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async (task) => {
    if (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Orders one run's snapshots by sequence, then creation time, then id. The sequence is
 * the writer's own order; creation times collide (concurrent calls share a millisecond)
 * and random ids then say nothing about which snapshot is newer.
 */
export function compareInventorySnapshots(a: InventorySnapshot, b: InventorySnapshot): number {
  return a.sequence - b.sequence || a.createdAtMs - b.createdAtMs || compareStrings(a.id, b.id);
}

function metaOf<P>(s: Snapshot<P>): Meta {
  return { id: s.id, sequence: s.sequence, createdAt: s.createdAt, status: s.status, source: s.source, origin: 'document' };
}

/**
 * Builds the inventory of a store: lists the profile's `runsPrefix` once, keeps only the
 * keys `profile.layout.classify` recognizes (history entries and their `.gz` forms, batch
 * files, `latest.json`, the index, part files, summaries, `preserved_runs.json`), and
 * finds each snapshot's status and time in the run's index (`index.json` entries with a
 * `status`), decoding the document through the profile's one read path only when the
 * index does not say. `latest.json` of every run is read, so retention knows which
 * snapshot it holds. Files that cannot be read are reported in `problems` (and listed in
 * their run's `unreadable`), never dropped.
 *
 * Storage failures (not data problems) reject with the storage's reason code.
 */
export async function buildInventory<P>(options: BuildInventoryOptions<P>): Promise<RetentionInventory> {
  assertStorageProfileOptions(options, 'buildInventory');
  const { storage, profile } = options;
  const concurrency = options.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new CheckpointError('checkpoint_config_invalid', 'buildInventory: concurrency must be a positive integer', {
      details: { concurrency },
    });
  }
  const problems: InventoryProblem[] = [];
  const problem = (key: string, kind: KeyKind, err: unknown, runId?: string): ReasonCode => {
    if (!isCheckpointError(err)) throw err;
    if (!DATA_PROBLEMS.has(err.reasonCode)) throw err;
    problems.push({ key, kind, reasonCode: err.reasonCode, message: err.message, ...(runId !== undefined ? { runId } : {}) });
    return err.reasonCode;
  };

  const raw = await listRawRuns(storage, profile.layout);
  const { preservedRuns, preservedRunsReadable } = await readPreservedRuns(storage, profile.layout, problem);
  const runIds = [...raw.keys()].sort(compareStrings);
  const limit = createLimiter(concurrency);
  const runs = await Promise.all(
    runIds.map((runId) =>
      inventoryRun({ storage, profile, runId, limit, problem: (key, kind, err) => problem(key, kind, err, runId) }, raw.get(runId)!),
    ),
  );
  problems.sort((a, b) => compareStrings(a.key, b.key) || compareStrings(a.message, b.message));
  return {
    profile: { name: profile.name, compressHistory: profile.compressHistory },
    runs,
    preservedRuns,
    preservedRunsReadable,
    problems,
  };
}

/** One listing of `runsPrefix`: the files of each run the layout recognizes, by kind. */
async function listRawRuns(storage: StorageAdapter, layout: ProfileLayout): Promise<Map<string, RawRun>> {
  const raw = new Map<string, RawRun>();
  for await (const entry of storage.list(layout.runsPrefix)) {
    const info = layout.classify(entry.key);
    if (!info || info.runId === undefined) continue;
    let run = raw.get(info.runId);
    if (!run) raw.set(info.runId, (run = { history: [], batches: [], parts: [] }));
    const file: RawFile = {
      key: entry.key,
      version: entry.version,
      size: entry.size,
      compressed: info.compressed,
      ...(info.snapshotId !== undefined ? { snapshotId: info.snapshotId } : {}),
      ...(info.sequence !== undefined ? { sequence: info.sequence } : {}),
    };
    switch (info.kind) {
      case 'latest':
        run.latest = file;
        break;
      case 'index':
        run.index = file;
        break;
      case 'summary':
        run.summary = file;
        break;
      case 'history':
        run.history.push(file);
        break;
      case 'batch':
        run.batches.push(file);
        break;
      case 'part':
        if (file.sequence !== undefined) run.parts.push(file);
        break;
      default:
        break; // locks and anything else: never touched
    }
  }
  return raw;
}

/** The runs `preserved_runs.json` lists; not readable (reported) when it exists but cannot be decoded. */
async function readPreservedRuns(
  storage: StorageAdapter,
  layout: ProfileLayout,
  problem: (key: string, kind: KeyKind, err: unknown) => ReasonCode,
): Promise<{ preservedRuns: string[]; preservedRunsReadable: boolean }> {
  if (!layout.preservedRunsKey) return { preservedRuns: [], preservedRunsReadable: true };
  const stored = await storage.get(layout.preservedRunsKey);
  if (!stored) return { preservedRuns: [], preservedRunsReadable: true };
  try {
    return { preservedRuns: preservedRunIds(decodePreservedRuns(stored.bytes, layout.preservedRunsKey)), preservedRunsReadable: true };
  } catch (err) {
    problem(layout.preservedRunsKey, 'preserved_runs', err);
    return { preservedRuns: [], preservedRunsReadable: false };
  }
}

/** Reason codes that mean "this file's content is bad", as opposed to "storage failed". */
const DATA_PROBLEMS: ReadonlySet<ReasonCode> = new Set<ReasonCode>([
  'checkpoint_schema_invalid',
  'checkpoint_integrity_mismatch',
  'checkpoint_not_found',
  'checkpoint_too_large',
]);

/** What reading one run needs: the store, the profile, the shared read limiter, and where data problems are reported. */
interface RunReader<P> {
  readonly storage: StorageAdapter;
  readonly profile: Profile<P>;
  readonly runId: string;
  readonly limit: Limiter;
  /** Reports a data problem (and returns its reason code); rethrows a storage failure. */
  readonly problem: (key: string, kind: KeyKind, err: unknown) => ReasonCode;
}

/** A snapshot found in a history or batch file. */
interface Found {
  meta: Meta;
  file?: RawFile;
  batch?: string;
}

async function inventoryRun<P>(reader: RunReader<P>, files: RawRun): Promise<InventoryRun> {
  const { runId, profile } = reader;
  // The index says status and time of most snapshots without opening them.
  const { index, byId, bySequence } = await readIndex(reader, files);
  const { latest, latestMeta } = await readLatest(reader, files);
  const unreadable: UnreadableFile[] = [];
  const history = await Promise.all(files.history.map((file) => readHistoryFile(reader, file, byId, bySequence, unreadable)));
  const { batches, batchFound } = await readBatches(reader, files, unreadable);
  const { snapshots, orphanParts } = assembleSnapshots(runId, [...history, ...batchFound], latestMeta, files.parts);
  const summary = await readSummary(reader, files, snapshots.length === 0);

  unreadable.sort((a, b) => compareStrings(a.key, b.key));
  const summaryKey = profile.layout.summaryKey?.(runId);
  return {
    runId,
    snapshots,
    ...(summaryKey !== undefined ? { summaryKey } : {}),
    ...(latest ? { latest } : {}),
    ...(index ? { index } : {}),
    ...(summary ? { summary } : {}),
    batches,
    orphanParts: orphanParts.sort((a, b) => compareStrings(a.key, b.key)),
    unreadable,
  };
}

async function readIndex<P>(
  reader: RunReader<P>,
  files: RawRun,
): Promise<{ index: InventoryRun['index']; byId: Map<string, RunIndexEntry>; bySequence: Map<number, RunIndexEntry> }> {
  let index: InventoryRun['index'];
  const byId = new Map<string, RunIndexEntry>();
  const bySequence = new Map<number, RunIndexEntry>();
  if (files.index) {
    const stored = await reader.limit(() => reader.storage.get(files.index!.key));
    if (stored) {
      try {
        const decoded = decodeRunIndex(stored.bytes, files.index.key);
        index = { key: files.index.key, version: stored.version, size: files.index.size, readable: true, entries: decoded.checkpoints };
        for (const e of decoded.checkpoints) {
          byId.set(e.checkpoint_id, e);
          bySequence.set(e.sequence, e);
        }
      } catch (err) {
        reader.problem(files.index.key, 'index', err);
        index = { key: files.index.key, version: stored.version, size: files.index.size, readable: false, entries: [] };
      }
    }
  }
  return { index, byId, bySequence };
}

async function readLatest<P>(
  reader: RunReader<P>,
  files: RawRun,
): Promise<{ latest: InventoryRun['latest']; latestMeta: Meta | undefined }> {
  if (!files.latest) return { latest: undefined, latestMeta: undefined };
  const { storage, profile, limit } = reader;
  const key = files.latest.key;
  const stored = await limit(() => storage.get(key));
  if (!stored) return { latest: undefined, latestMeta: undefined };
  try {
    const latestMeta = metaOf(await limit(() => decodeStoredSnapshot(storage, profile, key, stored.bytes)));
    return {
      latest: { key: files.latest.key, version: stored.version, size: files.latest.size, readable: true, snapshotId: latestMeta.id },
      latestMeta,
    };
  } catch (err) {
    reader.problem(files.latest.key, 'latest', err);
    return { latest: { key: files.latest.key, version: stored.version, size: files.latest.size, readable: false }, latestMeta: undefined };
  }
}

/** A history entry's snapshot: from the index when its entry has a status, else decoded; unreadable ones are added to `unreadable`. */
async function readHistoryFile<P>(
  reader: RunReader<P>,
  file: RawFile,
  byId: ReadonlyMap<string, RunIndexEntry>,
  bySequence: ReadonlyMap<number, RunIndexEntry>,
  unreadable: UnreadableFile[],
): Promise<Found | undefined> {
  const { storage, profile, limit } = reader;
  const entry =
    file.snapshotId !== undefined ? byId.get(file.snapshotId) : file.sequence !== undefined ? bySequence.get(file.sequence) : undefined;
  if (entry?.status !== undefined) {
    const createdAt = entry.timestamp;
    return {
      file,
      meta: { id: entry.checkpoint_id, sequence: entry.sequence, createdAt, status: entry.status, source: entry.trigger, origin: 'index' },
    };
  }
  try {
    const decoded = await limit(async () => {
      const stored = await getBounded(storage, file.key, documentReadLimit(profile));
      return stored ? decodeStoredSnapshot(storage, profile, file.key, stored.bytes) : undefined;
    });
    return decoded ? { file, meta: metaOf(decoded) } : undefined; // undefined: deleted since the listing
  } catch (err) {
    unreadable.push({
      key: file.key,
      version: file.version,
      size: file.size,
      kind: 'history',
      reasonCode: reader.problem(file.key, 'history', err),
    });
    return undefined;
  }
}

/** The run's batch files, read one after another, and the snapshots their readable members hold. */
async function readBatches<P>(
  reader: RunReader<P>,
  files: RawRun,
  unreadable: UnreadableFile[],
): Promise<{ batches: InventoryBatch[]; batchFound: Found[] }> {
  const { storage, profile, limit } = reader;
  const batches: InventoryBatch[] = [];
  const batchFound: Found[] = [];
  for (const file of files.batches) {
    try {
      const members = await limit(async () => {
        const stored = await getBounded(storage, file.key, documentReadLimit(profile));
        return stored ? decodeBatchFile(storage, profile, file.key, stored.bytes) : undefined;
      });
      if (!members) continue;
      const memberIds: string[] = [];
      let bad = 0;
      for (const m of members) {
        if (m.ok) {
          memberIds.push(m.snapshot.id);
          batchFound.push({ meta: metaOf(m.snapshot), batch: file.key });
        } else {
          bad++;
          reader.problem(`${file.key}#${m.position}`, 'batch', m.error);
        }
      }
      batches.push({ key: file.key, version: file.version, size: file.size, memberIds, unreadableMembers: bad });
    } catch (err) {
      unreadable.push({
        key: file.key,
        version: file.version,
        size: file.size,
        kind: 'batch',
        reasonCode: reader.problem(file.key, 'batch', err),
      });
    }
  }
  return { batches, batchFound };
}

/** A snapshot being put together from every file that holds it. */
interface Building {
  meta: Meta;
  files: (RetentionFile & { compressed: boolean })[];
  batches: string[];
  parts: RetentionFile[];
  latest: boolean;
}

/**
 * The run's snapshots, one per id (a plain entry, its .gz twin and batch copies are the same
 * snapshot), in (sequence, time, id) order, with their part files; parts no snapshot owns
 * are orphans.
 */
function assembleSnapshots(
  runId: string,
  found: readonly (Found | undefined)[],
  latestMeta: Meta | undefined,
  parts: readonly RawFile[],
): { snapshots: InventorySnapshot[]; orphanParts: (RetentionFile & { sequence: number })[] } {
  const byIdBuilding = new Map<string, Building>();
  for (const f of found) {
    if (!f) continue;
    let b = byIdBuilding.get(f.meta.id);
    if (!b) byIdBuilding.set(f.meta.id, (b = { meta: f.meta, files: [], batches: [], parts: [], latest: false }));
    if (f.file) b.files.push({ key: f.file.key, version: f.file.version, size: f.file.size, compressed: f.file.compressed });
    if (f.batch) b.batches.push(f.batch);
  }
  if (latestMeta) {
    const held = byIdBuilding.get(latestMeta.id);
    if (held) held.latest = true;
    else byIdBuilding.set(latestMeta.id, { meta: latestMeta, files: [], batches: [], parts: [], latest: true });
  }

  const bySeq = new Map<number, Building>();
  for (const b of byIdBuilding.values()) if (!bySeq.has(b.meta.sequence)) bySeq.set(b.meta.sequence, b);
  const orphanParts: (RetentionFile & { sequence: number })[] = [];
  for (const part of parts) {
    const owner = bySeq.get(part.sequence!);
    const f = { key: part.key, version: part.version, size: part.size };
    if (owner) owner.parts.push(f);
    else orphanParts.push({ ...f, sequence: part.sequence! });
  }

  const snapshots: InventorySnapshot[] = [...byIdBuilding.values()].map((b) => {
    const createdAtMs = Date.parse(b.meta.createdAt);
    return {
      runId,
      id: b.meta.id,
      sequence: b.meta.sequence,
      createdAt: b.meta.createdAt,
      createdAtMs: Number.isNaN(createdAtMs) ? 0 : createdAtMs,
      status: b.meta.status,
      ...(b.meta.source !== undefined ? { source: b.meta.source } : {}),
      files: b.files.sort((x, y) => Number(x.compressed) - Number(y.compressed)),
      batches: b.batches.sort(compareStrings),
      parts: b.parts.sort((x, y) => compareStrings(x.key, y.key)),
      latest: b.latest,
      origin: b.meta.origin,
    };
  });
  snapshots.sort(compareInventorySnapshots);
  return { snapshots, orphanParts };
}

/** The run's summary file; its `last_checkpoint_at` is read only for a run with nothing else left, which it ranks. */
async function readSummary<P>(reader: RunReader<P>, files: RawRun, nothingElse: boolean): Promise<InventoryRun['summary']> {
  if (!files.summary) return undefined;
  let summary: InventoryRun['summary'] = { key: files.summary.key, version: files.summary.version, size: files.summary.size };
  // Only a run with nothing else left is ranked by its summary.
  if (nothingElse) {
    const key = files.summary.key;
    const stored = await reader.limit(() => reader.storage.get(key));
    if (stored) {
      try {
        const doc = decodeRetentionSummary(stored.bytes, files.summary.key);
        summary = { ...summary, version: stored.version, lastCheckpointAtMs: Date.parse(doc.last_checkpoint_at) };
      } catch (err) {
        reader.problem(files.summary.key, 'summary', err);
      }
    }
  }
  return summary;
}
