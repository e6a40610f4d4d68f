import { CheckpointError } from '../../contract/errors.js';
import { PHASE_KEYS, PHASE_PATTERN, type PhaseKey, type PhaseOutputs, type PhasedWorkflowPayload } from './schema.js';
import { assertObjectArgument } from '../../contract/arguments.js';

/** A `phase` value taken apart. */
export interface ParsedPhase {
  /** The `phase_outputs` key (`phase_0_5`). */
  readonly key: PhaseKey;
  /** The phase number (`0.5` for `phase_0_5`). */
  readonly number: number;
  /** The name after the number (`discovery`). */
  readonly name: string;
}

/** `phase_{number}_{name}` for a phase key and a name, e.g. `phaseId('phase_3', 'build')` → `phase_3_build`. */
export function phaseId(key: PhaseKey, name: string): string {
  const id = `${key}_${name}`;
  if (!PHASE_PATTERN.test(id))
    throw new CheckpointError('checkpoint_schema_invalid', 'a phase name must start with a letter and hold only letters, digits, _ and -');
  return id;
}

/**
 * Takes a `phase` value apart. Names start with a letter, so `phase_0_5_x` is always
 * phase 0.5 named `x`, never phase 0 named `5_x`. `undefined` when `phase` does not match.
 */
export function parsePhase(phase: string): ParsedPhase | undefined {
  const m = /^(phase_(0_5|[0-8]))_([A-Za-z][A-Za-z0-9_-]*)$/.exec(phase);
  if (!m) return undefined;
  return { key: m[1] as PhaseKey, number: m[2] === '0_5' ? 0.5 : Number(m[2]), name: m[3]! };
}

/** The phase key after `key` in phase order, or `undefined` after `phase_8`. */
export function nextPhaseKey(key: PhaseKey): PhaseKey | undefined {
  return PHASE_KEYS[PHASE_KEYS.indexOf(key) + 1];
}

/** `phase_outputs` with every phase still `null`. */
export function emptyPhaseOutputs(): PhaseOutputs {
  return Object.fromEntries(PHASE_KEYS.map((k) => [k, null])) as PhaseOutputs;
}

/** The phase keys whose output is not `null`, in phase order. */
export function completedPhaseKeys(outputs: PhaseOutputs): PhaseKey[] {
  assertObjectArgument(outputs, 'completedPhaseKeys', 'outputs');
  return PHASE_KEYS.filter((k) => outputs[k] !== null && outputs[k] !== undefined);
}

/**
 * The payload of a phased run that has just entered `phase`: every `phase_outputs` entry
 * `null`, `current_phase_state` started at `startedAt` with no progress, empty gate, health,
 * error, lesson and warning lists, no cost, empty `context_fields`. What a run's first
 * checkpoint carries; the orchestrator fills it in as the phases go.
 *
 * @param phase - a `phase_{number}_{name}` value, e.g. `phase_0_intake`.
 * @param startedAt - when the phase started, as RFC 3339 (`toRfc3339(clock.now())`).
 * @throws CheckpointError `checkpoint_schema_invalid` when `phase` is not `phase_{number}_{name}`.
 *
 * @example
 * ```ts
 * import { createWriter, initialPhasedPayload, memoryStorage, newUuidV4, phasedWorkflow, toRfc3339 } from 'savepoint';
 *
 * const writer = createWriter({ storage: memoryStorage(), profile: phasedWorkflow, runId: newUuidV4() });
 * const payload = initialPhasedPayload('phase_0_intake', toRfc3339(Date.now()));
 * await writer.checkpoint({ source: 'manual', status: 'in_progress', payload });
 * ```
 */
export function initialPhasedPayload(phase: string, startedAt: string): PhasedWorkflowPayload {
  if (!PHASE_PATTERN.test(phase))
    throw new CheckpointError(
      'checkpoint_schema_invalid',
      `phase must be phase_{number}_{name} (e.g. phase_0_intake), got ${JSON.stringify(phase)}`,
    );
  return {
    phase,
    state_snapshot: {
      phase_outputs: emptyPhaseOutputs(),
      current_phase_state: { phase, started_at: startedAt, progress: {}, partial_output: null },
      gate_history: [],
      circuit_breaker_state: {},
      cost_accumulated: 0,
      health_history: [],
      errors_encountered: [],
      active_lessons: [],
    },
    context_fields: { api_metrics: {}, fallback_flags: {}, iteration_counts: {}, warnings: [] },
  };
}
