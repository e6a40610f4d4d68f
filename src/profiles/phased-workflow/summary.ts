import type { RetentionSummarizer } from '../../contract/retention-policy.js';
import { assertObjectArgument } from '../../contract/arguments.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The profile-specific summary fields of a phasedWorkflow payload
 * (`{ phase, state_snapshot: { phase_outputs, cost_accumulated, errors_encountered, … }, context_fields }`):
 * `phases_completed` counts the non-null entries of `phase_outputs` (`phase_0` …
 * `phase_8`, including `phase_0_5`), `total_cost_usd` is `cost_accumulated`,
 * `errors_count` is the length of `errors_encountered`. A missing or malformed field
 * counts as 0.
 */
export function summarizePhasedPayload(payload: unknown): { phases_completed: number; total_cost_usd: number; errors_count: number } {
  const state = isRecord(payload) && isRecord(payload.state_snapshot) ? payload.state_snapshot : {};
  const outputs = isRecord(state.phase_outputs) ? state.phase_outputs : {};
  const cost = state.cost_accumulated;
  return {
    phases_completed: Object.values(outputs).filter((v) => v !== null && v !== undefined).length,
    total_cost_usd: typeof cost === 'number' && Number.isFinite(cost) ? cost : 0,
    errors_count: Array.isArray(state.errors_encountered) ? state.errors_encountered.length : 0,
  };
}

/** The phasedWorkflow summarizer: {@link summarizePhasedPayload} over the final checkpoint's payload. */
export const phasedWorkflowSummarizer: RetentionSummarizer = (input) => {
  assertObjectArgument(input, 'phasedWorkflowSummarizer', 'input');
  assertObjectArgument(input.latest, 'phasedWorkflowSummarizer', 'input.latest');
  return summarizePhasedPayload(input.latest.payload);
};
