import type { JsonValue } from '../../contract/json.js';
import { CheckpointError } from '../../contract/errors.js';
import type { Priority, Snapshot } from '../../contract/snapshot.js';
import { completedPhaseKeys } from './phases.js';
import {
  PHASED_TRIGGER_PRIORITIES,
  type PhaseKey,
  type PhasedGateRecord,
  type PhasedRunSummary,
  type PhasedStatus,
  type PhasedTrigger,
  type PhasedWorkflowPayload,
} from './schema.js';
import { assertObjectArgument, assertOptionsArgument } from '../../contract/arguments.js';

/**
 * A checkpoint request at one of phased-workflow-github.md's trigger points: the
 * `trigger` (snapshot source), its spec priority, the run status and the payload.
 */
export interface PhasedCheckpointRequest {
  readonly source: PhasedTrigger;
  readonly priority: Priority;
  readonly status: PhasedStatus;
  readonly payload: PhasedWorkflowPayload;
}

const request = (source: PhasedTrigger, payload: PhasedWorkflowPayload, status: PhasedStatus): PhasedCheckpointRequest => ({
  source,
  priority: PHASED_TRIGGER_PRIORITIES[source],
  status,
  payload,
});

/**
 * Builders for the spec's `checkpoint_triggers`. Each returns the request with the
 * payload updated the way the trigger's `contents` describe; the caller's payload is
 * not modified.
 */
export const phasedTriggers = {
  /** `after_each_phase` (high): stores the phase's full output under its key; `phase` stays the completed phase. */
  phaseComplete(
    payload: PhasedWorkflowPayload,
    key: PhaseKey,
    output: Record<string, JsonValue>,
    status: PhasedStatus = 'in_progress',
  ): PhasedCheckpointRequest {
    const state = payload.state_snapshot;
    return request(
      'phase_complete',
      { ...payload, state_snapshot: { ...state, phase_outputs: { ...state.phase_outputs, [key]: output } } },
      status,
    );
  },

  /** `after_gate_decision` (high): appends the decision to `gate_history` and records the gate's iteration in `iteration_counts`. */
  gateDecision(payload: PhasedWorkflowPayload, gate: PhasedGateRecord, status: PhasedStatus = 'in_progress'): PhasedCheckpointRequest {
    return request(
      'gate_decision',
      {
        ...payload,
        state_snapshot: { ...payload.state_snapshot, gate_history: [...payload.state_snapshot.gate_history, { ...gate }] },
        context_fields: {
          ...payload.context_fields,
          iteration_counts: { ...payload.context_fields.iteration_counts, [gate.gate_id]: gate.iteration },
        },
      },
      status,
    );
  },

  /**
   * `on_circuit_breaker_trip` (critical): records the breaker's state. The run is
   * `paused` by default, because the spec resumes a tripped run only after human review.
   */
  circuitBreakerTrip(
    payload: PhasedWorkflowPayload,
    breaker: string,
    breakerState: JsonValue,
    status: PhasedStatus = 'paused',
  ): PhasedCheckpointRequest {
    const state = payload.state_snapshot;
    return request(
      'circuit_breaker',
      { ...payload, state_snapshot: { ...state, circuit_breaker_state: { ...state.circuit_breaker_state, [breaker]: breakerState } } },
      status,
    );
  },

  /** Any other trigger (`escalation`, `iteration`, `expensive_op`, `destructive_op`, `manual`, …) with the payload as given. */
  at(source: PhasedTrigger, payload: PhasedWorkflowPayload, status: PhasedStatus = 'in_progress'): PhasedCheckpointRequest {
    return request(source, payload, status);
  },
} as const;

/** Options of {@link createCostThresholdTrigger}. */
export interface CostThresholdOptions {
  /** The run's budget in USD. */
  readonly budgetUsd: number;
  /**
   * Fraction of the budget at which the trigger fires (spec: "Cost approaches threshold (80%)").
   * @default 0.8
   */
  readonly threshold?: number;
  /**
   * The trigger already fired in this run (a resumed run whose cost was past the
   * threshold): it will not fire again.
   * @default false
   */
  readonly fired?: boolean;
}

/** Watches `cost_accumulated` and fires `cost_threshold` once. See {@link createCostThresholdTrigger}. */
export interface CostThresholdTrigger {
  /**
   * The `cost_threshold` request the first time `payload.state_snapshot.cost_accumulated`
   * reaches the threshold; `undefined` before, and every time after.
   */
  check(payload: PhasedWorkflowPayload, status?: PhasedStatus): PhasedCheckpointRequest | undefined;
  /** True once the trigger has fired. */
  readonly fired: boolean;
  /** The cost in USD at which it fires. */
  readonly thresholdUsd: number;
}

/**
 * The spec's `on_cost_threshold` trigger (priority high): "Cost breakdown + current
 * state" once cost reaches 80% of the budget, as a snapshot before a potential halt.
 * It fires once per run.
 *
 * @example
 * ```ts
 * const cost = createCostThresholdTrigger({ budgetUsd: 25 });
 * const req = cost.check(payload);
 * if (req) await writer.checkpoint(req);
 * ```
 */
export function createCostThresholdTrigger(options: CostThresholdOptions): CostThresholdTrigger {
  assertOptionsArgument(options, 'createCostThresholdTrigger');
  const threshold = options.threshold ?? 0.8;
  if (!(options.budgetUsd > 0) || !Number.isFinite(options.budgetUsd))
    throw new CheckpointError('checkpoint_config_invalid', 'cost threshold: budgetUsd must be a positive number');
  if (!(threshold > 0 && threshold <= 1))
    throw new CheckpointError('checkpoint_config_invalid', 'cost threshold: threshold must be in (0, 1]');
  const thresholdUsd = options.budgetUsd * threshold;
  let fired = options.fired ?? false;
  return {
    check(payload, status = 'in_progress') {
      if (fired || payload.state_snapshot.cost_accumulated < thresholdUsd) return undefined;
      fired = true;
      return request('cost_threshold', payload, status);
    },
    get fired() {
      return fired;
    },
    thresholdUsd,
  };
}

/**
 * The spec's `summary_schema` record of a run, from its first and last snapshots:
 * kept for archived runs when retention deletes their checkpoints.
 */
export function phasedRunSummary(
  first: Pick<Snapshot<PhasedWorkflowPayload>, 'createdAt'>,
  last: Snapshot<PhasedWorkflowPayload>,
): PhasedRunSummary {
  assertObjectArgument(first, 'phasedRunSummary', 'first');
  assertObjectArgument(last, 'phasedRunSummary', 'last');
  assertObjectArgument(last.payload, 'phasedRunSummary', 'last.payload');
  return {
    run_id: last.runId,
    started_at: first.createdAt,
    completed_at: last.createdAt,
    phases_completed: completedPhaseKeys(last.payload.state_snapshot.phase_outputs).length,
    final_status: last.status,
    total_cost_usd: last.payload.state_snapshot.cost_accumulated,
    errors_count: last.payload.state_snapshot.errors_encountered.length,
  };
}
