import type { Snapshot } from '../model/snapshot.js';

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
}

/** What a resume rule may consult besides the snapshot. */
export interface ResumeRuleContext {
  /** Milliseconds since the epoch, from the planner's clock. */
  readonly now: number;
}

/** A profile's resume rule: a pure function of the restored snapshot. */
export type ResumeRule<P> = (snapshot: Snapshot<P>, context: ResumeRuleContext) => ResumePoint;
