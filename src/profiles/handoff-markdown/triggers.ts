import { CheckpointError } from '../../contract/errors.js';
import type { TriggerSpec } from '../../contract/profile.js';
import type { HandoffPayload } from './model.js';
import { assertArrayArgument, assertObjectArgument } from '../../contract/arguments.js';

/** The five checkpoint triggers of handoff-markdown.md ("Create a new checkpoint when"), in the spec's order. */
export const HANDOFF_TRIGGERS = {
  phase_completion: { description: 'Phase completion: a distinct unit of work is done' },
  major_decision: { description: 'Major decision: the user makes a significant choice' },
  context_shift: { description: 'Context shift: work direction changes substantially' },
  session_break: { description: 'Session break: before ending a session' },
  pre_compression: { description: 'Pre-compression: before context window pressure' },
} as const satisfies Record<string, TriggerSpec>;

/** A hand-off trigger name. */
export type HandoffTrigger = keyof typeof HANDOFF_TRIGGERS;

type Body = Pick<HandoffPayload, 'problem' | 'sessionIntent' | 'decisions' | 'playByPlay'>;

/**
 * The triggers a change from `previous` to `next` fires, in the spec's order (use the
 * first as the checkpoint's `source`):
 *
 * - `phase_completion` — Play-By-Play gained entries (a unit of work was recorded as done);
 * - `major_decision` — Decisions gained entries;
 * - `context_shift` — the Session Intent or the Problem changed (the goal shifted).
 *
 * `session_break` and `pre_compression` cannot be seen in the document: the caller
 * raises them (see {@link contextPressure} for the second). With no `previous`, a
 * first checkpoint, nothing is inferred.
 *
 * @example
 * ```ts
 * const [source = 'session_break'] = detectHandoffTriggers(previous, next);
 * await writer.checkpoint({ source, status: 'in_progress', payload: next });
 * ```
 */
export function detectHandoffTriggers(previous: Body | undefined, next: Body): HandoffTrigger[] {
  assertObjectArgument(next, 'detectHandoffTriggers', 'next');
  if (!previous) return [];
  assertObjectArgument(previous, 'detectHandoffTriggers', 'previous');
  for (const body of [previous, next])
    for (const field of ['decisions', 'playByPlay'] as const) assertArrayArgument(body[field], 'detectHandoffTriggers', field);
  const fired: HandoffTrigger[] = [];
  if (next.playByPlay.length > previous.playByPlay.length) fired.push('phase_completion');
  const before = new Set(previous.decisions);
  if (next.decisions.some((d) => !before.has(d))) fired.push('major_decision');
  if (next.sessionIntent.trim() !== previous.sessionIntent.trim() || next.problem.trim() !== previous.problem.trim())
    fired.push('context_shift');
  return fired;
}

/** Input of {@link contextPressure}. */
export interface ContextPressureInput {
  /** Tokens the conversation uses now. */
  readonly usedTokens: number;
  /** Size of the model's context window in tokens. */
  readonly contextWindowTokens: number;
  /**
   * Fraction of the window at which to checkpoint before the runtime compresses.
   * @default 0.8
   */
  readonly threshold?: number;
}

/**
 * True when a `pre_compression` checkpoint is due: the conversation fills at least
 * `threshold` of the context window. The spec asks for checkpoints "before context
 * window pressure", so the default (80 %) leaves room to write the hand-off itself.
 */
export function contextPressure(input: ContextPressureInput): boolean {
  assertObjectArgument(input, 'contextPressure', 'input');
  const threshold = input.threshold ?? 0.8;
  if (!(input.contextWindowTokens > 0) || !(threshold > 0 && threshold <= 1) || !(input.usedTokens >= 0)) {
    throw new CheckpointError(
      'checkpoint_config_invalid',
      'contextPressure needs usedTokens >= 0, contextWindowTokens > 0 and 0 < threshold <= 1',
    );
  }
  return input.usedTokens >= input.contextWindowTokens * threshold;
}
