import { parseRfc3339, systemClock, toRfc3339 } from '../model/clock.js';
import { CheckpointError, toCheckpointError } from '../model/errors.js';
import { newUuidV4 } from '../model/ids.js';
import { indexDeferral, type RunIndexEntry } from '../model/run-index.js';
import type { TriggerRecord } from '../model/snapshot.js';
import { canonicalJson, parseJson } from '../codec/canonical-json.js';
import { encodeBatchFile } from '../profiles/batch-file.js';
import type { Profile } from '../profiles/define-profile.js';
import { defaultProfile, type DefaultTrigger, type LifecycleStatus } from '../profiles/default-profile.js';
import type { JsonValue } from '../codec/canonical-json.js';
import type { HistoryRef } from '../profiles/layout.js';
import { carriedRecords, latestOnlyRecords, shouldCoalesce, type CoalesceBase } from './coalescing.js';
import { isPreservedRun, perRunPolicyOf, planPrune } from './auto-retention.js';
import { createWriterEmitter } from './events.js';
import { createHeartbeat, settleBeat } from './heartbeat.js';
import { executeWrite, type CreateOp, type IndexState, type ReplaceOp, type WritePlan, type WriteReport } from './ordered-write.js';
import { retryAfterFirst, withRetry } from './retry.js';
import { createRunLock, defaultIsProcessAlive, defaultLockIdentity, type RunLock } from './run-lock.js';
import { recoverRun, type HeadLocation } from './sequence-recovery.js';
import { joinHeldHead, pushHeldAtRunEnd, repointEntries } from './held-batch.js';
import { encodeForStorage, encodeForStorageSync, type SizePolicy, type SnapshotHeader, type StorableSnapshot } from './size-limit.js';
import { materialText, sameMaterial, validateTrigger, type MaterialState, type ValidatedTrigger } from './triggers.js';
import type { CheckpointFailure, CheckpointInput, CheckpointResult, CheckpointSuccess, CheckpointWriter, WriterEventMap, WriterOptions } from './types.js';
import { assertOptionsArgument } from '../model/arguments.js';
import { isBufferedStorage, rateBudgetOf } from '../storage/buffered.js';

/** A checkpoint call waiting in the queue. */
interface Job<P> {
  readonly trigger: ValidatedTrigger;
  readonly resolve: (result: CheckpointResult<P>) => void;
  /**
   * Later calls with the same material state, queued right behind this one. They can only
   * coalesce (or, past the window, repeat the state), so a burst of identical triggers takes
   * one queue slot instead of exhausting the bound.
   */
  readonly riders: Job<P>[];
}

/** The newest durable snapshot: the coalescing base, and what a coalesced trigger rewrites. */
interface Head<P> {
  /** Everything but the payload (private: results carry their own copies). */
  readonly header: SnapshotHeader<P>;
  /** The payload's canonical JSON: what a rewrite stores again, whatever the caller did to its objects. */
  readonly payloadText: string;
  /** Its pieces, when it holds big strings by reference (a rewrite encodes them piece by piece). */
  readonly payloadPieces?: readonly string[];
  /** Its material state (the coalescing key). */
  readonly state: MaterialState;
  readonly createdAtMs: number;
  readonly location: HeadLocation;
  /** Main document bytes as stored (batch-file members are re-encoded from these). */
  readonly bytes?: Uint8Array;
  /** Immutable history: coalesced triggers `latest` holds and the head's history entry lacks (the next snapshot's entry carries them). */
  readonly latestOnly: readonly TriggerRecord[];
}

/** A new snapshot planned in the current group. */
interface Planned<P> {
  /** Replaced when coalesced triggers are added to its `source_details`. */
  draft: SnapshotHeader<P>;
  readonly payloadText: string;
  /** Its pieces, when it holds big strings by reference (encoded piece by piece). */
  readonly payloadPieces?: readonly string[];
  readonly state: MaterialState;
  readonly createdAtMs: number;
  readonly creator: Job<P>;
  readonly coalesced: Job<P>[];
  readonly details: TriggerRecord[];
  stored: StorableSnapshot<P>;
  /** Where the document goes (history entry, batch file, or latest). */
  key: string;
}

/** No trigger records (shared, never changed: `carried` is only read). */
const NO_RECORDS: readonly TriggerRecord[] = Object.freeze([]);

function configError(why: string): CheckpointError {
  return new CheckpointError('checkpoint_config_invalid', `createWriter: ${why}`);
}

const positive = (name: string, value: number | undefined): void => {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) throw configError(`${name} must be a positive number`);
};

/** A payload value JSON would keep only converted, refused (`nonJson: 'error'`): the path, never the value. */
function nonJsonRefused(path: string): CheckpointError {
  return new CheckpointError(
    'checkpoint_schema_invalid',
    `payload value at ${path} is not JSON (a Date or another object with toJSON) and would come back converted; store it as a string or number, or pass nonJson: 'warn'`,
    { details: { paths: [path], reason: 'non_json_value' } },
  );
}

/**
 * Creates the {@link CheckpointWriter} of one run: the object an agent runtime calls at
 * every boundary. It validates triggers against the profile, coalesces triggers that
 * carry no material change, runs the heartbeat, numbers snapshots (recovering the
 * numbering from storage when the run exists), and stores each group of checkpoints in
 * an order no crash can corrupt. By default it never throws into the agent.
 *
 * @example
 * ```ts
 * const writer = createWriter({ storage: memoryStorage(), runId: 'run-1' }); // profile: defaultProfile
 * const r = await writer.checkpoint({ source: 'step_boundary', status: 'in_progress', payload: { step: 1 } });
 * if (r.ok) console.log(r.outcome, r.sequence); else console.warn(r.reasonCode);
 * await writer.close();
 * ```
 */
export function createWriter<P = JsonValue>(
  options: WriterOptions<P, DefaultTrigger, LifecycleStatus> & { readonly profile?: undefined },
): CheckpointWriter<P, DefaultTrigger, LifecycleStatus>;
export function createWriter<P, T extends string = string, S extends string = string>(options: WriterOptions<P, T, S> & { readonly profile: Profile<P, T, S> }): CheckpointWriter<P, T, S>;
export function createWriter<P>(options: WriterOptions<P>): CheckpointWriter<P> {
  assertOptionsArgument(options, 'createWriter');
  const { storage, runId } = options;
  // No profile: the default one (any JSON state). The payload type is the caller's to name;
  // encoding still refuses anything canonical JSON cannot carry.
  const profile = 'profile' in options && options.profile !== undefined ? options.profile : (defaultProfile as unknown as Profile<P>);
  if (!storage || typeof storage.put !== 'function') throw configError('storage must be a StorageAdapter');
  if (!profile || typeof profile.trigger !== 'function') throw configError('profile must come from defineProfile');
  profile.assertRunId(runId);
  const clock = options.clock ?? systemClock;
  const failMode = options.failMode ?? 'result';
  if (failMode !== 'result' && failMode !== 'throw') throw configError("failMode must be 'result' or 'throw'");
  const windowMs = options.coalesceWindowMs ?? profile.coalesceWindowMs;
  if (!(windowMs >= 0)) throw configError('coalesceWindowMs must be >= 0');
  const heartbeatMs = options.heartbeatIntervalMs ?? (profile.heartbeat ? profile.heartbeat.intervalMs : false);
  if (heartbeatMs !== false) positive('heartbeatIntervalMs', heartbeatMs);
  const heartbeatSource = profile.heartbeat ? profile.heartbeat.source : Object.hasOwn(profile.triggers, 'timer') ? 'timer' : undefined;
  const nonJson = options.nonJson ?? 'error';
  if (nonJson !== 'error' && nonJson !== 'warn') throw configError("nonJson must be 'error' or 'warn'");
  // What a beat stores: the caller's heartbeatPayload, else the profile's (fields "since the previous snapshot"), else the last state.
  const beatPayload = options.heartbeatPayload ?? (profile.heartbeat ? profile.heartbeat.payload : undefined);
  const skipUnchangedBeats = profile.heartbeat !== false && profile.heartbeat?.whenUnchanged === 'skip';
  if (heartbeatMs !== false && heartbeatSource === undefined) throw configError(`profile "${profile.name}" has no heartbeat trigger`);
  const maxQueue = options.maxQueue ?? 256;
  positive('maxQueue', maxQueue);
  const maxAttempts = options.maxAttempts ?? 3;
  if (!(Number.isInteger(maxAttempts) && maxAttempts >= 1)) throw configError('maxAttempts must be an integer >= 1');
  const retryBaseMs = options.retryBaseMs ?? 200;
  const retryMaxMs = options.retryMaxMs ?? 5000;
  if (!(retryBaseMs >= 0) || !(retryMaxMs >= 0)) throw configError('retry delays must be >= 0');
  const maxBytes = Math.min(options.maxSnapshotBytes ?? profile.maxSnapshotBytes, storage.capabilities.maxValueBytes ?? Number.POSITIVE_INFINITY);
  positive('maxSnapshotBytes', maxBytes);
  const onOversize = options.onOversize ?? profile.onOversize;
  const lockEnabled = options.lock === undefined || options.lock === 'auto' ? storage.capabilities.crossProcessConditional : options.lock;
  const leaseMs = options.lockLeaseMs ?? 30_000;
  positive('lockLeaseMs', leaseMs);
  const takeover = options.takeover ?? 'stale';
  if (takeover !== 'stale' && takeover !== 'force') throw configError("takeover must be 'stale' or 'force'");
  const batchWhenLow = options.batchWhenBudgetLow ?? true;
  const groupCommit = options.groupCommit ?? true;
  const useAtomicBatch = storage.capabilities.atomicBatch && typeof storage.batch === 'function';
  if (options.autoRetention !== undefined && typeof options.autoRetention !== 'boolean') throw configError('autoRetention must be a boolean');
  const perRunPolicy = options.autoRetention === false || typeof profile.layout.historyKey !== 'function' ? undefined : perRunPolicyOf(profile.retention);
  const autoRetention = perRunPolicy && !perRunPolicy.preserveRunIds.has(runId) ? perRunPolicy : undefined;

  const layout = profile.layout;
  const latestKey = layout.latestKey(runId);
  // History entries are never rewritten: coalesced triggers go to latest, then into the next entry (coalescing.ts).
  const immutableHistory = profile.immutableHistory && typeof layout.historyKey === 'function';
  const indexKey = layout.indexKey?.(runId);
  const activeStatus = profile.statuses.active;
  const emitter = createWriterEmitter();
  const owner = newUuidV4();
  const lock: RunLock | undefined = lockEnabled
    ? createRunLock({
        storage,
        key: layout.lockKey(runId),
        runId,
        owner,
        identity: options.lockIdentity ?? defaultLockIdentity(),
        leaseMs,
        clock,
        isProcessAlive: options.isProcessAlive ?? defaultIsProcessAlive,
        takeover,
        atomic: useAtomicBatch,
        onRenewalError: (error) => emitter.emit('error', { runId, reasonCode: error.reasonCode, error, during: 'lease' }),
      })
    : undefined;
  /** Sequences a previous lock holder claimed and may still write (see run-lock.ts): never reused. */
  let inheritedClaims = 0;

  let closing = false;
  let closed = false;
  let opened = false;
  let needsRecovery = false;
  let lastSequence = 0;
  let nextSequence = 1;
  let head: Head<P> | undefined;
  const index: IndexState = {};
  let unindexed: readonly RunIndexEntry[] = [];
  /** The run's history entries, ascending by sequence (kept only for automatic retention). */
  let history: RunIndexEntry[] = [];
  /** Part files written by this writer, by sequence (deleted with their snapshot). */
  const partsBySequence = new Map<number, string[]>();
  // The last state given (what a heartbeat stores again), and its material text (to tell whether it is news).
  let lastInput: ValidatedTrigger | undefined;
  const queue: Job<P>[] = [];
  let scheduled = false;
  let tail: Promise<unknown> = Promise.resolve();

  const now = (): string => toRfc3339(clock.now());
  const retryOptions = {
    clock,
    attempts: maxAttempts,
    baseMs: retryBaseMs,
    maxMs: retryMaxMs,
    onRetry: (attempt: number, delayMs: number, error: CheckpointError) => emitter.emit('retry', { runId, attempt, delayMs, reasonCode: error.reasonCode }),
  };

  const failure = (error: CheckpointError, during: WriterEventMap['error']['during']): CheckpointFailure => {
    emitter.emit('error', { runId, reasonCode: error.reasonCode, error, during });
    return { ok: false, reasonCode: error.reasonCode, error };
  };

  /** Runs `fn` after everything queued before it: one group commit or open at a time, in call order. */
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = tail.then(fn);
    tail = run.catch(() => undefined);
    return run;
  };

  // What encodeForStorageSync needs of the policy (it never splits): built once, not per checkpoint.
  const withinLimit: SizePolicy = { maxBytes, onOversize };
  const sizePolicy = (ref: HistoryRef, revision: number): SizePolicy => ({
    maxBytes,
    onOversize,
    ...(layout.partKey ? { partKey: (n: number) => layout.partKey!(ref, revision === 0 ? `${n}.json` : `${n}.r${revision}.json`) } : {}),
  });

  const refOf = (d: SnapshotHeader<P>): HistoryRef => ({ runId, id: d.id, sequence: d.sequence, source: d.source });
  const resumeAsOf = (source: string): string | undefined => (Object.hasOwn(profile.triggers, source) ? profile.triggers[source]!.resumeAs : undefined);
  // Frozen: the index encoder then serializes each entry once, however often the index is rewritten.
  const entryOf = (p: Planned<P>, filePath: string): RunIndexEntry =>
    Object.freeze({ sequence: p.draft.sequence, checkpoint_id: p.draft.id, trigger: p.draft.source, timestamp: p.draft.createdAt, file_path: filePath, status: p.draft.status });

  const ensureOpen = async (): Promise<void> => {
    if (opened && !needsRecovery) return;
    let tookOver = false;
    if (!opened && lock && !lock.held) {
      const acquired = await lock.acquire();
      tookOver = acquired.tookOver;
      inheritedClaims = Math.max(inheritedClaims, acquired.inheritedClaims);
    }
    const recovered = await recoverRun(storage, profile, runId);
    lastSequence = Math.max(recovered.lastSequence, inheritedClaims);
    nextSequence = lastSequence + 1;
    index.doc = recovered.index.doc;
    index.version = recovered.index.version;
    unindexed = recovered.unindexed;
    if (autoRetention) {
      const bySequence = new Map<number, RunIndexEntry>();
      for (const e of [...(recovered.index.doc?.checkpoints ?? []), ...recovered.unindexed]) if (e.file_path !== latestKey) bySequence.set(e.sequence, Object.freeze({ ...e }));
      history = [...bySequence.values()].sort((a, b) => a.sequence - b.sequence);
    }
    const s = recovered.head?.snapshot;
    head =
      s && recovered.head
        ? {
            header: { id: s.id, runId: s.runId, sequence: s.sequence, createdAt: s.createdAt, source: s.source, sourceDetails: s.sourceDetails, ...(s.priority ? { priority: s.priority } : {}), status: s.status },
            payloadText: canonicalJson(s.payload),
            state: { material: materialText(profile, s.status, s.payload), status: s.status },
            createdAtMs: parseRfc3339(s.createdAt),
            location: recovered.head.location,
            latestOnly: immutableHistory ? await latestOnlyRecords(storage, profile, s, recovered.head.location) : [],
          }
        : undefined;
    const first = !opened;
    opened = true;
    needsRecovery = false;
    if (first) emitter.emit('opened', { runId, lastSequence, locked: lock?.held ?? false, tookOver });
  };

  const openWithRetry = (): Promise<void> => withRetry(() => ensureOpen(), retryOptions);

  /** One attempt at storing a group's plan, fenced by the run lease when there is one. */
  const writePlan = (plan: WritePlan, through: number): Promise<WriteReport> =>
    lock ? lock.fenced(through, (fence) => executeWrite(storage, runId, plan, index, now, useAtomicBatch, fence)) : executeWrite(storage, runId, plan, index, now, useAtomicBatch);

  /** True when a planned snapshot has a terminal status (the run ends with this group). */
  const endsRun = (planned: readonly Planned<P>[]): boolean => {
    for (const p of planned) if (profile.isTerminal(p.draft.status)) return true;
    return false;
  };

  /** Commits one group: every job queued while the previous group was in flight. */
  const commitGroup = async (queued: Job<P>[]): Promise<void> => {
    const jobs = queued.length === 1 && queued[0]!.riders.length === 0 ? queued : queued.flatMap((j) => [j, ...j.riders]);
    try {
      // Open (or recover) only when needed: an await costs a microtask and a promise per checkpoint.
      if (!opened || needsRecovery) await openWithRetry();
    } catch (raw) {
      const error = toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not open the run');
      const result = failure(error, 'open');
      for (const job of jobs) job.resolve(result);
      return;
    }

    // Plan: decide, in call order, which jobs make a new snapshot and which coalesce.
    const firstSequence = nextSequence;
    const planned: Planned<P>[] = [];
    const intoHead: { job: Job<P>; record: TriggerRecord }[] = [];
    for (const job of jobs) {
      const t = job.trigger;
      const last = planned.at(-1);
      const base: CoalesceBase | undefined = last
        ? { state: last.state, createdAtMs: last.createdAtMs, open: true, resumeAs: resumeAsOf(last.draft.source) }
        : head
          ? { state: head.state, createdAtMs: head.createdAtMs, open: head.location.kind !== 'fixed', resumeAs: resumeAsOf(head.header.source) }
          : undefined;
      if (shouldCoalesce(base, t, t.at, windowMs, t.priority === 'critical', resumeAsOf(t.source))) {
        const record: TriggerRecord = { source: t.source, at: toRfc3339(t.at), ...(t.priority ? { priority: t.priority } : {}) };
        if (last) {
          last.details.push(record);
          last.coalesced.push(job);
        } else intoHead.push({ job, record });
        continue;
      }
      const sequence = nextSequence;
      const draft: SnapshotHeader<P> = {
        id: profile.newSnapshotId({ runId, sequence, source: t.source, createdAtMs: t.at }),
        runId,
        sequence,
        createdAt: toRfc3339(t.at),
        source: t.source,
        sourceDetails: [],
        ...(t.priority ? { priority: t.priority } : {}),
        status: t.status,
      };
      let stored: StorableSnapshot<P>;
      try {
        stored = encodeForStorageSync(profile, draft, t.payloadText, withinLimit, t.payloadPieces) ?? (await encodeForStorage(profile, draft, t.payloadText, sizePolicy(refOf(draft), 0), t.payloadPieces));
      } catch (raw) {
        // Not storable (schema, size): this checkpoint fails alone and uses no number.
        job.resolve(failure(toCheckpointError(raw, 'checkpoint_schema_invalid', 'snapshot cannot be encoded'), 'validate'));
        continue;
      }
      nextSequence++;
      planned.push({ draft, payloadText: t.payloadText, payloadPieces: t.payloadPieces, state: t, createdAtMs: t.at, creator: job, coalesced: [], details: [], stored, key: latestKey });
      heartbeat.reset(t.status === activeStatus);
    }
    if (planned.length === 0 && intoHead.length === 0) return;

    try {
      // Immutable history: the first new snapshot's entry carries what only latest held of the head.
      const carried =
        immutableHistory && head && planned.length > 0 && (head.latestOnly.length > 0 || intoHead.length > 0)
          ? carriedRecords([...head.latestOnly, ...intoHead.map((x) => x.record)], head.header.id)
          : NO_RECORDS;
      // Snapshots that took coalesced triggers are encoded again with their source_details.
      for (const p of planned) {
        const before = p === planned[0] ? carried : [];
        if (p.details.length === 0 && before.length === 0) continue;
        p.draft = { ...p.draft, sourceDetails: [...before, ...p.details] };
        p.stored = await encodeForStorage(profile, p.draft, p.payloadText, sizePolicy(refOf(p.draft), 0), p.payloadPieces);
      }
      let headRewrite: { stored: StorableSnapshot<P>; location: HeadLocation; header: SnapshotHeader<P> } | undefined;
      if (intoHead.length > 0 && head) {
        const details = [...head.header.sourceDetails, ...intoHead.map((x) => x.record)];
        const draft: SnapshotHeader<P> = { ...head.header, sourceDetails: details };
        headRewrite = { stored: await encodeForStorage(profile, draft, head.payloadText, sizePolicy(refOf(draft), details.length), head.payloadPieces), location: head.location, header: draft };
      }

      // Build the write plan.
      const creates: CreateOp[] = [];
      const replaces: ReplaceOp[] = [];
      const newest = planned.at(-1);
      const hasHistory = typeof layout.historyKey === 'function';
      const budgetLow = batchWhenLow && rateBudgetOf(storage)?.low === true;
      let batchFile: { key: string; bytes: Uint8Array; members: { sequence: number; bytes: Uint8Array }[] } | undefined;
      if (hasHistory && budgetLow && planned.length >= 2 && layout.batchKey) {
        const members = planned.map((p) => ({ sequence: p.draft.sequence, bytes: p.stored.bytes }));
        const bytes = encodeBatchFile(members);
        if (bytes.length <= maxBytes) batchFile = { key: layout.batchKey(runId, planned[0]!.draft.sequence, newest!.draft.sequence), bytes, members };
      }
      // Awaited one at a time, checkpoints below the floor join the head's file while the adapter still holds it (held-batch.ts).
      const held =
        hasHistory && budgetLow && layout.batchKey && useAtomicBatch && !headRewrite && head && planned.length > 0
          ? await joinHeldHead(storage, layout.batchKey, runId, { sequence: head.header.sequence, location: head.location }, planned.map((p) => ({ sequence: p.draft.sequence, bytes: p.stored.bytes })), maxBytes)
          : undefined;
      if (held) batchFile = { key: held.key, bytes: held.bytes, members: [...held.members] };
      if (headRewrite && !(immutableHistory && newest)) {
        for (const part of headRewrite.stored.parts) creates.push({ key: part.key, bytes: part.data });
        const loc = immutableHistory ? { kind: 'latest' as const } : headRewrite.location;
        if (loc.kind === 'history') replaces.push({ key: loc.key, bytes: headRewrite.stored.bytes, ifVersion: loc.version });
        if (loc.kind === 'batch') {
          const members = loc.members.map((m) => (m.sequence === head!.header.sequence ? { sequence: m.sequence, bytes: headRewrite!.stored.bytes } : m));
          replaces.push({ key: loc.key, bytes: encodeBatchFile(members), ifVersion: loc.version });
        }
      }
      for (const p of planned) {
        if (!hasHistory && p !== newest) continue; // latest-only profiles store the newest state alone
        for (const part of p.stored.parts) creates.push({ key: part.key, bytes: part.data });
      }
      if (hasHistory) {
        if (batchFile) {
          creates.push({ key: batchFile.key, bytes: batchFile.bytes });
          for (const p of planned) p.key = batchFile.key;
        } else {
          for (const p of planned) {
            p.key = layout.historyKey!(refOf(p.draft));
            creates.push({ key: p.key, bytes: p.stored.bytes });
          }
        }
      }
      let latestBytes = newest?.stored.bytes ?? headRewrite?.stored.bytes;
      // A single-artifact format keeps what other tools wrote in the file it replaces (one read, only for such formats).
      const keepForeign = profile.document.keepForeignFields;
      if (latestBytes && keepForeign) {
        const previous = await storage.get(latestKey);
        if (previous) latestBytes = await keepForeign(previous.bytes, latestBytes);
      }
      const written: RunIndexEntry[] = [];
      if (hasHistory) for (const p of planned) written.push(entryOf(p, p.key));
      const entries: RunIndexEntry[] = held
        ? [...unindexed.filter((e) => e.file_path !== held.replaced), ...repointEntries([...(index.doc?.checkpoints ?? []), ...unindexed], held), ...written]
        : unindexed.length === 0 && hasHistory
          ? written
          : [...unindexed, ...(hasHistory ? written : newest ? [entryOf(newest, latestKey)] : [])];
      const candidates = autoRetention && planned.length > 0 ? planPrune(history, autoRetention) : [];
      const prune = candidates.length > 0 ? await prunable(candidates) : candidates;
      // A long run's index is rewritten every max(1, n/16) checkpoints (see indexDeferral; n counts
      // the run when it is pruned as it goes), and at once when the run ends or prunes;
      // held-back entries stay in `unindexed` until then.
      const writeIndex =
        indexKey !== undefined &&
        entries.length > 0 &&
        (!hasHistory ||
          prune.length > 0 ||
          held !== undefined ||
          entries.length >= indexDeferral(index.doc?.checkpoint_count ?? 0, autoRetention ? lastSequence : undefined) ||
          endsRun(planned));
      // Built member by member: object spreads in a literal cost more than the rest of the plan.
      const plan: { -readonly [K in keyof WritePlan]: WritePlan[K] } = { creates, replaces };
      if (latestBytes) plan.latest = { key: latestKey, bytes: latestBytes };
      if (writeIndex) {
        plan.index =
          prune.length > 0 || held
            ? { key: indexKey, entries, remove: new Set([...prune.map((e) => e.file_path), ...(held ? [held.replaced] : [])]) }
            : { key: indexKey, entries };
      }
      // With an atomic batch the pruned files go in the same commit (one durable commit per
      // checkpoint, not two); otherwise they are deleted after this plan is durable. The held
      // file a batch file took over goes in the same write.
      if (useAtomicBatch && (prune.length > 0 || held)) plan.deletes = [...prunedKeys(prune), ...(held ? [held.replaced] : [])];
      for (const p of planned) if (p.stored.parts.length > 0) partsBySequence.set(p.draft.sequence, p.stored.parts.map((part) => part.key));

      const through = newest?.draft.sequence ?? lastSequence;
      // The first attempt is awaited here, not through withRetry (a promise, a turn and two closures less per checkpoint).
      let report: WriteReport;
      try {
        report = await writePlan(plan, through);
      } catch (first) {
        report = await retryAfterFirst(() => writePlan(plan, through), retryOptions, first);
      }

      // Durable: acknowledge in call order and move the head. A held run end is pushed first (held-batch.ts).
      const pushed = report.pending && endsRun(planned) && (await pushHeldAtRunEnd(storage));
      const outcome = report.pending && !pushed ? 'queued' : 'written';
      const mode = batchFile ? 'batch-file' : report.mode;
      unindexed = writeIndex ? [] : entries;
      if (headRewrite && head) {
        const loc = head.location;
        const location: HeadLocation =
          loc.kind === 'history'
            ? { kind: 'history', key: loc.key, version: report.versions.get(loc.key) ?? loc.version }
            : loc.kind === 'batch'
              ? {
                  kind: 'batch',
                  key: loc.key,
                  version: report.versions.get(loc.key) ?? loc.version,
                  members: loc.members.map((m) => (m.sequence === head!.header.sequence ? { sequence: m.sequence, bytes: headRewrite!.stored.bytes } : m)),
                }
              : loc;
        head = { ...head, header: headRewrite.header, ...(immutableHistory ? { location: loc, latestOnly: [...head.latestOnly, ...intoHead.map((x) => x.record)] } : { location }) };
        // Where the records are: the rewritten entry, latest, or (immutable history) the new snapshot's entry.
        const key = immutableHistory ? (planned[0]?.key ?? latestKey) : loc.kind === 'history' || loc.kind === 'batch' ? loc.key : latestKey;
        const s = headRewrite.stored.snapshot;
        for (const { job } of intoHead) {
          const result: CheckpointSuccess<P> = {
            ok: true,
            outcome: 'coalesced',
            snapshotId: s.id,
            sequence: s.sequence,
            key,
            snapshot: s,
            ...(newest && !hasHistory ? { supersededBy: newest.draft.sequence } : {}),
          };
          emitter.emit('coalesced', { runId, snapshotId: s.id, sequence: s.sequence, source: job.trigger.source, status: s.status, recorded: s.sourceDetails.length });
          job.resolve(result);
        }
      }
      for (const p of planned) {
        const s = p.stored.snapshot;
        const supersededBy = !hasHistory && p !== newest ? newest!.draft.sequence : undefined;
        // phased-workflow-github.md, size_management: "3. Log warning about large checkpoint".
        if (p.stored.splitFrom !== undefined) {
          emitter.emit('split', { runId, sequence: s.sequence, bytes: p.stored.splitFrom, limit: maxBytes, parts: p.stored.parts.map((part) => part.key) });
        }
        if (emitter.has('written')) {
          emitter.emit('written', {
            runId,
            snapshotId: s.id,
            sequence: s.sequence,
            source: s.source,
            status: s.status,
            key: p.key,
            bytes: p.stored.bytes.length,
            outcome,
            groupSize: planned.length,
            mode,
          });
        }
        p.creator.resolve(
          supersededBy === undefined
            ? { ok: true, outcome, snapshotId: s.id, sequence: s.sequence, key: p.key, snapshot: s }
            : { ok: true, outcome, snapshotId: s.id, sequence: s.sequence, key: p.key, snapshot: s, supersededBy },
        );
        for (const job of p.coalesced) {
          emitter.emit('coalesced', { runId, snapshotId: s.id, sequence: s.sequence, source: job.trigger.source, status: s.status, recorded: s.sourceDetails.length });
          job.resolve({ ok: true, outcome: 'coalesced', snapshotId: s.id, sequence: s.sequence, key: p.key, snapshot: s, ...(supersededBy === undefined ? {} : { supersededBy }) });
        }
      }
      if (newest) {
        lastSequence = newest.draft.sequence;
        let location: HeadLocation;
        if (!hasHistory) location = { kind: 'latest' };
        else if (batchFile) location = { kind: 'batch', key: batchFile.key, version: report.versions.get(batchFile.key) ?? '', members: batchFile.members };
        else location = { kind: 'history', key: newest.key, version: report.versions.get(newest.key) ?? '' };
        if ((location.kind === 'history' || location.kind === 'batch') && location.version === '') location = { kind: 'fixed' };
        head = { header: newest.draft, payloadText: newest.payloadText, payloadPieces: newest.payloadPieces, state: newest.state, createdAtMs: newest.createdAtMs, location, latestOnly: [] };
      }
      if (autoRetention) {
        if (held) history = [...history.filter((e) => e.file_path !== held.replaced), ...repointEntries(history, held)];
        history.push(...written);
        if (prune.length > 0) await removePruned(prune, plan.deletes !== undefined);
      }
    } catch (raw) {
      // Nothing of this group is acknowledged. Numbers go back to the pool, but storage is
      // read again before the next group: whatever did land (an ambiguous failure) keeps its number.
      const error = toCheckpointError(raw, 'checkpoint_atomic_write_failed', 'checkpoint write failed');
      nextSequence = firstSequence;
      needsRecovery = true;
      if (error.reasonCode === 'checkpoint_run_locked') opened = false;
      const result = failure(error, 'write');
      for (const p of planned) {
        p.creator.resolve(result);
        for (const job of p.coalesced) job.resolve(result);
      }
      for (const { job } of intoHead) job.resolve(result);
    }
  };

  /** The `candidates` the per-run policy lets go (planPrune), unless the run is preserved. */
  const prunable = async (candidates: RunIndexEntry[]): Promise<RunIndexEntry[]> => {
    try {
      return (await isPreservedRun(storage, profile as Profile<unknown>, runId)) ? [] : candidates;
    } catch (raw) {
      failure(toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not read the preserved runs list'), 'retention');
      return [];
    }
  };

  /**
   * Forgets pruned snapshots, deleting their files once the index that no longer lists them
   * is durable — unless the plan's atomic batch already deleted them (`alreadyDeleted`). A
   * failed delete leaves an unindexed file, which the next open indexes again and prunes again.
   */
  const prunedKeys = (prune: readonly RunIndexEntry[]): Set<string> => {
    const keys = new Set<string>();
    for (const e of prune) {
      keys.add(e.file_path);
      for (const part of partsBySequence.get(e.sequence) ?? []) keys.add(part);
    }
    return keys;
  };
  const removePruned = async (prune: readonly RunIndexEntry[], alreadyDeleted: boolean): Promise<void> => {
    const gone = new Set(prune);
    history = history.filter((e) => !gone.has(e));
    const keys = prunedKeys(prune);
    for (const e of prune) partsBySequence.delete(e.sequence);
    const deleted: string[] = alreadyDeleted ? [...keys] : [];
    for (const key of alreadyDeleted ? [] : keys) {
      try {
        await storage.delete(key);
        deleted.push(key);
      } catch (raw) {
        failure(toCheckpointError(raw, 'checkpoint_retention_prune_failed', `could not delete ${key}`), 'retention');
      }
    }
    emitter.emit('pruned', { runId, sequences: prune.map((e) => e.sequence), keys: deleted });
  };

  /**
   * Writes the index entries a long run held back (see indexDeferral), so a flushed or closed
   * run leaves a complete `index.json`. A failure is reported, not fatal: the history files
   * exist, and the next writer or reader indexes them from a listing.
   */
  const syncIndex = async (): Promise<void> => {
    if (!opened || needsRecovery || indexKey === undefined || unindexed.length === 0) return;
    const plan: WritePlan = { creates: [], replaces: [], index: { key: indexKey, entries: unindexed } };
    try {
      await withRetry(
        () => writePlan(plan, lastSequence),
        retryOptions,
      );
      unindexed = [];
    } catch (raw) {
      const f = failure(toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not update the run index'), 'flush');
      if (failMode === 'throw') throw f.error;
    }
  };

  /** Takes the queued jobs (one, without group commit) and commits them as one group. Never rejects. */
  const commitQueued = async (): Promise<void> => {
    scheduled = false;
    const group = queue.splice(0, groupCommit ? queue.length : 1);
    if (queue.length > 0) schedule();
    try {
      if (group.length > 0) await commitGroup(group);
    } catch {
      // commitGroup settles every job it took; nothing else can reach a caller.
    }
  };

  // Chained on `tail` like exclusive(), without its per-call closures: commitQueued never rejects.
  const schedule = (): void => {
    if (scheduled) return;
    scheduled = true;
    tail = tail.then(commitQueued);
  };

  const enqueue = (trigger: ValidatedTrigger): Promise<CheckpointResult<P>> =>
    new Promise((resolve) => {
      const last = queue.at(-1);
      if (last && sameMaterial(last.trigger, trigger) && last.riders.length < maxQueue) last.riders.push({ trigger, resolve, riders: [] });
      else queue.push({ trigger, resolve, riders: [] });
      schedule();
    });

  const deliver = (result: CheckpointResult<P>): CheckpointResult<P> => {
    if (!result.ok && failMode === 'throw') throw result.error;
    return result;
  };

  const accept = (input: CheckpointInput<P>, during: 'validate' | 'heartbeat'): Promise<CheckpointResult<P>> => {
    if (closing || closed) {
      return Promise.resolve(failure(new CheckpointError('checkpoint_closed', `writer of run ${runId} is closed`, { details: { runId } }), during === 'heartbeat' ? 'heartbeat' : 'validate'));
    }
    let trigger: ValidatedTrigger;
    try {
      trigger = validateTrigger(profile, input, clock.now());
      if (trigger.convertedAt !== undefined) {
        if (nonJson === 'error') throw nonJsonRefused(trigger.convertedAt);
        emitter.emit('converted', { runId, path: trigger.convertedAt });
      }
    } catch (raw) {
      return Promise.resolve(failure(toCheckpointError(raw, 'checkpoint_schema_invalid', 'invalid checkpoint'), during));
    }
    const last = queue.at(-1);
    const rides = last !== undefined && sameMaterial(last.trigger, trigger) && last.riders.length < maxQueue;
    if (queue.length >= maxQueue && !rides) {
      return Promise.resolve(
        failure(
          new CheckpointError('checkpoint_backpressure', `writer queue of run ${runId} is full (${maxQueue} checkpoints wait behind the one in flight)`, {
            details: { runId, queued: queue.length, maxQueue },
          }),
          'queue',
        ),
      );
    }
    lastInput = trigger;
    if (trigger.status !== activeStatus) heartbeat.reset(false);
    return enqueue(trigger);
  };

  const heartbeat = createHeartbeat(clock, heartbeatMs, () => {
    emitter.emit('heartbeat', { runId, at: clock.now() });
    if (!lastInput || lastInput.status !== activeStatus || heartbeatSource === undefined) return;
    // Nothing new since the newest snapshot, and the profile stores no copy of it on a timer.
    if (skipUnchangedBeats && !options.heartbeatPayload && head !== undefined && sameMaterial(head.state, lastInput)) {
      heartbeat.reset(true);
      return;
    }
    let payload: P;
    try {
      const last = parseJson(lastInput.payloadText, 'payload') as P;
      payload = beatPayload ? beatPayload(last) : last;
    } catch (raw) {
      failure(toCheckpointError(raw, 'checkpoint_schema_invalid', 'heartbeatPayload failed'), 'heartbeat');
      heartbeat.reset(true);
      return;
    }
    void accept({ source: heartbeatSource, status: lastInput.status, payload }, 'heartbeat').then((r) => {
      settleBeat(options.heartbeatPayload, r, payload, (raw) => failure(toCheckpointError(raw, 'checkpoint_config_invalid', 'heartbeatPayload.settled failed'), 'heartbeat'));
      // A failed beat is reported through `error`; keep beating so the state is tried again.
      if (!r.ok) heartbeat.reset(lastInput?.status === activeStatus);
    });
  });

  /** Resolves once nothing is queued or in flight. */
  const idle = async (): Promise<void> => {
    for (;;) {
      const t = tail;
      await t;
      if (t === tail && queue.length === 0 && !scheduled) return;
    }
  };

  const writer: CheckpointWriter<P> = {
    runId,
    profile,
    get lastSequence() {
      return lastSequence;
    },
    get closed() {
      return closed;
    },
    async open() {
      if (closing || closed) return deliverFailure(failure(new CheckpointError('checkpoint_closed', `writer of run ${runId} is closed`), 'open'));
      try {
        await exclusive(openWithRetry);
        return { ok: true as const, lastSequence };
      } catch (raw) {
        return deliverFailure(failure(toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not open the run'), 'open'));
      }
    },
    // Not an async function: in failMode 'result' the queue's own promise is handed back (one
    // promise and one microtask turn less per checkpoint).
    checkpoint(input) {
      let result: Promise<CheckpointResult<P>>;
      try {
        result = accept(input, 'validate');
      } catch (err) {
        return Promise.reject(err);
      }
      return failMode === 'throw' ? result.then(deliver) : result;
    },
    async flush() {
      await idle();
      await exclusive(syncIndex);
      if (!isBufferedStorage(storage)) return;
      try {
        await storage.flush();
      } catch (raw) {
        const f = failure(toCheckpointError(raw, 'checkpoint_storage_unavailable', 'storage flush failed'), 'flush');
        if (failMode === 'throw') throw f.error;
      }
    },
    async close() {
      if (closing || closed) return;
      closing = true;
      heartbeat.stop();
      let error: CheckpointError | undefined;
      try {
        await writer.flush();
      } catch (raw) {
        error = toCheckpointError(raw, 'checkpoint_storage_unavailable', 'flush on close failed');
      }
      try {
        await lock?.release();
      } catch (raw) {
        error ??= failure(toCheckpointError(raw, 'checkpoint_storage_unavailable', 'could not release the run lock'), 'close').error;
      }
      closed = true;
      emitter.emit('closed', { runId });
      if (error && failMode === 'throw') throw error;
    },
    on: (event, listener) => emitter.on(event, listener),
  };

  function deliverFailure(f: CheckpointFailure): CheckpointFailure {
    if (failMode === 'throw') throw f.error;
    return f;
  }

  return writer;
}
