import { assertStoreServesProfile } from '../contract/shared-files.js';
import { formatDuration } from '../contract/human-duration.js';
import type { ForeignReadWarning } from '../contract/document-format.js';
import { assertStorageProfileOptions } from '../contract/arguments.js';
import { systemClock, type Clock } from '../contract/clock.js';
import type { Snapshot } from '../contract/snapshot.js';
import type { Profile } from '../contract/profile.js';
import type { StorageAdapter } from '../contract/storage.js';
import { locateNewestSnapshot, type LocatedSnapshot, type NewerCheck, type SkippedFile, type SnapshotOrigin } from './locate.js';
import { defaultResumeRule } from './default-rule.js';
import {
  RESUME_HISTORY_LIMIT,
  type ResumePoint,
  type ResumeCallerContext,
  type ResumeRule,
  type ResumeWarning,
  type UnreadableSnapshotFile,
} from '../contract/resume-rule.js';
import { listRunSnapshots } from '../runs/list-snapshots.js';

/** Options of {@link planResume}. */
export interface PlanResumeOptions<P> {
  /** Where the run's checkpoints are. */
  readonly storage: StorageAdapter;
  /** The profile the run was written with: layout, document format, statuses and resume rule. */
  readonly profile: Profile<P>;
  /** The run to resume. */
  readonly runId: string;
  /** Clock for the snapshot's age. @default systemClock */
  readonly clock?: Clock;
  /**
   * The lessons active now (phased-workflow-github.md `active_lessons`). Passed to the
   * rule's {@link ResumeRule.callerWarnings}: the phasedWorkflow rule warns
   * `resume_lessons_changed` when they differ from the snapshot's.
   * @default undefined (not compared)
   */
  readonly currentLessons?: readonly unknown[];
  /**
   * A snapshot older than this is the warning `resume_snapshot_stale`
   * (phased-workflow-github.md `time_sensitivity`). One hour by default: the GitHub rate
   * limit window the spec is built around resets hourly.
   * @default 3_600_000
   */
  readonly staleAfterMs?: number;
  /** Decides where to resume. @default profile.resume, else {@link defaultResumeRule} */
  readonly rule?: ResumeRule<P>;
  /** How a valid `latest` is checked for a newer history entry; see {@link NewerCheck}. @default 'auto' */
  readonly newerCheck?: NewerCheck;
  /** Storage reads in flight at once while scanning history. @default 8 */
  readonly concurrency?: number;
  /**
   * Add the `resume_external_state` warning (phased-workflow-github.md `external_state`) when the
   * snapshot refers to state outside it (files modified, commits, a plan file). @default true
   */
  readonly warnExternalState?: boolean;
}

/** Where the restored snapshot came from. */
export interface ResumeSource {
  /** The storage key it was read from. */
  readonly key: string;
  /** `latest`, a probe of the next sequence, the index, or the history scan. */
  readonly origin: SnapshotOrigin;
  /** Its position when the key is a batch file. */
  readonly batchPosition?: number;
  /** What `latest` was. */
  readonly latest: LocatedSnapshot<unknown>['latest'];
}

/**
 * A run's resume plan: the restored snapshot, where to resume and why (the profile
 * rule's {@link ResumePoint}, flattened in), warnings, and the files skipped on the way.
 */
export interface ResumePlan<P> extends ResumePoint {
  /** The run. */
  readonly runId: string;
  /** The newest valid snapshot of the run. */
  readonly snapshot: Snapshot<P>;
  /** Its payload: the state to restore, typed by the profile. */
  readonly payload: P;
  /** Where the snapshot came from. */
  readonly source: ResumeSource;
  /** The planner's and the rule's warnings, each with a stable code. */
  readonly warnings: readonly ResumeWarning[];
  /** Files that failed validation (or were missing), with reason codes. */
  readonly skipped: readonly SkippedFile[];
  /**
   * The sequence a writer continuing this run should use next: one above the highest
   * sequence any of the run's files is known to hold or claim, so a continued run never
   * reuses the number of a corrupt or newer file the planner saw.
   */
  readonly nextSequence: number;
  /** Milliseconds between the snapshot's creation and the planner's clock. */
  readonly ageMs: number;
}

/**
 * The run's snapshots before `sequence`, newest first, at most RESUME_HISTORY_LIMIT, for a
 * rule that asks for them. Only a convenience for the rule (naming things): a failure to read
 * them leaves the rule without history rather than failing the resume.
 */
async function earlierSnapshots<P>(
  storage: StorageAdapter,
  profile: Profile<P>,
  runId: string,
  sequence: number,
  until?: (earlier: Snapshot<unknown>) => boolean,
): Promise<Snapshot<unknown>[] | undefined> {
  const out: Snapshot<unknown>[] = [];
  try {
    for await (const s of listRunSnapshots({ storage, profile, runId, before: sequence, limit: RESUME_HISTORY_LIMIT })) {
      out.push(s as Snapshot<unknown>);
      if (until?.(s as Snapshot<unknown>) === true) break;
    }
  } catch {
    return out.length > 0 ? out : undefined;
  }
  return out;
}

/** How far in the future a snapshot may be before clocks are said to disagree. */
const CLOCK_SKEW_TOLERANCE_MS = 5000;

/** The sentence of each tolerant-read warning on a plan. */
const FOREIGN_READ_MESSAGES: Readonly<Record<ForeignReadWarning, (key: string) => string>> = {
  checkpoint_unsealed: (key) => `${key} has no savepoint seal (another tool wrote it); it was validated against the spec's schema only`,
  checkpoint_foreign_seal: (key) =>
    `${key} carries another tool's id or checksum scheme, which savepoint cannot verify; it was validated against the spec's schema only`,
  checkpoint_integrity_mismatch: (key) => `${key} was edited after savepoint sealed it; the edited file is resumed as the newest truth`,
  checkpoint_time_without_offset: (key) => `${key} holds a time without an offset (e.g. Python's isoformat()); it was read as UTC`,
  checkpoint_sequence_derived: (key) =>
    `${key} carries no sequence (its spec has none); its number comes from the run's order by created_at`,
};

/**
 * Plans the resumption of a run: finds its newest valid snapshot
 * ({@link locateNewestSnapshot}: `latest` → index → history scan, corrupt files skipped
 * and reported), restores it, and asks the profile's resume rule where to continue.
 *
 * @throws `checkpoint_not_found` when the run has no files, `checkpoint_no_valid_snapshot`
 *   when none of its snapshots is valid, a storage error when storage fails.
 *
 * @example
 * ```ts
 * const plan = await planResume({ storage, profile: phasedWorkflow, runId, currentLessons });
 * console.log(plan.message);           // RESUME: Continuing run … from checkpoint …
 * if (plan.eligible) await runFrom(plan.at, plan.restored);
 * for (const w of plan.warnings) log.warn(w.code, w.message);
 * ```
 */
export async function planResume<P>(options: PlanResumeOptions<P>): Promise<ResumePlan<P>> {
  assertStorageProfileOptions(options, 'planResume');
  const { profile, runId } = options;
  // A read fixes no layout: only a writer declares who reads the store (an empty directory stays free).
  assertStoreServesProfile(options.storage, profile, 'planResume');
  const clock = options.clock ?? systemClock;
  const located = await locateNewestSnapshot({
    storage: options.storage,
    profile,
    runId,
    ...(options.newerCheck !== undefined ? { newerCheck: options.newerCheck } : {}),
    ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
  });
  const { snapshot } = located;
  const now = clock.now();
  const rule: ResumeRule<P> = options.rule ?? profile.resume ?? (defaultResumeRule as ResumeRule<P>);
  const wanted = rule.readsHistory?.(snapshot) ?? false;
  const history =
    wanted === false
      ? undefined
      : await earlierSnapshots(options.storage, profile, runId, snapshot.sequence, wanted === true ? undefined : wanted);
  const unreadable = unreadableNewer(located);
  const point = rule(snapshot, {
    now,
    isTerminal: profile.isTerminal,
    profileName: profile.name,
    ...(history ? { history } : {}),
    ...(unreadable.length > 0 ? { unreadable } : {}),
  });

  const ageMs = now - Date.parse(snapshot.createdAt);
  const warnings = locateWarnings(located);
  if (profile.isTerminal(snapshot.status)) {
    warnings.push({
      code: 'resume_run_terminal',
      message: `the run's newest snapshot has the terminal status ${snapshot.status}`,
      details: { status: snapshot.status },
    });
  }
  const age = ageWarning(ageMs, options.staleAfterMs ?? 3_600_000);
  if (age) warnings.push(age);
  if (rule.callerWarnings) warnings.push(...rule.callerWarnings(snapshot, callerContext(options)));
  warnings.push(...(point.warnings ?? []));
  const external = options.warnExternalState !== false ? externalStateWarning(point) : undefined;
  if (external) warnings.push(external);

  // Object.assign, not a spread: V8 built this object in dictionary mode from `...point`
  // followed by nine more members, which was a quarter of an in-memory resume's CPU.
  return Object.assign({}, point, {
    runId,
    snapshot,
    payload: snapshot.payload,
    source: {
      key: located.key,
      origin: located.origin,
      ...(located.batchPosition !== undefined ? { batchPosition: located.batchPosition } : {}),
      latest: located.latest,
    },
    warnings,
    skipped: located.skipped,
    nextSequence: located.highestSequence + 1,
    ageMs,
  });
}

/**
 * The refused snapshot files that may be newer than the restored snapshot: they claim a
 * higher sequence, or no sequence can be read from them (and they do not claim to be the
 * restored snapshot itself). Resuming from the restored snapshot steps over them.
 */
function unreadableNewer(located: LocatedSnapshot<unknown>): UnreadableSnapshotFile[] {
  const { sequence, id } = located.snapshot;
  const out: UnreadableSnapshotFile[] = [];
  for (const s of located.skipped) {
    if (s.kind === 'index') continue;
    const claims = s.claims ?? {};
    const newer = claims.sequence !== undefined ? claims.sequence > sequence : claims.id !== id;
    if (newer) out.push({ key: s.key, kind: s.kind, reasonCode: s.reasonCode, message: s.message, ...claims });
  }
  return out;
}

/** What the caller says holds now, for the rule's {@link ResumeRule.callerWarnings}. */
function callerContext<P>(options: PlanResumeOptions<P>): ResumeCallerContext {
  return options.currentLessons !== undefined ? { currentLessons: options.currentLessons } : {};
}

/** The warnings about where the snapshot was found: `latest` unusable, foreign files, files skipped, duplicate sequences. */
function locateWarnings(located: LocatedSnapshot<unknown>): ResumeWarning[] {
  const { snapshot } = located;
  const warnings: ResumeWarning[] = [];
  const from = `snapshot ${snapshot.sequence} from ${located.key}`;
  if (located.latest === 'missing')
    warnings.push({ code: 'resume_latest_missing', message: `latest is missing; resuming from ${from}`, details: { key: located.key } });
  if (located.latest === 'invalid')
    warnings.push({
      code: 'resume_latest_invalid',
      message: `latest failed validation; resuming from ${from}`,
      details: { key: located.key },
    });
  if (located.latest === 'stale') {
    warnings.push({
      code: 'resume_latest_stale',
      message: `latest is older than ${from} (a crash between the history and latest writes); resuming from the newer one`,
      details: { key: located.key, sequence: snapshot.sequence },
    });
  }
  if (located.renumbered) {
    warnings.push({
      code: 'resume_latest_renumbered',
      message: `latest holds ${snapshot.id}, which no history entry holds and which is newer than the history by time; resumed as sequence ${located.renumbered.to}`,
      details: { key: located.key, from: located.renumbered.from, to: located.renumbered.to },
    });
  }
  for (const code of located.readWarnings)
    warnings.push({ code, message: FOREIGN_READ_MESSAGES[code](located.key), details: { key: located.key } });
  if (located.skipped.length > 0) {
    warnings.push({
      code: 'resume_files_skipped',
      message: `${located.skipped.length} file(s) failed validation or were missing and were skipped`,
      details: { count: located.skipped.length, reasonCodes: [...new Set(located.skipped.map((s) => s.reasonCode))] },
    });
  }
  if (located.duplicates > 0) {
    warnings.push({
      code: 'resume_duplicate_sequence',
      message: `${located.duplicates} other valid snapshot(s) also carry sequence ${snapshot.sequence}; resuming from ${located.key}`,
      details: { sequence: snapshot.sequence, duplicates: located.duplicates },
    });
  }
  return warnings;
}

/** `resume_snapshot_stale` for a snapshot older than `staleAfterMs`, `resume_clock_skew` for one from the future. */
function ageWarning(ageMs: number, staleAfterMs: number): ResumeWarning | undefined {
  if (ageMs > staleAfterMs) {
    return {
      code: 'resume_snapshot_stale',
      message: `the snapshot is ${formatDuration(ageMs)} old; time-sensitive state (rate limits, leases, caches) may have changed`,
      details: { ageMs, staleAfterMs },
    };
  }
  if (ageMs < -CLOCK_SKEW_TOLERANCE_MS)
    return {
      code: 'resume_clock_skew',
      message: `the snapshot was created ${Math.round(-ageMs / 1000)} s in the future of this clock`,
      details: { ageMs },
    };
  return undefined;
}

/**
 * `resume_external_state`, only when it is news: the snapshot names state outside it (files,
 * commits, a plan file), or its spec says its runs act on external systems. Warning on every
 * resume of every profile taught people to ignore warnings.
 */
function externalStateWarning(point: ResumePoint): ResumeWarning | undefined {
  const refs = Object.entries(point.externalRefs ?? {}).filter(([, n]) => n > 0);
  if (refs.length === 0 && !point.externalStateNote) return undefined;
  return {
    code: 'resume_external_state',
    message:
      refs.length > 0
        ? `the checkpoint refers to external state it does not capture (${refs.map(([k, n]) => `${n} ${k}`).join(', ')}); check it has not changed`
        : point.externalStateNote!,
    details: Object.fromEntries(refs),
  };
}
