import type { Snapshot } from '../../contract/snapshot.js';
import type { ResumePoint, ResumeRule, ResumeRuleContext, UnreadableSnapshotFile } from '../../contract/resume-rule.js';
import { objectOf } from '../../resume/rule-helpers.js';
import { assertObjectArgument, assertOptionsArgument } from '../../contract/arguments.js';
import { activeLessonsOf, lessonsChangedWarnings } from './lessons.js';
import { byRank, KEY_PATTERN, knownPhaseKeys, phaseKeyOf, phaseNamesSeen } from './phase-keys.js';

export { PHASED_WORKFLOW_PHASE_KEYS } from './phase-keys.js';

/**
 * The part of a phased-workflow-github.md payload the resume rule reads: the checkpoint's
 * `phase` (`phase_{number}_{name}`) and the `state_snapshot` fields step_3_restore_state
 * names. The trigger is the snapshot's `source`. Fields are loose so the rule accepts
 * any payload type that carries them.
 */
export interface PhasedWorkflowResumeFields {
  readonly phase: string;
  readonly state_snapshot: {
    /** `phase_0`, `phase_0_5`, `phase_1` … `phase_8`: the phase's output, or null while it has none. */
    readonly phase_outputs: Readonly<Record<string, unknown>>;
    readonly circuit_breaker_state?: unknown;
    readonly cost_accumulated?: number;
    readonly active_lessons?: readonly unknown[];
  };
}

/** Options of {@link createPhasedWorkflowResumeRule}. */
export interface PhasedWorkflowResumeOptions {
  /**
   * The workflow's full phase names in order (`['phase_0_intake', 'phase_0_5_research',
   * 'phase_1_plan', …]`). With it, "the next phase" of `phase_complete` and the
   * completed/remaining lists use these names. Without it, a phase is named as the run's
   * own history names it (the `phase` of its earlier snapshots, which `planResume` passes
   * as `context.history`), else by its number key (`phase_1`), because a checkpoint only
   * records the current phase's full name and `phase_outputs` is keyed by number.
   * @default undefined (names from the run's history, else number keys)
   */
  readonly phases?: readonly string[];
  /**
   * The workflow's phase names by number key (`{ phase_0: 'intake', phase_1: 'plan' }`),
   * as `createPhasedWorkflowProfile({ phaseNames })` takes them: the full name of a key
   * is `<key>_<name>`; keys without a name keep their number key. Ignored when `phases` is given.
   * @default undefined
   */
  readonly phaseNames?: Readonly<Partial<Record<string, string>>>;
  /**
   * What `at` is when the last phase completed and there is no next phase.
   * @default 'workflow_complete'
   */
  readonly completeAt?: string;
}

/** A phasedWorkflow resume point: a {@link ResumePoint} with the lessons active at the checkpoint. */
export interface PhasedWorkflowResumePoint extends ResumePoint {
  /**
   * The lessons active when the snapshot was taken (phased-workflow-github.md
   * `active_lessons`); the rule warns `resume_lessons_changed` when the caller's current
   * lessons differ.
   */
  readonly activeLessons: readonly unknown[];
}

/** The workflow's phases as one snapshot sees them. */
interface PhaseOrder {
  /** The checkpoint's phase. */
  readonly phase: string;
  readonly outputs: Readonly<Record<string, unknown>>;
  /** The number keys known so far; naming phases from the run's history adds to it. */
  readonly known: Set<string>;
  readonly currentKey: string | undefined;
  /** The workflow's phases in order: the caller's names when given, else the number keys. */
  readonly names: readonly string[];
  /** The checkpoint's phase's position in `names`, or -1. */
  readonly index: number;
}

function phaseOrder(payload: PhasedWorkflowResumeFields, options: PhasedWorkflowResumeOptions, explicitOrder: boolean): PhaseOrder {
  const { phase, state_snapshot: state } = payload;
  const outputs = objectOf(state.phase_outputs) ?? {};
  const known = knownPhaseKeys(outputs);
  const currentKey = phaseKeyOf(phase, known);
  const byName = options.phaseNames;
  const names = explicitOrder ? [...options.phases!] : [...known].sort(byRank).map((k) => (byName?.[k] ? `${k}_${byName[k]}` : k));
  const order = { phase, outputs, known, currentKey, names, index: names.indexOf(phase) };
  if (order.index < 0 && currentKey !== undefined) order.index = names.findIndex((n) => keyOfName(order, n) === currentKey);
  return order;
}

function keyOfName(order: PhaseOrder, name: string): string | undefined {
  return KEY_PATTERN.test(name) ? name : phaseKeyOf(name, order.known);
}

function hasOutput(order: PhaseOrder, name: string): boolean {
  const key = keyOfName(order, name);
  return key !== undefined && order.outputs[key] !== null && order.outputs[key] !== undefined;
}

/** Where to resume and why; `remainingFrom` is where in the order the remaining phases start. */
interface Decision {
  readonly at: string;
  readonly reason: string;
  readonly explanation: string;
  readonly eligible: boolean;
  readonly remainingFrom: number;
}

/** The decision for a `phase_complete` checkpoint: the next phase, the end of the workflow, or a human when the phase is unknown. */
function afterPhaseComplete(
  snapshot: Snapshot<PhasedWorkflowResumeFields>,
  order: PhaseOrder,
  completeAt: string,
  history: readonly Snapshot<unknown>[],
): Decision {
  const { phase, names, index } = order;
  let next = index >= 0 ? names[index + 1] : undefined;
  // Nobody gave the next phase's name: the run's own snapshots may have named it (a phase
  // the run was in before a gate sent it back, or before an earlier resume).
  if (next !== undefined && KEY_PATTERN.test(next))
    next = phaseNamesSeen([snapshot.payload, ...history.map((s) => s.payload)], order.known).get(next) ?? next;
  const remainingFrom = index < 0 ? 0 : index + 1;
  if (next !== undefined) {
    // A bare number key means nobody named the phase: say so rather than pass it off as a name.
    const unnamed = KEY_PATTERN.test(next)
      ? ` (its full name is unknown: the run's snapshots never named ${next}; give the workflow's phases or phaseNames to name it)`
      : '';
    const explanation = `${phase} completed at checkpoint ${snapshot.sequence}; resume at the next phase, ${next}${unnamed}`;
    return { at: next, reason: 'phase_complete_next_phase', explanation, eligible: true, remainingFrom };
  }
  if (index >= 0) {
    return {
      at: completeAt,
      reason: 'phase_complete_workflow_done',
      eligible: false,
      explanation: `${phase} is the workflow's last phase and it completed; there is nothing left to resume`,
      remainingFrom,
    };
  }
  return {
    at: phase,
    reason: 'phase_complete_unknown_phase',
    eligible: false,
    explanation: `${phase} completed but is not a phase of this workflow, so the next phase is unknown; a human decides`,
    remainingFrom,
  };
}

/**
 * Triggers whose checkpoint a human or a gate must see: resuming from an older checkpoint
 * would step past a gate decision, a tripped breaker or an escalation.
 */
const NEVER_STEPPED_OVER = new Set(['gate_decision', 'circuit_breaker', 'escalation']);

/**
 * The refused newer checkpoint resume must not step over (step_2_validate_checkpoint:
 * `on_invalid: cannot resume`): one that claims a gate, breaker or escalation trigger (in any
 * case), or a higher sequence with no readable trigger. A file that says nothing (unparseable
 * bytes, no sequence) is taken for a torn copy of the restored snapshot.
 */
function blockingUnreadable(context: ResumeRuleContext | undefined): UnreadableSnapshotFile | undefined {
  return context?.unreadable?.find((f) =>
    f.source !== undefined ? NEVER_STEPPED_OVER.has(f.source.toLowerCase()) : f.sequence !== undefined,
  );
}

/** The decision when a newer checkpoint that cannot be read would be stepped over. */
function refuseStepOver(snapshot: Snapshot<PhasedWorkflowResumeFields>, order: PhaseOrder, file: UnreadableSnapshotFile): Decision {
  const what = `${file.source ?? 'checkpoint'}${file.sequence !== undefined ? ` ${file.sequence}` : ''}`;
  return {
    at: 'human_review',
    reason: 'newer_checkpoint_unreadable',
    eligible: false,
    explanation:
      `${file.key} (${what}) is newer than checkpoint ${snapshot.sequence} and failed validation (${file.reasonCode}: ${file.message}); ` +
      `resuming from checkpoint ${snapshot.sequence} would step past it, so a human decides (fix the file or start fresh)`,
    remainingFrom: order.index < 0 ? 0 : order.index,
  };
}

/** Where to resume, by the checkpoint's trigger. */
function decide(
  snapshot: Snapshot<PhasedWorkflowResumeFields>,
  order: PhaseOrder,
  completeAt: string,
  context: ResumeRuleContext | undefined,
): Decision {
  const { phase } = order;
  const trigger = snapshot.source;
  const remainingFrom = order.index < 0 ? 0 : order.index;
  const blocking = blockingUnreadable(context);
  if (blocking) return refuseStepOver(snapshot, order, blocking);
  if (trigger === 'phase_complete') return afterPhaseComplete(snapshot, order, completeAt, context?.history ?? []);
  if (trigger === 'gate_decision') {
    const explanation = `checkpoint ${snapshot.sequence} followed a gate decision on ${phase}; resume at its gate, which may need re-evaluation`;
    return { at: `${phase}_gate`, reason: 'gate_decision_reevaluate_gate', explanation, eligible: true, remainingFrom };
  }
  if (trigger === 'circuit_breaker') {
    return {
      at: 'human_review',
      reason: 'circuit_breaker_human_review',
      eligible: false,
      explanation: `a circuit breaker tripped during ${phase}; resuming requires a human decision`,
      remainingFrom,
    };
  }
  const explanation = `checkpoint ${snapshot.sequence} (${trigger}) was taken inside ${phase}; resume at the start of that phase`;
  return { at: phase, reason: 'restart_current_phase', explanation, eligible: true, remainingFrom };
}

/** What a rule made by {@link createPhasedWorkflowResumeRule} settles once, from its options. */
interface RuleSettings {
  readonly options: PhasedWorkflowResumeOptions;
  readonly completeAt: string;
  /** The caller gave the workflow's phases in order. */
  readonly explicitOrder: boolean;
}

function phasedResumePoint(
  snapshot: Snapshot<PhasedWorkflowResumeFields>,
  settings: RuleSettings,
  context: ResumeRuleContext | undefined,
): PhasedWorkflowResumePoint {
  const state = snapshot.payload.state_snapshot;
  const order = phaseOrder(snapshot.payload, settings.options, settings.explicitOrder);
  const completed = order.names.filter((n) => hasOutput(order, n));
  const { at, reason, explanation, eligible, remainingFrom } = decide(snapshot, order, settings.completeAt, context);
  const remaining = order.names.slice(remainingFrom).filter((n) => !hasOutput(order, n));
  const cost = typeof state.cost_accumulated === 'number' ? state.cost_accumulated : 0;
  const activeLessons = activeLessonsOf(state);
  const message =
    `RESUME: Continuing run ${snapshot.runId} from checkpoint ${snapshot.id}\n` +
    `Resume point: ${at}\n` +
    `Phases completed: ${completed.length > 0 ? completed.join(', ') : 'none'}\n` +
    `Cost so far: $${cost.toFixed(2)}`;

  return {
    at,
    reason,
    explanation,
    eligible,
    completed,
    remaining,
    message,
    restored: {
      current_phase: order.phase,
      ...(order.currentKey !== undefined ? { current_phase_key: order.currentKey } : {}),
      phase_outputs: order.outputs,
      circuit_breaker_state: state.circuit_breaker_state,
      cost_accumulated: cost,
      active_lessons: activeLessons,
    },
    activeLessons,
    // phased-workflow-github.md resume_limitations.external_state
    externalStateNote:
      'the checkpoint captures workflow state, not external state; if external systems changed (e.g. the GitHub repository), resume may produce different results',
  };
}

/**
 * Only a phase_complete names a phase the snapshot may not: the planner reads the run's
 * earlier snapshots for it alone, and never when the caller gave the order.
 * It stops at the newest earlier snapshot that names the next phase.
 */
function phasedReadsHistory(
  options: PhasedWorkflowResumeOptions,
  explicitOrder: boolean,
): (snapshot: Snapshot<PhasedWorkflowResumeFields>) => false | ((earlier: Snapshot<unknown>) => boolean) {
  return (snapshot) => {
    if (explicitOrder || snapshot?.source !== 'phase_complete' || !objectOf(snapshot.payload)) return false;
    const known = knownPhaseKeys(objectOf(objectOf(snapshot.payload.state_snapshot)?.phase_outputs) ?? {});
    const current = typeof snapshot.payload.phase === 'string' ? phaseKeyOf(snapshot.payload.phase, known) : undefined;
    if (current === undefined) return false;
    const order = [...known].sort(byRank);
    const next = order[order.indexOf(current) + 1];
    if (next === undefined || options.phaseNames?.[next]) return false;
    return (earlier) => phaseNamesSeen([earlier.payload], new Set(known)).has(next);
  };
}

/**
 * Builds the phasedWorkflow resume rule (phased-workflow-github.md `resume_capability`):
 *
 * - `phase_complete` → the next phase (`at` is its name from `options.phases` or
 *   `options.phaseNames`, else as the run's earlier snapshots name it, else its number
 *   key — and the explanation says the name is unknown); after the last phase,
 *   `workflow_complete` and `eligible: false`;
 * - `gate_decision` → `<phase>_gate` (the gate may need re-evaluation);
 * - `circuit_breaker` → `human_review`, `eligible: false` (a human decides);
 * - any other trigger → the start of the checkpoint's phase;
 * - a newer checkpoint the planner refused (`context.unreadable`) that claims a gate,
 *   breaker or escalation trigger, or a higher sequence with no readable trigger →
 *   `human_review`, `eligible: false`, reason `newer_checkpoint_unreadable`
 *   (step_2_validate_checkpoint's `on_invalid`: never step past it silently).
 *
 * It restores what step_3_restore_state lists (`phase_outputs`, `circuit_breaker_state`,
 * `cost_accumulated`, `active_lessons`, and `current_phase` set to the checkpoint's
 * phase) and emits step_5_notify's `RESUME:` message. Completed phases are those with a
 * non-null output; remaining ones are the phases from the current one on whose output is
 * still null (earlier null phases were skipped by the workflow). Given `planResume`'s
 * `currentLessons`, it warns `resume_lessons_changed` when they differ from the
 * checkpoint's `active_lessons` (lesson_changes).
 */
export function createPhasedWorkflowResumeRule(
  options: PhasedWorkflowResumeOptions = {},
): ResumeRule<PhasedWorkflowResumeFields, PhasedWorkflowResumePoint> {
  assertOptionsArgument(options, 'createPhasedWorkflowResumeRule');
  const settings: RuleSettings = {
    options,
    completeAt: options.completeAt ?? 'workflow_complete',
    explicitOrder: options.phases !== undefined && options.phases.length > 0,
  };
  const rule = (snapshot: Snapshot<PhasedWorkflowResumeFields>, context?: ResumeRuleContext): PhasedWorkflowResumePoint => {
    assertObjectArgument(snapshot, 'phasedWorkflowResumeRule', 'snapshot');
    assertObjectArgument(snapshot.payload, 'phasedWorkflowResumeRule', 'snapshot.payload');
    return phasedResumePoint(snapshot, settings, context);
  };
  return Object.assign(rule, { readsHistory: phasedReadsHistory(options, settings.explicitOrder), callerWarnings: lessonsChangedWarnings });
}

/** The phasedWorkflow resume rule with phases named by their number keys; see {@link createPhasedWorkflowResumeRule}. */
export const phasedWorkflowResumeRule: ResumeRule<PhasedWorkflowResumeFields, PhasedWorkflowResumePoint> = createPhasedWorkflowResumeRule();
