import type { CheckpointErrorDetails } from './errors.js';
import type { Snapshot } from './snapshot.js';
import type { DocumentClaims } from './document-format.js';
import type { ReasonCode } from './reason-codes.js';

/**
 * A warning attached to a resume plan. `code` is stable (see `RESUME_WARNING_CODES`);
 * rules may add their own codes, prefixed with their profile's area.
 */
export interface ResumeWarning {
  /** Stable machine-readable code, e.g. `resume_snapshot_stale`. */
  readonly code: string;
  /** One human-readable sentence. Never holds payload contents or secrets. */
  readonly message: string;
  /** Machine-readable context (counts, keys, ages); never payload contents. */
  readonly details?: CheckpointErrorDetails;
}

/**
 * Where and why a run resumes, as a profile's resume rule decides from the snapshot
 * that was restored. The ResumePlanner wraps it into a full `ResumePlan`.
 */
export interface ResumePoint {
  /** Where to continue: a phase (`phase_3_build`), a gate (`phase_3_build_gate`), `human_review`, a step id, a task index… */
  readonly at: string;
  /** Stable machine-readable reason for the decision, e.g. `phase_complete_next_phase`. */
  readonly reason: string;
  /** One human-readable sentence explaining the decision. */
  readonly explanation: string;
  /** False when the run must not be resumed automatically (a human decides). */
  readonly eligible: boolean;
  /** What is done, in order (phases, steps, tasks). */
  readonly completed: readonly string[];
  /** What remains, in order. */
  readonly remaining: readonly string[];
  /** Text ready to paste into a new agent session, where the profile has one. */
  readonly continuationPrompt?: string;
  /** The spec's resume notice, where it defines one (phased-workflow-github.md's `RESUME: …`). */
  readonly message?: string;
  /** State the profile restores for the caller (phase outputs, breaker state, cost…). */
  readonly restored?: Readonly<Record<string, unknown>>;
  /**
   * How many references to state outside the checkpoint the snapshot carries (files
   * modified, commits, a plan file…), by kind, for the "external state not captured"
   * warning. Counts only: the references themselves stay in `restored`.
   */
  readonly externalRefs?: Readonly<Record<string, number>>;
  /**
   * The profile's spec states that its runs act on external systems the checkpoint does not
   * capture (phased-workflow-github.md `resume_limitations.external_state`): the sentence to
   * warn with (`resume_external_state`) even when the snapshot names no external reference.
   */
  readonly externalStateNote?: string;
  /** Warnings the rule raises about this snapshot (a failed todo check, a missing field…). */
  readonly warnings?: readonly ResumeWarning[];
}

/**
 * A snapshot file the planner refused that may be newer than the restored snapshot (it claims
 * a higher sequence, or its sequence cannot be read), with what its name and content still say.
 * Resuming from an older snapshot steps over it; a rule decides whether that is safe.
 */
export interface UnreadableSnapshotFile extends DocumentClaims {
  /** The storage key; a batch file member is `<key>#<position>`. */
  readonly key: string;
  readonly kind: 'latest' | 'history' | 'batch';
  /** Why it was refused (`checkpoint_schema_invalid`, `checkpoint_integrity_mismatch`, …). */
  readonly reasonCode: ReasonCode;
  /** What is wrong, without payload contents. */
  readonly message: string;
}

/** What a resume rule may consult besides the snapshot. */
export interface ResumeRuleContext {
  /** Milliseconds since the epoch, from the planner's clock. */
  readonly now: number;
  /** True when `status` ends a run in the profile (the planner passes `profile.isTerminal`). */
  readonly isTerminal?: (status: string) => boolean;
  /** The name of the profile the snapshot was read with. */
  readonly profileName?: string;
  /**
   * The run's earlier snapshots, newest first (at most {@link RESUME_HISTORY_LIMIT}), when the
   * rule asked for them with {@link ResumeRule.readsHistory} and the planner could read them.
   * Snapshots held only in batch files are not among them.
   */
  readonly history?: readonly Snapshot<unknown>[];
  /**
   * Refused snapshot files that may be newer than the restored snapshot (see
   * {@link UnreadableSnapshotFile}); absent or empty when nothing was stepped over.
   */
  readonly unreadable?: readonly UnreadableSnapshotFile[];
}

/**
 * What the caller of the planner says holds now, for a rule to compare the snapshot with
 * (`planResume`'s `currentLessons`, for phased-workflow's lessons). Opaque to the planner:
 * each rule reads the members it knows.
 */
export type ResumeCallerContext = Readonly<Record<string, unknown>>;

/** The most earlier snapshots {@link planResume} reads for a rule that asks for the run's history. */
export const RESUME_HISTORY_LIMIT = 64;

/**
 * A profile's resume rule: a pure function of the restored snapshot (and the context the
 * planner gives it). `R` is the point it returns, for a rule that adds members of its own.
 */
export interface ResumeRule<P, R extends ResumePoint = ResumePoint> {
  (snapshot: Snapshot<P>, context: ResumeRuleContext): R;
  /**
   * Asks the planner for the run's earlier snapshots (`context.history`) when it returns
   * true (or a stop condition) for the restored snapshot — e.g. the phasedWorkflow rule, to
   * name the next phase from the run's own history. The planner reads them only then, so
   * other resumes cost no more reads; with a stop condition it reads newest first and stops
   * after the first earlier snapshot for which it returns true. @default never
   */
  readonly readsHistory?: (snapshot: Snapshot<P>) => boolean | ((earlier: Snapshot<unknown>) => boolean);
  /**
   * Warnings from comparing the restored snapshot with what the caller says holds now
   * (e.g. the phasedWorkflow rule's `resume_lessons_changed`). The planner adds them after
   * its own warnings about the snapshot's age and before the point's own. @default none
   */
  readonly callerWarnings?: (snapshot: Snapshot<P>, caller: ResumeCallerContext) => readonly ResumeWarning[];
}
