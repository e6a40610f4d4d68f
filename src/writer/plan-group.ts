import { toRfc3339 } from '../contract/clock.js';
import { toCheckpointError, type CheckpointError } from '../contract/errors.js';
import type { TriggerRecord } from '../contract/snapshot.js';
import type { HistoryRef } from '../contract/layout.js';
import { carriedRecords, shouldCoalesce, type CoalesceBase } from './coalescing.js';
import type { HeadLocation } from './sequence-recovery.js';
import { encodeForStorage, encodeForStorageSync, type SizePolicy, type SnapshotHeader, type StorableSnapshot } from './size-limit.js';
import type { MaterialState } from './triggers.js';
import type { Head, Job } from './state.js';
import type { WriterConfig } from './writer-config.js';

/**
 * Planning a group commit, with no storage call: which queued jobs make a new snapshot and
 * which coalesce (in call order), the numbers and drafts of the new snapshots, and the
 * rewrite of the head that coalesced triggers need. Encoding (CPU only) is the one await.
 */

/** A new snapshot planned in the current group. */
export interface Planned<P> {
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

/** A trigger coalesced into the head (the newest durable snapshot, from an earlier group). */
export interface IntoHead<P> {
  readonly job: Job<P>;
  readonly record: TriggerRecord;
}

/** The group as planned so far. */
export interface GroupDraft<P> {
  /** The number the group started at: given back to the pool when the group fails. */
  readonly firstSequence: number;
  /** The number the next new snapshot gets. */
  nextSequence: number;
  readonly planned: Planned<P>[];
  readonly intoHead: IntoHead<P>[];
}

/** The head rewritten with the triggers coalesced into it. */
export interface HeadRewrite<P> {
  readonly stored: StorableSnapshot<P>;
  readonly location: HeadLocation;
  readonly header: SnapshotHeader<P>;
}

/** What planning one job did: coalesced it, planned a snapshot, or refused it (not storable: it fails alone and uses no number). */
export type JobStep<P> =
  | { readonly kind: 'coalesced' }
  | { readonly kind: 'planned'; readonly planned: Planned<P> }
  | { readonly kind: 'rejected'; readonly error: CheckpointError };

const COALESCED = Object.freeze({ kind: 'coalesced' as const });

/** No trigger records (shared, never changed: `carried` is only read). */
const NO_RECORDS: readonly TriggerRecord[] = Object.freeze([]);

export const newGroupDraft = <P>(firstSequence: number): GroupDraft<P> => ({
  firstSequence,
  nextSequence: firstSequence,
  planned: [],
  intoHead: [],
});

export const refOf = <P>(runId: string, d: SnapshotHeader<P>): HistoryRef => ({ runId, id: d.id, sequence: d.sequence, source: d.source });

/** The size policy of a snapshot's encoding: part files named after it (and after the rewrite `revision`). */
export function sizePolicy<P>(config: WriterConfig<P>, ref: HistoryRef, revision: number): SizePolicy {
  const { maxBytes, onOversize, layout } = config;
  return {
    maxBytes,
    onOversize,
    ...(layout.partKey ? { partKey: (n: number) => layout.partKey!(ref, revision === 0 ? `${n}.json` : `${n}.r${revision}.json`) } : {}),
  };
}

const resumeAsOf = <P>(config: WriterConfig<P>, source: string): string | undefined =>
  Object.hasOwn(config.profile.triggers, source) ? config.profile.triggers[source]!.resumeAs : undefined;

/** Records `job` into the group's newest snapshot or the head when it carries no material change; false when it makes a snapshot of its own. */
function coalesceJob<P>(config: WriterConfig<P>, head: Head<P> | undefined, group: GroupDraft<P>, job: Job<P>): boolean {
  const t = job.trigger;
  const last = group.planned.at(-1);
  const base: CoalesceBase | undefined = last
    ? { state: last.state, createdAtMs: last.createdAtMs, open: true, resumeAs: resumeAsOf(config, last.draft.source) }
    : head
      ? {
          state: head.state,
          createdAtMs: head.createdAtMs,
          open: head.location.kind !== 'fixed',
          resumeAs: resumeAsOf(config, head.header.source),
        }
      : undefined;
  if (!shouldCoalesce(base, t, t.at, config.windowMs, t.priority === 'critical', resumeAsOf(config, t.source))) return false;
  const record: TriggerRecord = { source: t.source, at: toRfc3339(t.at), ...(t.priority ? { priority: t.priority } : {}) };
  if (last) {
    last.details.push(record);
    last.coalesced.push(job);
  } else group.intoHead.push({ job, record });
  return true;
}

/**
 * Plans one job, in call order: coalesced, or a new snapshot numbered `group.nextSequence`
 * and encoded. Synchronous unless the document needs the asynchronous encoder (an await
 * costs a microtask and a promise per checkpoint).
 */
export function planJob<P>(
  config: WriterConfig<P>,
  head: Head<P> | undefined,
  group: GroupDraft<P>,
  job: Job<P>,
): JobStep<P> | Promise<JobStep<P>> {
  if (coalesceJob(config, head, group, job)) return COALESCED;
  const { profile, runId } = config;
  const t = job.trigger;
  const sequence = group.nextSequence;
  let id: string;
  try {
    id = profile.newSnapshotId({ runId, sequence, source: t.source, createdAtMs: t.at });
  } catch (raw) {
    // A profile's own id function may throw: the job then fails alone, as one that cannot be encoded does.
    return rejected(raw, "the profile's newSnapshotId threw");
  }
  let draft: SnapshotHeader<P>;
  let stored: StorableSnapshot<P> | undefined;
  try {
    draft = {
      id,
      runId,
      sequence,
      createdAt: toRfc3339(t.at),
      source: t.source,
      sourceDetails: [],
      ...(t.priority ? { priority: t.priority } : {}),
      status: t.status,
    };
    stored = encodeForStorageSync(profile, draft, t.payloadText, config.withinLimit, t.payloadPieces);
  } catch (raw) {
    return rejected(raw);
  }
  if (stored) return addPlanned(config, group, job, draft, stored);
  return encodeForStorage(profile, draft, t.payloadText, sizePolicy(config, refOf(runId, draft), 0), t.payloadPieces).then(
    (encoded) => addPlanned(config, group, job, draft, encoded),
    (raw: unknown) => rejected<P>(raw),
  );
}

/** The encoded snapshot joins the group and takes its number. */
function addPlanned<P>(
  config: WriterConfig<P>,
  group: GroupDraft<P>,
  job: Job<P>,
  draft: SnapshotHeader<P>,
  stored: StorableSnapshot<P>,
): JobStep<P> {
  const t = job.trigger;
  group.nextSequence++;
  const planned: Planned<P> = {
    draft,
    payloadText: t.payloadText,
    payloadPieces: t.payloadPieces,
    state: t,
    createdAtMs: t.at,
    creator: job,
    coalesced: [],
    details: [],
    stored,
    key: config.latestKey,
  };
  group.planned.push(planned);
  return { kind: 'planned', planned };
}

const rejected = <P>(raw: unknown, what = 'snapshot cannot be encoded'): JobStep<P> => ({
  kind: 'rejected',
  error: toCheckpointError(raw, 'checkpoint_schema_invalid', what),
});

/**
 * Completes the drafts once every job is planned: snapshots that took coalesced triggers are
 * encoded again with their `source_details` (immutable history: the first one also carries
 * what only `latest` held of the head), and the head is rewritten with the triggers
 * coalesced into it. Returns that rewrite, if any (undefined without a promise when there is
 * nothing to encode again).
 */
export function finishDrafts<P>(
  config: WriterConfig<P>,
  head: Head<P> | undefined,
  group: GroupDraft<P>,
): Promise<HeadRewrite<P> | undefined> | undefined {
  const { planned, intoHead } = group;
  // Immutable history: the first new snapshot's entry carries what only latest held of the head.
  const carried =
    config.immutableHistory && head && planned.length > 0 && (head.latestOnly.length > 0 || intoHead.length > 0)
      ? carriedRecords([...head.latestOnly, ...intoHead.map((x) => x.record)], head.header.id)
      : NO_RECORDS;
  // Nothing to encode again: no promise (an await costs a microtask and a promise per checkpoint).
  if (carried.length === 0 && (intoHead.length === 0 || !head) && planned.every((p) => p.details.length === 0)) return undefined;
  return encodeFinished(config, head, group, carried);
}

async function encodeFinished<P>(
  config: WriterConfig<P>,
  head: Head<P> | undefined,
  group: GroupDraft<P>,
  carried: readonly TriggerRecord[],
): Promise<HeadRewrite<P> | undefined> {
  const { planned, intoHead } = group;
  const { profile, runId } = config;
  // Snapshots that took coalesced triggers are encoded again with their source_details.
  for (const p of planned) {
    const before = p === planned[0] ? carried : [];
    if (p.details.length === 0 && before.length === 0) continue;
    p.draft = { ...p.draft, sourceDetails: [...before, ...p.details] };
    p.stored = await encodeForStorage(profile, p.draft, p.payloadText, sizePolicy(config, refOf(runId, p.draft), 0), p.payloadPieces);
  }
  if (intoHead.length === 0 || !head) return undefined;
  const details = [...head.header.sourceDetails, ...intoHead.map((x) => x.record)];
  const draft: SnapshotHeader<P> = { ...head.header, sourceDetails: details };
  return {
    stored: await encodeForStorage(
      profile,
      draft,
      head.payloadText,
      sizePolicy(config, refOf(runId, draft), details.length),
      head.payloadPieces,
    ),
    location: head.location,
    header: draft,
  };
}
