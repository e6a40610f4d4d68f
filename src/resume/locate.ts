import { CheckpointError, isCheckpointError } from '../contract/errors.js';
import { assertStorageProfileOptions } from '../contract/arguments.js';
import type { ReasonCode } from '../contract/reason-codes.js';
import { decodeRunIndex, type RunIndex } from '../codec/run-index.js';
import type { Snapshot } from '../contract/snapshot.js';
import { decodeBatchFile } from '../snapshot-io/batch-file.js';
import type { Profile } from '../contract/profile.js';
import { GZIP_SUFFIX, type KeyInfo, type ProfileLayout } from '../contract/layout.js';
import { historyKeyOfSequence, runListPrefix } from '../snapshot-io/layout-probe.js';
import { decodeStoredSnapshotTolerant } from '../snapshot-io/read-snapshot.js';
import { documentReadLimit, getBounded, indexReadLimit } from '../snapshot-io/bounded-read.js';
import type { DocumentClaims, ForeignReadWarning } from '../contract/document-format.js';
import { mapLimit } from '../storage/map-limit.js';
import { batchRange, identityIssue, refusalIssue } from '../snapshot-io/refusal.js';
import type { StorageAdapter } from '../contract/storage.js';
import { numberByRunOrder, type RunOrderEntry } from '../snapshot-io/run-order.js';

/**
 * How {@link locateNewestSnapshot} makes sure no snapshot is newer than the one `latest`
 * (or, when `latest` is unusable, the index's highest entry) gave. A crash between a
 * snapshot's history write and its `latest` write (the writer's order is history → latest
 * → index) leaves a history entry newer than both.
 *
 * - `'auto'`: `'probe'` when the layout derives history keys from the sequence (and
 *   trigger), else `'lock'`.
 * - `'probe'`: read the keys the next sequence would have (one per trigger, plus `.gz`
 *   forms when history may be compressed), in parallel, and keep going while one exists.
 *   A bounded number of reads, independent of history size; exact for the crash gap.
 *   On a layout whose keys cannot be derived, acts as `'scan'`.
 * - `'lock'`: read the run's writer lock; a lock left behind means the last writer did
 *   not close cleanly (or is still running), and only then scan. Two reads on the happy
 *   path; relies on writers removing their lock on `close()`.
 * - `'scan'`: always list the run's files (the fallback path). Exact under any damage,
 *   but one listing whose size grows with history.
 * - `'none'`: trust what `latest` or the index gave.
 *
 * Whatever the mode, a snapshot whose document carries no number (`checkpoint_sequence_derived`)
 * makes the planner read every file of the run: such snapshots are numbered by the run's order.
 */
export type NewerCheck = 'auto' | 'probe' | 'lock' | 'scan' | 'none';

/** Where the restored snapshot was found. */
export type SnapshotOrigin = 'latest' | 'probe' | 'index' | 'scan';

/** A stored file the planner could not use, and why. */
export interface SkippedFile {
  /** The storage key; a batch file member is `<key>#<position>`. */
  readonly key: string;
  /** What the file is in the profile's layout. */
  readonly kind: 'latest' | 'history' | 'batch' | 'index';
  /** Stable reason code (`checkpoint_schema_invalid`, `checkpoint_integrity_mismatch`, `checkpoint_not_found`, …). */
  readonly reasonCode: ReasonCode;
  /** What is wrong, without payload contents. */
  readonly message: string;
  /** What the file's name and content still say it holds (sequence, id, trigger), when anything. */
  readonly claims?: DocumentClaims;
  /**
   * Why the file was refused, in one line: the first failing field and what is wrong with it
   * (`/last_activity Invalid ISO datetime`), or the identity that disagrees with the file's
   * place (`the document names run "a", its place in the store names run "b"`). `savepoint
   * verify` reports the same words for the same file.
   */
  readonly issue: string;
}

/** Options of {@link locateNewestSnapshot}. */
export interface LocateSnapshotOptions<P> {
  /** Where the run's files are. */
  readonly storage: StorageAdapter;
  /** The profile the run was written with (layout, document format). */
  readonly profile: Profile<P>;
  /** The run to resume. */
  readonly runId: string;
  /** See {@link NewerCheck}. @default 'auto' */
  readonly newerCheck?: NewerCheck;
  /** Storage reads in flight at once while scanning. @default 8 */
  readonly concurrency?: number;
  /** Consecutive sequences `'probe'` follows before it switches to a scan. @default 16 */
  readonly maxProbe?: number;
}

/** The result of {@link locateNewestSnapshot}. */
export interface LocatedSnapshot<P> {
  /** The newest valid snapshot of the run. */
  readonly snapshot: Snapshot<P>;
  /** The key it was read from. */
  readonly key: string;
  /** Its position in a batch file, when it came from one. */
  readonly batchPosition?: number;
  /** How it was found. */
  readonly origin: SnapshotOrigin;
  /** What `latest` was: valid and newest, valid but older than another snapshot, invalid, or missing. */
  readonly latest: 'valid' | 'stale' | 'invalid' | 'missing';
  /** Files that could not be used, with their reason codes, in the order they were read. */
  readonly skipped: readonly SkippedFile[];
  /** The highest sequence any file of the run is known to hold or claim (names, index, documents). */
  readonly highestSequence: number;
  /** Other valid snapshots that carry the restored snapshot's sequence with a different id. */
  readonly duplicates: number;
  /** Storage calls made: `get` reads and `list` calls. */
  readonly reads: { readonly get: number; readonly list: number };
  /**
   * Why the restored snapshot was read tolerantly (another tool wrote it, or edited a
   * single-artifact file after savepoint sealed it); empty for a strict read.
   */
  readonly readWarnings: readonly ForeignReadWarning[];
  /**
   * Set when `latest` holds a snapshot another tool wrote that no history entry holds, whose
   * sequence its content does not carry (a hand-off `checkpoint: handoff-final`), and that is
   * newer by time than every history entry read: it is resumed, numbered after the history.
   */
  readonly renumbered?: { readonly from: number; readonly to: number };
}

/** Reason codes that mean "this file's content is unusable" rather than "storage failed". */
const CONTENT_ERRORS = new Set<ReasonCode>([
  'checkpoint_schema_invalid',
  'checkpoint_integrity_mismatch',
  'checkpoint_not_found',
  'checkpoint_too_large',
]);

/** The keys history entry `sequence` of `runId` can have, one per trigger (and `.gz` forms). */
function nextHistoryKeys(profile: Profile<unknown>, runId: string, sequence: number): string[] {
  const layout = profile.layout;
  const keys = new Set<string>();
  for (const source of Object.keys(profile.triggers)) {
    let key: string;
    try {
      key = historyKeyOfSequence(layout, runId, sequence, source);
    } catch {
      continue; // a trigger name the layout cannot put in a key is never written either
    }
    keys.add(key);
    if (profile.compressHistory) keys.add(`${key}${GZIP_SUFFIX}`);
  }
  return [...keys];
}

/** `key` without a trailing `.gz`. */
export const stripGz = (key: string): string => (key.endsWith(GZIP_SUFFIX) ? key.slice(0, -GZIP_SUFFIX.length) : key);

/** A snapshot found, and where. */
interface Found<P> {
  snapshot: Snapshot<P>;
  key: string;
  origin: SnapshotOrigin;
  batchPosition?: number;
  warnings: readonly ForeignReadWarning[];
}

/** True when the read says the snapshot's number is only provisional (its document carries none). */
const sequenceDerived = (warnings: readonly ForeignReadWarning[]): boolean => warnings.includes('checkpoint_sequence_derived');

interface Candidate {
  key: string;
  info: KeyInfo;
  /** Upper bound of the sequences the file holds, when known without reading it. */
  hint?: number;
  hintFrom?: 'name' | 'index';
}

/** Internal state of one locate call. */
class Search<P> {
  best: Found<P> | undefined;
  readonly skipped: SkippedFile[] = [];
  /** Snapshots whose documents carry no number, by id (the first copy read: `latest` before history); numbered by the run's order once all are read. */
  readonly derived = new Map<string, Found<P>>();
  /** The numbered snapshots considered, for the run's order. */
  private readonly numbered: RunOrderEntry[] = [];
  highest = 0;
  duplicates = 0;
  gets = 0;
  lists = 0;
  /** Files already read (by the key asked for): what they held, so no file is read or reported twice. */
  private readonly read = new Map<string, Snapshot<P>[] | undefined>();
  private indexLoaded = false;
  private indexDoc: RunIndex | undefined;

  constructor(
    readonly storage: StorageAdapter,
    readonly profile: Profile<P>,
    readonly runId: string,
  ) {}

  /** The ids of the snapshots read from history and batch files. */
  readIds(): Set<string> {
    const ids = new Set<string>();
    for (const found of this.read.values()) for (const s of found ?? []) ids.add(s.id);
    return ids;
  }

  /** A snapshot file's bytes (an index's with `limit: 'index'`); one over the profile's limit is refused unread. */
  async get(key: string, limit: 'document' | 'index' = 'document'): Promise<Uint8Array | undefined> {
    this.gets++;
    const max = limit === 'index' ? indexReadLimit(this.profile) : documentReadLimit(this.profile);
    return (await getBounded(this.storage, key, max))?.bytes;
  }

  /** Whether `key` holds something: a file too large to read is there all the same (and reported when read). */
  async exists(key: string): Promise<boolean> {
    try {
      return (await this.get(key)) !== undefined;
    } catch (err) {
      if (isCheckpointError(err, 'checkpoint_too_large')) return true;
      throw err;
    }
  }

  /** {@link get}, a file too large to read reported as skipped and answered `'too-large'`. */
  async getOrTooLarge(
    key: string,
    kind: SkippedFile['kind'],
    limit: 'document' | 'index' = 'document',
  ): Promise<Uint8Array | undefined | 'too-large'> {
    try {
      return await this.get(key, limit);
    } catch (err) {
      if (!isCheckpointError(err, 'checkpoint_too_large')) throw err;
      this.skip(key, kind, err.reasonCode, err.message);
      return 'too-large';
    }
  }

  skip(
    key: string,
    kind: SkippedFile['kind'],
    reasonCode: ReasonCode,
    message: string,
    issue = refusalIssue({ reasonCode, message }, key),
    claims?: DocumentClaims,
  ): void {
    this.skipped.push({ key, kind, reasonCode, message, issue, ...(claims ? { claims } : {}) });
  }

  /** Records a decode failure as a skipped file, or rethrows a storage failure. */
  skipError(key: string, kind: SkippedFile['kind'], err: unknown, bytes?: Uint8Array, info?: KeyInfo): void {
    if (isCheckpointError(err)) {
      if (!CONTENT_ERRORS.has(err.reasonCode)) throw err;
      this.skip(key, kind, err.reasonCode, err.message, refusalIssue(err, key), this.claimsOf(bytes, info));
      return;
    }
    // A custom document format that throws on garbage: the file is unusable, not the store.
    const message = `${key} cannot be decoded (${err instanceof Error ? err.name : 'error'})`;
    this.skip(key, kind, 'checkpoint_schema_invalid', message, undefined, this.claimsOf(bytes, info));
  }

  /** What a refused file says it holds: its content's claims, else its name's. */
  claimsOf(bytes: Uint8Array | undefined, info: KeyInfo | undefined): DocumentClaims | undefined {
    let content: DocumentClaims | undefined;
    try {
      content = bytes !== undefined ? this.profile.document.claimsOf?.(bytes) : undefined;
    } catch {
      content = undefined; // a hook that throws says nothing
    }
    const claims: { sequence?: number; id?: string; source?: string } = {};
    const sequence = content?.sequence ?? (info?.kind === 'history' ? info.sequence : undefined);
    const id = content?.id ?? (info?.kind === 'history' ? info.snapshotId : undefined);
    const source = content?.source ?? (info?.kind === 'history' ? info.source : undefined);
    if (sequence !== undefined) claims.sequence = sequence;
    if (id !== undefined) claims.id = id;
    if (source !== undefined) claims.source = source;
    return Object.keys(claims).length > 0 ? claims : undefined;
  }

  /** The run's index, read and decoded once (`undefined` when absent or undecodable, which is reported). */
  async index(): Promise<RunIndex | undefined> {
    if (this.indexLoaded) return this.indexDoc;
    this.indexLoaded = true;
    const key = this.profile.layout.indexKey?.(this.runId);
    if (key === undefined) return undefined;
    const bytes = await this.getOrTooLarge(key, 'index', 'index');
    if (bytes === undefined || bytes === 'too-large') return undefined;
    try {
      this.indexDoc = decodeRunIndex(bytes, key);
    } catch (err) {
      this.skipError(key, 'index', err);
    }
    return this.indexDoc;
  }

  /** Checks that a decoded snapshot belongs where it was found; records it as skipped (a schema error, not a broken seal) if not. */
  belongs(snapshot: Snapshot<P>, key: string, kind: SkippedFile['kind'], info: KeyInfo | undefined): boolean {
    const issue = identityIssue(snapshot as Snapshot<unknown>, this.runId, key, info);
    if (issue === undefined) return true;
    this.skip(key, kind, 'checkpoint_schema_invalid', `${key}: ${issue}`, issue);
    return false;
  }

  /** Whether `key` was read (or found missing) already. */
  wasRead(key: string): boolean {
    return this.read.has(key);
  }

  consider(
    snapshot: Snapshot<P>,
    key: string,
    origin: SnapshotOrigin,
    batchPosition?: number,
    warnings: readonly ForeignReadWarning[] = [],
  ): void {
    if (sequenceDerived(warnings)) {
      // Its number depends on the whole run: decided once every file is read (settleDerived).
      if (!this.derived.has(snapshot.id))
        this.derived.set(snapshot.id, { snapshot, key, origin, warnings, ...(batchPosition !== undefined ? { batchPosition } : {}) });
      return;
    }
    this.numbered.push({ id: snapshot.id, createdAt: snapshot.createdAt, sequence: snapshot.sequence });
    this.considerNumbered(snapshot, key, origin, batchPosition, warnings);
  }

  /**
   * Numbers the snapshots whose documents carry none by the run's order (`numberByRunOrder`)
   * and considers them; one older by time than a numbered snapshot with a lower number (no
   * free number fitted) is older history: it counts for the highest number, never as the newest.
   */
  settleDerived(): void {
    if (this.derived.size === 0) return;
    const numbers = numberByRunOrder([
      ...this.numbered,
      ...[...this.derived.values()].map((d) => ({ id: d.snapshot.id, createdAt: d.snapshot.createdAt })),
    ]);
    for (const d of this.derived.values()) {
      const n = numbers.get(d.snapshot.id);
      if (n === undefined) continue; // a numbered copy of the same snapshot was read: that one counts
      this.highest = Math.max(this.highest, n.sequence);
      if (!n.outOfOrder) this.considerNumbered({ ...d.snapshot, sequence: n.sequence }, d.key, d.origin, d.batchPosition, d.warnings);
    }
  }

  private considerNumbered(
    snapshot: Snapshot<P>,
    key: string,
    origin: SnapshotOrigin,
    batchPosition: number | undefined,
    warnings: readonly ForeignReadWarning[],
  ): void {
    this.highest = Math.max(this.highest, snapshot.sequence);
    const best = this.best;
    if (best && snapshot.sequence === best.snapshot.sequence) {
      if (snapshot.id !== best.snapshot.id) this.duplicates++;
      return;
    }
    if (!best || snapshot.sequence > best.snapshot.sequence) {
      this.best = { snapshot, key, origin, warnings, ...(batchPosition !== undefined ? { batchPosition } : {}) };
    }
  }

  /**
   * Reads one snapshot file (or batch file), once, and considers every valid snapshot in
   * it. Returns those snapshots, or `undefined` when the file does not exist.
   */
  async readCandidate(key: string, info: KeyInfo, origin: SnapshotOrigin): Promise<Snapshot<P>[] | undefined> {
    if (this.read.has(key)) return this.read.get(key);
    const kind = info.kind === 'batch' ? 'batch' : 'history';
    let bytes: Uint8Array | undefined | 'too-large' = await this.getOrTooLarge(key, kind);
    let actualKey = key;
    if (bytes === undefined && info.kind === 'history' && this.profile.compressHistory) {
      // An index may still name the plain key of an entry retention has since gzipped, or the reverse.
      actualKey = key.endsWith(GZIP_SUFFIX) ? stripGz(key) : `${key}${GZIP_SUFFIX}`;
      if (this.read.has(actualKey)) return this.read.get(actualKey);
      bytes = await this.getOrTooLarge(actualKey, kind);
    }
    if (bytes === 'too-large') {
      // There, but unusable: reported as skipped, like a file that does not decode.
      this.read.set(key, []);
      this.read.set(actualKey, []);
      return [];
    }
    const found = bytes === undefined ? undefined : await this.decode(actualKey, bytes, info, origin);
    this.read.set(key, found);
    if (bytes !== undefined) this.read.set(actualKey, found);
    return found;
  }

  /** Decodes one snapshot file (or batch file) and considers every valid snapshot in it. */
  private async decode(actualKey: string, bytes: Uint8Array, info: KeyInfo, origin: SnapshotOrigin): Promise<Snapshot<P>[]> {
    const kind = info.kind === 'batch' ? 'batch' : 'history';
    if (info.kind === 'batch') {
      let members;
      try {
        members = await decodeBatchFile(this.storage, this.profile, actualKey, bytes);
      } catch (err) {
        this.skipError(actualKey, kind, err);
        return [];
      }
      const found: Snapshot<P>[] = [];
      for (const [position, member] of members.entries()) {
        if (!member.ok) {
          this.skipError(`${actualKey}#${member.position}`, kind, member.error);
          continue;
        }
        if (!this.belongs(member.snapshot, `${actualKey}#${position}`, kind, info)) continue;
        this.consider(member.snapshot, actualKey, origin, position);
        found.push(member.snapshot);
      }
      return found;
    }
    try {
      const { snapshot, warnings } = await decodeStoredSnapshotTolerant(this.storage, this.profile, actualKey, bytes);
      if (!this.belongs(snapshot, actualKey, kind, info)) return [];
      this.consider(snapshot, actualKey, origin, undefined, warnings);
      return [snapshot];
    } catch (err) {
      this.skipError(actualKey, kind, err, bytes, info);
      return [];
    }
  }
}

/**
 * Cross-checks an index against the layout: the run id, strictly ascending sequences,
 * and every entry's path against what its file name says. The index carries no
 * checksum (phased-workflow-github.md's `index_schema`), so these checks are what let the
 * planner use it to order files and stop early; an index that fails them is still used
 * to find files, but not to order them.
 */
export function indexConsistent(
  index: RunIndex,
  runId: string,
  profile: Profile<unknown>,
  resolve: (path: string) => { key: string; info: KeyInfo } | undefined,
): boolean {
  if (index.run_id !== runId || index.checkpoint_count !== index.checkpoints.length) return false;
  const statuses = new Set(profile.statuses.all);
  let previous = 0;
  for (const entry of index.checkpoints) {
    if (entry.sequence <= previous) return false;
    previous = entry.sequence;
    if (entry.status !== undefined && !statuses.has(entry.status)) return false;
    const target = resolve(entry.file_path);
    if (!target) return false;
    const { info } = target;
    if (info.kind === 'history') {
      if (info.sequence !== undefined && info.sequence !== entry.sequence) return false;
      if (info.snapshotId !== undefined && info.snapshotId !== entry.checkpoint_id) return false;
      if (info.source !== undefined && info.source !== entry.trigger) return false;
    } else if (info.sequence !== undefined && entry.sequence < info.sequence) {
      return false;
    }
  }
  return true;
}

/** Maps an index entry's `file_path` (as the spec writes it, possibly with a leading `/` or relative to the run folder) to a key of this run. */
export function indexPathResolver(profile: Profile<unknown>, runId: string): (path: string) => { key: string; info: KeyInfo } | undefined {
  const layout = profile.layout;
  const latest = layout.latestKey(runId);
  const runFolder = latest.slice(0, latest.lastIndexOf('/') + 1);
  return (path) => {
    const plain = path.replace(/^\/+/, '');
    for (const key of [plain, `${runFolder}${plain}`]) {
      const info = layout.classify(key);
      if (info && info.runId === runId && (info.kind === 'history' || info.kind === 'batch')) return { key, info };
    }
    return undefined;
  };
}

/** The run's history and batch files, from one listing. */
export async function listRunSnapshotFiles(storage: StorageAdapter, layout: ProfileLayout, runId: string): Promise<Map<string, KeyInfo>> {
  const files = new Map<string, KeyInfo>();
  for await (const entry of storage.list(runListPrefix(layout, runId))) {
    const info = layout.classify(entry.key);
    if (info && info.runId === runId && (info.kind === 'history' || info.kind === 'batch')) files.set(entry.key, info);
  }
  return files;
}

/**
 * Finds the newest valid snapshot of a run, following phased-workflow-github.md's
 * `resume_process` ("fetch latest.json; if missing, fetch index.json and load highest
 * sequence") and falling back to a scan of history:
 *
 * 1. read `latest`;
 * 2. if it is missing or invalid, read the index and its highest entry's file, which must
 *    hold exactly the snapshot (sequence and id) the entry names;
 * 3. from the snapshot found, check cheaply for a newer one (see {@link NewerCheck}) —
 *    O(1) reads on the happy path, whatever the history size;
 * 4. when nothing was found, or the check asks for it: list the run's history and batch
 *    files once and read them newest first (by the sequence their names carry, or a
 *    consistent index gives), stopping as soon as no unread file can be newer; files whose
 *    sequence nothing tells are all read.
 *
 * Every candidate is validated (JSON Schema, then checksum, parts resolved). A file that
 * fails is skipped and reported, never fatal while a valid one exists; a storage failure
 * (unavailable, rate-limited) is thrown, because resuming from an older snapshot when the
 * newest merely could not be read would lose work.
 *
 * @throws `checkpoint_not_found` when the run has no files at all,
 *   `checkpoint_no_valid_snapshot` when it has files but none is valid.
 */
export async function locateNewestSnapshot<P>(options: LocateSnapshotOptions<P>): Promise<LocatedSnapshot<P>> {
  assertStorageProfileOptions(options, 'locateNewestSnapshot');
  const { storage, profile, runId } = options;
  profile.assertRunId(runId);
  const layout = profile.layout;
  const concurrency = Math.max(1, options.concurrency ?? 8);
  const maxProbe = Math.max(1, options.maxProbe ?? 16);
  const mode = options.newerCheck ?? 'auto';
  const search = new Search<P>(storage, profile, runId);
  const latestKey = layout.latestKey(runId);

  // 1. latest
  let latestState: LocatedSnapshot<P>['latest'] = 'missing';
  let foreignLatest: { snapshot: Snapshot<P>; warnings: readonly ForeignReadWarning[] } | undefined;
  const latestRead = await search.getOrTooLarge(latestKey, 'latest');
  if (latestRead === 'too-large') latestState = 'invalid';
  const latestBytes = latestRead === 'too-large' ? undefined : latestRead;
  if (latestBytes !== undefined) {
    latestState = 'invalid';
    try {
      const { snapshot, warnings } = await decodeStoredSnapshotTolerant(storage, profile, latestKey, latestBytes);
      if (search.belongs(snapshot, latestKey, 'latest', undefined)) {
        latestState = 'valid';
        search.consider(snapshot, latestKey, 'latest', undefined, warnings);
        if (warnings.length > 0) foreignLatest = { snapshot, warnings };
      }
    } catch (err) {
      search.skipError(latestKey, 'latest', err, latestBytes);
    }
  }

  // 2. the index's highest entry
  let anchored = search.best !== undefined;
  if (!anchored && mode !== 'scan') anchored = await fromIndexTop(search);

  // 3. a newer snapshot than the one found?
  let needScan = !anchored || mode === 'scan';
  // Another tool wrote what was found: its history names may not be the ones the probe derives
  // (the spec's n8n node writes unpadded `cp_{sequence}_…`), so list the run rather than probe.
  if (!needScan && mode === 'auto' && (search.best?.warnings.length ?? 0) > 0) needScan = true;
  if (!needScan && mode !== 'none') needScan = await newerExists(search, mode, maxProbe);
  if (search.derived.size > 0) needScan = true; // numbered by the whole run (settleDerived): every file is read

  // 4. the history scan
  if (needScan) await scan(search, concurrency);
  search.settleDerived();

  const best = search.best;
  if (!best) {
    if (latestBytes === undefined && search.skipped.length === 0 && search.highest === 0) {
      throw new CheckpointError('checkpoint_not_found', `run ${runId} has no snapshots`, { details: { runId } });
    }
    throw noValidSnapshot(runId, search.skipped);
  }
  const renumbered = foreignLatest ? orphanLatest(search, foreignLatest.snapshot) : undefined;
  if (renumbered && foreignLatest) {
    search.best = {
      snapshot: { ...foreignLatest.snapshot, sequence: renumbered.to },
      key: latestKey,
      origin: 'latest',
      warnings: foreignLatest.warnings,
    };
    search.highest = renumbered.to;
  }
  const found = search.best!;
  if (latestState === 'valid' && found.origin !== 'latest') latestState = 'stale';
  return {
    ...(renumbered ? { renumbered } : {}),
    snapshot: found.snapshot,
    key: found.key,
    ...(found.batchPosition !== undefined ? { batchPosition: found.batchPosition } : {}),
    origin: found.origin,
    latest: latestState,
    skipped: search.skipped,
    highestSequence: Math.max(search.highest, found.snapshot.sequence),
    duplicates: search.duplicates,
    reads: { get: search.gets, list: search.lists },
    readWarnings: found.warnings,
  };
}

/**
 * A foreign `latest` that is older by sequence than the best history entry but no history
 * entry read holds (another id) and that is newer by time: its sequence was only guessed
 * (its id carries no number), so it is the newest, numbered after everything the run claims.
 */
function orphanLatest<P>(search: Search<P>, latest: Snapshot<P>): { from: number; to: number } | undefined {
  const best = search.best;
  if (!best || best.origin === 'latest' || best.snapshot.id === latest.id) return undefined;
  if (!(Date.parse(latest.createdAt) > Date.parse(best.snapshot.createdAt))) return undefined;
  if (search.readIds().has(latest.id)) return undefined;
  return { from: latest.sequence, to: Math.max(search.highest, best.snapshot.sequence) + 1 };
}

/**
 * `checkpoint_no_valid_snapshot`, saying why: the first refused file and its issue in the
 * message, and in `details.issues` each refused file as `<key>: <issue>` (at most 20), beside
 * the keys and reason codes.
 */
function noValidSnapshot(runId: string, skipped: readonly SkippedFile[]): CheckpointError {
  const first = skipped[0];
  const why = first ? `; ${first.key}: ${first.issue}${skipped.length > 1 ? ` (and ${skipped.length - 1} more)` : ''}` : '';
  return new CheckpointError(
    'checkpoint_no_valid_snapshot',
    `run ${runId}: none of its ${skipped.length} snapshot file(s) passed validation${why}`,
    {
      details: {
        runId,
        skipped: skipped.length,
        keys: skipped.slice(0, 20).map((s) => s.key),
        reasonCodes: [...new Set(skipped.map((s) => s.reasonCode))],
        issues: skipped.slice(0, 20).map((s) => `${s.key}: ${s.issue}`),
      },
    },
  );
}

/**
 * Step 2: the file of the index's highest entry. The index has no checksum, so its word
 * is taken (true) only when its cheap invariants hold (run id, count, strictly ascending
 * sequences) and the file holds exactly the snapshot the entry names; anything else
 * leaves it to the scan.
 */
async function fromIndexTop<P>(search: Search<P>): Promise<boolean> {
  const index = await search.index();
  if (!index || index.run_id !== search.runId || index.checkpoint_count !== index.checkpoints.length) return false;
  for (let i = 1; i < index.checkpoints.length; i++) if (index.checkpoints[i]!.sequence <= index.checkpoints[i - 1]!.sequence) return false;
  const top = index.checkpoints[index.checkpoints.length - 1];
  if (!top) return false;
  const target = indexPathResolver(search.profile as Profile<unknown>, search.runId)(top.file_path);
  if (!target) return false;
  const found = await search.readCandidate(target.key, target.info, 'index');
  // Whatever the file held counts; but only the named snapshot makes the index's word good.
  return found?.some((s) => s.sequence === top.sequence && s.id === top.checkpoint_id) ?? false;
}

/** Step 3: whether something newer than the best snapshot so far may exist (probing the next sequences where it can). */
async function newerExists<P>(search: Search<P>, mode: NewerCheck, maxProbe: number): Promise<boolean> {
  const { profile, runId } = search;
  const layout = profile.layout;
  const probe = (mode === 'auto' || mode === 'probe') && layout.historyKeyFrom === 'sequence';
  if (probe) {
    let sequence = search.best!.snapshot.sequence + 1;
    for (let steps = 0; steps < maxProbe; steps++, sequence++) {
      const keys = nextHistoryKeys(profile as Profile<unknown>, runId, sequence);
      const present = (await Promise.all(keys.map(async (key) => ((await search.exists(key)) ? key : undefined)))).filter(
        (k): k is string => k !== undefined,
      );
      if (present.length === 0) return false;
      search.highest = Math.max(search.highest, sequence);
      for (const key of present)
        await search.readCandidate(key, layout.classify(key) ?? { kind: 'history', runId, compressed: false }, 'probe');
    }
    return true; // a long run of newer entries: something is off, look at everything
  }
  if (mode === 'probe') return true;
  // A lock left behind means the last writer did not close cleanly (or is still running).
  // One that cannot be read is there all the same: scan (the scan reads what matters, and
  // throws itself if the store is really down), rather than fail over a hint.
  try {
    return await search.exists(layout.lockKey(runId));
  } catch (err) {
    if (isCheckpointError(err)) return true;
    throw err;
  }
}

/** What one scan knows while it reads: whether the run's index may still order the files. */
interface ScanState<P> {
  readonly search: Search<P>;
  readonly indexKey: string | undefined;
  readonly concurrency: number;
  /** The index agrees with the file names and with every file read so far. */
  indexTrusted: boolean;
}

/** Step 4: the index and one listing; files read newest first until none unread can be newer. */
async function scan<P>(search: Search<P>, concurrency: number): Promise<void> {
  const { storage, profile, runId } = search;
  const layout = profile.layout;
  const resolve = indexPathResolver(profile as Profile<unknown>, runId);
  const indexKey = layout.indexKey?.(runId);
  const index = await search.index();
  const state: ScanState<P> = {
    search,
    indexKey,
    concurrency,
    indexTrusted: index !== undefined && indexConsistent(index, runId, profile as Profile<unknown>, resolve),
  };
  if (index && !state.indexTrusted) {
    search.skip(
      indexKey!,
      'index',
      'checkpoint_integrity_mismatch',
      `${indexKey}: entries disagree with the file names or are out of order; used to find files, not to order them`,
    );
  }

  search.lists++;
  const listed = await listRunSnapshotFiles(storage, layout, runId);
  const all = [...scanCandidates(state, listed, index, resolve).values()];
  // Files whose sequence is unknown until read: all of them must be read.
  await mapLimit(
    all.filter((c) => c.hint === undefined),
    concurrency,
    (c) => readScanCandidate(state, c),
  );
  await readNewestFirst(
    state,
    all.filter((c) => c.hint !== undefined).sort((a, b) => b.hint! - a.hint!),
  );
  // Snapshots without a number of their own are numbered by the whole run: read the rest too.
  if (search.derived.size > 0)
    await mapLimit(
      all.filter((c) => !search.wasRead(c.key)),
      concurrency,
      (c) => readScanCandidate(state, c),
    );
}

/** One candidate per listed file and index entry, keyed without `.gz` so an index path and its compressed file meet. */
function scanCandidates<P>(
  state: ScanState<P>,
  listed: Map<string, KeyInfo>,
  index: RunIndex | undefined,
  resolve: (path: string) => { key: string; info: KeyInfo } | undefined,
): Map<string, Candidate> {
  const { search } = state;
  const candidates = new Map<string, Candidate>();
  for (const [key, info] of listed) {
    const name = info.kind === 'history' ? info.sequence : batchRange(key)?.last;
    if (name !== undefined) search.highest = Math.max(search.highest, name);
    candidates.set(stripGz(key), { key, info, ...(name !== undefined ? { hint: name, hintFrom: 'name' as const } : {}) });
  }
  for (const entry of index?.checkpoints ?? []) {
    const target = resolve(entry.file_path);
    if (!target) continue;
    const id = stripGz(target.key);
    let candidate = candidates.get(id);
    if (!candidate) {
      candidate = { key: target.key, info: target.info };
      candidates.set(id, candidate);
    }
    if (state.indexTrusted) {
      search.highest = Math.max(search.highest, entry.sequence);
      if (candidate.hintFrom !== 'name' && (candidate.hint === undefined || entry.sequence > candidate.hint)) {
        candidate.hint = entry.sequence;
        candidate.hintFrom = 'index';
      }
    }
  }
  return candidates;
}

/** Reads one candidate of a scan; a file that holds other sequences than its index entry says stops the index ordering anything. */
async function readScanCandidate<P>(state: ScanState<P>, c: Candidate): Promise<void> {
  const { search, indexKey } = state;
  const found = await search.readCandidate(c.key, c.info, c.hintFrom === 'index' ? 'index' : 'scan');
  if (found === undefined) {
    search.skip(
      c.key,
      c.info.kind === 'batch' ? 'batch' : 'history',
      'checkpoint_not_found',
      `${c.key} is named by the index or the listing but does not exist`,
      undefined,
      search.claimsOf(undefined, c.info),
    );
    return;
  }
  // A snapshot without a number of its own holds only a provisional one: nothing to check against the index.
  const numbered = found.filter((s) => !search.derived.has(s.id));
  if (c.hintFrom === 'index' && state.indexTrusted && numbered.length > 0) {
    const sequences = numbered.map((s) => s.sequence);
    const top = Math.max(...sequences);
    if (c.info.kind === 'batch' ? !sequences.includes(c.hint!) : top !== c.hint) {
      state.indexTrusted = false;
      search.skip(
        indexKey!,
        'index',
        'checkpoint_integrity_mismatch',
        `${indexKey}: its entry for ${c.key} says sequence ${c.hint}, the file holds ${top}; not used to order files`,
      );
    } else if (top > c.hint!) {
      // A batch file holding members the index does not list: the index is incomplete, so its hints bound nothing.
      state.indexTrusted = false;
    }
  }
}

/**
 * Reads files with a sequence hint, newest first; stops once nothing unread can beat the best
 * (a valid `latest` is already the best, so nothing at or below it is read). Reads start
 * one at a time (the newest is usually valid) and widen while they keep failing. A
 * cursor walks the sorted list once: an index naming 100k missing files costs 100k
 * reads, not 100k passes over the list.
 */
async function readNewestFirst<P>(state: ScanState<P>, sorted: Candidate[]): Promise<void> {
  const { search, concurrency } = state;
  const read = (c: Candidate): Promise<void> => readScanCandidate(state, c);
  let pending = sorted;
  let cursor = 0;
  let width = 1;
  let indexHintsDropped = false;
  for (;;) {
    if (!state.indexTrusted && !indexHintsDropped) {
      // An index entry lied about its file: index hints bound nothing any more, read them all (once).
      indexHintsDropped = true;
      const rest = pending.slice(cursor);
      pending = rest.filter((c) => c.hintFrom !== 'index');
      cursor = 0;
      await mapLimit(
        rest.filter((c) => c.hintFrom === 'index'),
        concurrency,
        read,
      );
      continue;
    }
    const bestSeq = search.best?.snapshot.sequence ?? 0;
    const next: Candidate[] = [];
    while (next.length < width && cursor < pending.length && pending[cursor]!.hint! > bestSeq) next.push(pending[cursor++]!);
    if (next.length === 0) break;
    await Promise.all(next.map(read));
    width = Math.min(concurrency, width * 2);
  }
}
