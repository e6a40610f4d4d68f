import type { Snapshot } from '../../model/snapshot.js';
import type { ResumePoint, ResumeRule, ResumeRuleContext } from '../../resume/types.js';
import { objectOf } from '../../resume/rule-helpers.js';
import { assertObjectArgument, assertOptionsArgument } from '../../model/arguments.js';

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

/** The phase keys of phased-workflow-github.md's `phase_outputs`, in workflow order. */
export const PHASED_WORKFLOW_PHASE_KEYS = ['phase_0', 'phase_0_5', 'phase_1', 'phase_2', 'phase_3', 'phase_4', 'phase_5', 'phase_6', 'phase_7', 'phase_8'] as const;

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

const KEY_PATTERN = /^phase_(\d+)(?:_(\d+))?$/;

function keyRank(key: string): [number, number] {
  const m = KEY_PATTERN.exec(key);
  return m ? [Number(m[1]), m[2] === undefined ? -1 : Number(m[2])] : [Number.MAX_SAFE_INTEGER, 0];
}

function byRank(a: string, b: string): number {
  const [a1, a2] = keyRank(a);
  const [b1, b2] = keyRank(b);
  return a1 - b1 || a2 - b2 || (a < b ? -1 : a > b ? 1 : 0);
}

/**
 * The number key (`phase_0_5`) of a phase name (`phase_0_5_research`). A `_<digits>`
 * after the major number counts as a minor number only when that key is one the
 * workflow knows (`phase_0_5`), so `phase_2_5_checks` stays `phase_2` unless a
 * `phase_2_5` exists.
 */
function phaseKeyOf(phase: string, known: ReadonlySet<string>): string | undefined {
  const m = /^phase_(\d+)(?:_(\d+)(?=_|$))?(?=_|$)/.exec(phase);
  if (!m) return undefined;
  const minor = m[2] === undefined ? undefined : `phase_${m[1]}_${m[2]}`;
  if (minor !== undefined && known.has(minor)) return minor;
  return `phase_${m[1]}`;
}

/** A `phase_{number}_{name}` value (a full name, not a bare number key) found at `value`, if any. */
function fullPhaseName(value: unknown): string | undefined {
  return typeof value === 'string' && !KEY_PATTERN.test(value) && /^phase_\d+(?:_\d+)?_[A-Za-z]/.test(value) ? value : undefined;
}

/**
 * The full names a run's snapshots give its phases, by number key: each snapshot's `phase`,
 * its `current_phase_state.phase`, and a `phase` member of any phase output (read liberally:
 * other tools may record it there). The restored snapshot's own names win, then the newest
 * earlier snapshot's.
 */
function phaseNamesSeen(payloads: readonly unknown[], known: Set<string>): Map<string, string> {
  const seen = new Map<string, string>();
  const add = (value: unknown): void => {
    const name = fullPhaseName(value);
    if (name === undefined) return;
    const key = phaseKeyOf(name, known);
    if (key === undefined || seen.has(key)) return;
    seen.set(key, name);
    known.add(key);
  };
  for (const payload of payloads) {
    const p = objectOf(payload);
    if (!p) continue;
    add(p.phase);
    const state = objectOf(p.state_snapshot);
    add(objectOf(state?.current_phase_state)?.phase);
    for (const output of Object.values(objectOf(state?.phase_outputs) ?? {})) add(objectOf(output)?.phase);
  }
  return seen;
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
 * - any other trigger → the start of the checkpoint's phase.
 *
 * It restores what step_3_restore_state lists (`phase_outputs`, `circuit_breaker_state`,
 * `cost_accumulated`, `active_lessons`, and `current_phase` set to the checkpoint's
 * phase) and emits step_5_notify's `RESUME:` message. Completed phases are those with a
 * non-null output; remaining ones are the phases from the current one on whose output is
 * still null (earlier null phases were skipped by the workflow).
 */
export function createPhasedWorkflowResumeRule(options: PhasedWorkflowResumeOptions = {}): ResumeRule<PhasedWorkflowResumeFields> {
  assertOptionsArgument(options, 'createPhasedWorkflowResumeRule');
  const completeAt = options.completeAt ?? 'workflow_complete';
  const explicitOrder = options.phases !== undefined && options.phases.length > 0;
  const rule = (snapshot: Snapshot<PhasedWorkflowResumeFields>, context?: ResumeRuleContext): ResumePoint => {
    assertObjectArgument(snapshot, 'phasedWorkflowResumeRule', 'snapshot');
    assertObjectArgument(snapshot.payload, 'phasedWorkflowResumeRule', 'snapshot.payload');
    const { phase, state_snapshot: state } = snapshot.payload;
    const outputs = objectOf(state.phase_outputs) ?? {};
    const known = new Set<string>([...PHASED_WORKFLOW_PHASE_KEYS, ...Object.keys(outputs).filter((k) => KEY_PATTERN.test(k))]);
    const currentKey = phaseKeyOf(phase, known);

    // The workflow's order: the caller's names when given, else the number keys.
    const byName = options.phaseNames;
    const names = explicitOrder ? [...options.phases!] : [...known].sort(byRank).map((k) => (byName?.[k] ? `${k}_${byName[k]}` : k));
    const keyOfName = (name: string): string | undefined => (KEY_PATTERN.test(name) ? name : phaseKeyOf(name, known));
    let index = names.indexOf(phase);
    if (index < 0 && currentKey !== undefined) index = names.findIndex((n) => keyOfName(n) === currentKey);

    const hasOutput = (name: string): boolean => {
      const key = keyOfName(name);
      return key !== undefined && outputs[key] !== null && outputs[key] !== undefined;
    };
    const completed = names.filter(hasOutput);
    const trigger = snapshot.source;

    let at: string;
    let reason: string;
    let explanation: string;
    let eligible = true;
    let remainingFrom = index < 0 ? 0 : index;
    if (trigger === 'phase_complete') {
      let next = index >= 0 ? names[index + 1] : undefined;
      // Nobody gave the next phase's name: the run's own snapshots may have named it (a phase
      // the run was in before a gate sent it back, or before an earlier resume).
      if (next !== undefined && KEY_PATTERN.test(next)) next = phaseNamesSeen([snapshot.payload, ...(context?.history ?? []).map((s) => s.payload)], known).get(next) ?? next;
      remainingFrom = index < 0 ? 0 : index + 1;
      if (next !== undefined) {
        at = next;
        reason = 'phase_complete_next_phase';
        // A bare number key means nobody named the phase: say so rather than pass it off as a name.
        const unnamed = KEY_PATTERN.test(next) ? ` (its full name is unknown: the run's snapshots never named ${next}; give the workflow's phases or phaseNames to name it)` : '';
        explanation = `${phase} completed at checkpoint ${snapshot.sequence}; resume at the next phase, ${next}${unnamed}`;
      } else if (index >= 0) {
        at = completeAt;
        reason = 'phase_complete_workflow_done';
        eligible = false;
        explanation = `${phase} is the workflow's last phase and it completed; there is nothing left to resume`;
      } else {
        at = phase;
        reason = 'phase_complete_unknown_phase';
        eligible = false;
        explanation = `${phase} completed but is not a phase of this workflow, so the next phase is unknown; a human decides`;
      }
    } else if (trigger === 'gate_decision') {
      at = `${phase}_gate`;
      reason = 'gate_decision_reevaluate_gate';
      explanation = `checkpoint ${snapshot.sequence} followed a gate decision on ${phase}; resume at its gate, which may need re-evaluation`;
    } else if (trigger === 'circuit_breaker') {
      at = 'human_review';
      reason = 'circuit_breaker_human_review';
      eligible = false;
      explanation = `a circuit breaker tripped during ${phase}; resuming requires a human decision`;
    } else {
      at = phase;
      reason = 'restart_current_phase';
      explanation = `checkpoint ${snapshot.sequence} (${trigger}) was taken inside ${phase}; resume at the start of that phase`;
    }
    const remaining = names.slice(remainingFrom).filter((n) => !hasOutput(n));
    const cost = typeof state.cost_accumulated === 'number' ? state.cost_accumulated : 0;
    const activeLessons = Array.isArray(state.active_lessons) ? state.active_lessons : [];
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
        current_phase: phase,
        ...(currentKey !== undefined ? { current_phase_key: currentKey } : {}),
        phase_outputs: outputs,
        circuit_breaker_state: state.circuit_breaker_state,
        cost_accumulated: cost,
        active_lessons: activeLessons,
      },
      activeLessons,
      // phased-workflow-github.md resume_limitations.external_state
      externalStateNote: 'the checkpoint captures workflow state, not external state; if external systems changed (e.g. the GitHub repository), resume may produce different results',
    };
  };
  // Only a phase_complete names a phase the snapshot may not: the planner reads the run's
  // earlier snapshots for it alone, and never when the caller gave the order.
  // It stops at the newest earlier snapshot that names the next phase.
  const readsHistory = (snapshot: Snapshot<PhasedWorkflowResumeFields>): false | ((earlier: Snapshot<unknown>) => boolean) => {
    if (explicitOrder || snapshot?.source !== 'phase_complete' || !objectOf(snapshot.payload)) return false;
    const outputs = objectOf(objectOf(snapshot.payload.state_snapshot)?.phase_outputs) ?? {};
    const known = new Set<string>([...PHASED_WORKFLOW_PHASE_KEYS, ...Object.keys(outputs).filter((k) => KEY_PATTERN.test(k))]);
    const current = typeof snapshot.payload.phase === 'string' ? phaseKeyOf(snapshot.payload.phase, known) : undefined;
    if (current === undefined) return false;
    const order = [...known].sort(byRank);
    const next = order[order.indexOf(current) + 1];
    if (next === undefined || options.phaseNames?.[next]) return false;
    return (earlier) => phaseNamesSeen([earlier.payload], new Set(known)).has(next);
  };
  return Object.assign(rule, { readsHistory }) as ResumeRule<PhasedWorkflowResumeFields>;
}

/** The phasedWorkflow resume rule with phases named by their number keys; see {@link createPhasedWorkflowResumeRule}. */
export const phasedWorkflowResumeRule: ResumeRule<PhasedWorkflowResumeFields> = createPhasedWorkflowResumeRule();
