import type { z } from 'zod';
import type { JsonValue } from './json.js';
import type { Snapshot } from './snapshot.js';
import type { RetentionSummarySchema } from './retention-summary-schema.js';
/**
 * A length of time: milliseconds, or a string of number–unit pairs such as `'14d'`,
 * `'24h'`, `'1w2d'`, `'90m'`, `'1d12h30m'`. Units: `w` (7 days), `d` (24 hours), `h`,
 * `m` (minutes), `s`, `ms`. Months and years are not accepted because their length
 * varies; use a calendar rule (`keepMonthly`) for those.
 */
export type RetentionDuration = number | string;

/** An archived run's summary document (`<root>/<run_id>/summary.json`); see {@link RetentionSummarySchema}. */
export type RetentionSummary = z.infer<typeof RetentionSummarySchema>;

/** What a {@link RetentionSummarizer} is given. */
export interface RetentionSummaryInput {
  readonly runId: string;
  /** The newest readable snapshot of the run (its final checkpoint). */
  readonly latest: Snapshot<unknown>;
  /** Creation time of the run's first checkpoint, as far as storage (and an earlier summary) still know it. */
  readonly startedAt: string;
  /** Checkpoints the run wrote (its newest sequence number). */
  readonly checkpointCount: number;
  /** The summary written earlier, when the run is summarized again after resuming. */
  readonly previous?: RetentionSummary;
}

/**
 * Returns the profile-specific fields of an archived run's summary. They are merged over
 * the generic ones (`run_id`, `started_at`, `completed_at`, `final_status`), so a
 * summarizer may also override `started_at`, `completed_at` or `final_status`; the
 * fields savepoint owns cannot be overridden.
 */
export type RetentionSummarizer = (input: RetentionSummaryInput) => Readonly<Record<string, JsonValue>>;

/** Calendar units of {@link KeepCalendarRule}: one bucket per local hour, day, ISO week, month or year. */
export const CALENDAR_UNITS = ['hour', 'day', 'week', 'month', 'year'] as const;

/** A calendar bucket unit. */
export type CalendarUnit = (typeof CALENDAR_UNITS)[number];

interface RuleBase {
  /**
   * The name that appears in a kept snapshot's reasons, in dry runs and in the log.
   * @default derived from the rule: `keep-last`, `keep-within`, `keep-latest-failed`, `keep-daily`, `run-tier-recent` …
   */
  readonly name?: string;
}

/** Keeps the `count` newest snapshots of every run (restic `--keep-last`). */
export interface KeepLastRule extends RuleBase {
  readonly rule: 'keep-last';
  /** How many snapshots per run. */
  readonly count: number;
  /**
   * Only snapshots younger than this count (snapshot-lifecycle.md: "keep the latest 50 …
   * prune snapshots older than 14 days"). @default no age limit
   */
  readonly maxAge?: RetentionDuration;
}

/** Keeps every snapshot younger than `duration`, measured back from the planning time `now`. */
export interface KeepWithinRule extends RuleBase {
  readonly rule: 'keep-within';
  readonly duration: RetentionDuration;
}

/** Keeps the newest snapshot of every run whose status is `status` (snapshot-lifecycle.md: latest `failed`, latest `completed`). */
export interface KeepLatestStatusRule extends RuleBase {
  readonly rule: 'keep-latest-status';
  readonly status: string;
}

/**
 * Keeps, per run, the newest snapshot of each of the `count` most recent calendar buckets
 * that hold a snapshot (restic `--keep-daily` and friends). Buckets are local to an IANA
 * time zone; weeks are ISO weeks (Monday to Sunday).
 */
export interface KeepCalendarRule extends RuleBase {
  readonly rule: 'keep-calendar';
  readonly unit: CalendarUnit;
  /** How many buckets. */
  readonly count: number;
  /** IANA time zone the buckets are cut in (`Europe/Berlin`). @default 'UTC' */
  readonly timeZone?: string;
  /** Only snapshots younger than this count. @default no age limit */
  readonly maxAge?: RetentionDuration;
}

/** Keeps every snapshot of the listed runs (in addition to the runs in `preserved_runs.json`, which are always kept). */
export interface PreserveRunsRule extends RuleBase {
  readonly rule: 'preserve-runs';
  readonly runIds: readonly string[];
}

/**
 * Cross-run tiers (phased-workflow-github.md `retention_policy`): runs are ranked by their
 * newest snapshot, newest first. The `keepAll` most recent keep every snapshot; the next
 * `keepFinal` keep only their final snapshot; older runs are archived to a run summary.
 */
export interface RunTiersRule extends RuleBase {
  readonly rule: 'run-tiers';
  /** Runs that keep everything (spec: 10). */
  readonly keepAll: number;
  /** Runs after those that keep their final snapshot only (spec: runs 11–50, so 40). */
  readonly keepFinal: number;
  /**
   * What a run of the second tier keeps:
   * - `'latest'`: its `latest.json` alone — the spec's "delete all except latest.json"
   *   (history entries, batch files, the index; no summary is written). A run whose
   *   `latest.json` is not its readable newest snapshot, or that another rule keeps more
   *   of, falls back to `'checkpoint'`;
   * - `'checkpoint'`: its final snapshot (`latest.json` and its history entry), the index
   *   trimmed to it, and a summary written first.
   * `'latest'` requires `archiveKeeps: 'summary'` (an archived run never keeps more than a
   * second-tier run; the policy is refused otherwise).
   * @default 'checkpoint' (`phasedWorkflowRetention` says `'latest'`)
   */
  readonly finalKeeps?: 'latest' | 'checkpoint';
  /**
   * What an archived run (the third tier) keeps:
   * - `'summary'`: its summary only (the spec's "delete all checkpoints, keep only
   *   summary"): everything else goes, `latest.json` included, once the summary is written;
   * - `'final'`: its summary and its final snapshot, unless the plan is made with
   *   `allowRunDeletion: true`.
   * @default 'final' (`phasedWorkflowRetention` says `'summary'`)
   */
  readonly archiveKeeps?: 'summary' | 'final';
}

/** One retention rule. A policy keeps the union of what its rules keep, like restic's `forget` flags. */
export type RetentionRule = KeepLastRule | KeepWithinRule | KeepLatestStatusRule | KeepCalendarRule | PreserveRunsRule | RunTiersRule;

/**
 * A retention policy: what to keep, what to compress, how to summarize archived runs.
 *
 * Semantics (see docs/retention.md):
 * - A snapshot is kept when at least one rule (or a safety rule) keeps it; every other
 *   snapshot is deleted, or summarized when its run is archived by `run-tiers`.
 * - A policy with no rules keeps everything (it may still compress).
 * - Safety rules no policy can change: a run's latest snapshot, every snapshot of a
 *   preserved run, and anything unreadable are kept.
 *
 * @example
 * ```ts
 * const policy: RetentionPolicy = {
 *   name: 'week',
 *   rules: [keepDaily(7, { timeZone: 'Europe/Berlin' }), keepWeekly(4, { timeZone: 'Europe/Berlin' }), keepLatestStatus('failed')],
 *   compressAfter: '24h',
 * };
 * ```
 */
export interface RetentionPolicy {
  /** Shown in dry runs and in the retention log. @default 'custom' */
  readonly name?: string;
  /** The rules; the union of what they keep is kept. At most 24. */
  readonly rules: readonly RetentionRule[];
  /**
   * Gzip kept history entries at least this old (snapshot-lifecycle.md: 24 h). Never
   * `latest.json`, never batch files, and only for profiles with `compressHistory`.
   * @default no compression
   */
  readonly compressAfter?: RetentionDuration;
  /**
   * Adds the profile-specific fields of an archived run's summary (phased-workflow-github.md
   * `summary_schema`: `phases_completed`, `total_cost_usd`, `errors_count`). Not part of
   * the policy's JSON form. @default {@link genericRetentionSummarizer}
   */
  readonly summarizer?: RetentionSummarizer;
}
