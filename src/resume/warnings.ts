/**
 * Stable codes of the warnings a resume plan carries. phased-workflow-github.md's
 * `resume_limitations` give the first three; the others say how the snapshot was found.
 * Rules add their own (`resume_todo_noncompliant`, `resume_partial_commits`,
 * `resume_task_count_mismatch`). Codes are never renamed, only added.
 */
export const RESUME_WARNING_CODES = [
  /** time_sensitivity: the snapshot is older than `staleAfterMs`; rate limits, caches and leases may have changed since. */
  'resume_snapshot_stale',
  /** lesson_changes: the caller's current active lessons differ from the snapshot's. */
  'resume_lessons_changed',
  /** external_state: checkpoints capture workflow state, not the outside world (repos, files, APIs), which may have changed. */
  'resume_external_state',
  /** `latest` was missing: the snapshot comes from the index or history. */
  'resume_latest_missing',
  /** `latest` failed validation: the snapshot comes from the index or history. */
  'resume_latest_invalid',
  /** `latest` was valid but older than a history entry (a crash between the history and latest writes). */
  'resume_latest_stale',
  /**
   * `latest` holds a snapshot another tool wrote that no history entry holds and whose sequence
   * its content does not carry (an id without a number), newer by time than history: it is
   * resumed, numbered after the history.
   */
  'resume_latest_renumbered',
  /** Some files failed validation and were skipped (see `skipped`). */
  'resume_files_skipped',
  /** Two different valid snapshots carry the restored snapshot's sequence. */
  'resume_duplicate_sequence',
  /** The snapshot's status ends the run (completed, failed…). */
  'resume_run_terminal',
  /** The snapshot was created in the future by the planner's clock: clocks disagree. */
  'resume_clock_skew',
  /** The snapshot has no savepoint seal (another tool wrote it); read against the spec's schema (`FOREIGN_READ_WARNINGS`). */
  'checkpoint_unsealed',
  /** The snapshot carries another tool's id or checksum scheme, which savepoint cannot verify. */
  'checkpoint_foreign_seal',
  /** A single-artifact file was edited after savepoint sealed it; the edited file is the newest truth. */
  'checkpoint_integrity_mismatch',
  /** A time in the snapshot carries no offset; it was read as UTC. */
  'checkpoint_time_without_offset',
  /** The snapshot's document carries no sequence; its number comes from the run's order by time. */
  'checkpoint_sequence_derived',
] as const;

/** A warning code of the planner itself; see {@link RESUME_WARNING_CODES}. */
export type ResumeWarningCode = (typeof RESUME_WARNING_CODES)[number];
