import type { Snapshot } from '../contract/snapshot.js';
import type { ResumePoint, ResumeRule, ResumeRuleContext } from '../contract/resume-rule.js';
import { objectOf, stringsOf } from './rule-helpers.js';
import { assertObjectArgument } from '../contract/arguments.js';

/**
 * Resume rule of the default profile (any JSON state), also used for every profile
 * that has no rule of its own: resume after the restored snapshot.
 *
 * - a non-terminal status → `at` is the snapshot id, `continue_after_snapshot`, eligible;
 * - a terminal status (the profile's `isTerminal`) → `run_<status>`, not eligible.
 *
 * When the state is a JSON object, a few conventional top-level fields are picked up so
 * simple agents need no rule of their own: `completed` and `remaining` (arrays of
 * strings), `next_actions` (used as `remaining` when there is none) and
 * `continuation_prompt` (a string). Anything else stays in the payload.
 */
export const defaultResumeRule: ResumeRule<unknown> = (snapshot: Snapshot<unknown>, context: ResumeRuleContext): ResumePoint => {
  assertObjectArgument(snapshot, 'defaultResumeRule', 'snapshot');
  assertObjectArgument(context, 'defaultResumeRule', 'context');
  const state = objectOf(snapshot.payload);
  const completed = stringsOf(state?.completed);
  const remaining = stringsOf(state?.remaining);
  const nextActions = stringsOf(state?.next_actions);
  const prompt = typeof state?.continuation_prompt === 'string' ? state.continuation_prompt : undefined;
  const terminal = context.isTerminal?.(snapshot.status) ?? false;
  return {
    at: snapshot.id,
    reason: terminal ? `run_${snapshot.status}` : 'continue_after_snapshot',
    explanation: terminal
      ? `the run ended with status ${snapshot.status} at snapshot ${snapshot.id} (sequence ${snapshot.sequence}); there is nothing to resume automatically`
      : `continue after snapshot ${snapshot.id} (sequence ${snapshot.sequence}, ${snapshot.source}, status ${snapshot.status})`,
    eligible: !terminal,
    completed,
    remaining: remaining.length > 0 ? remaining : nextActions,
    ...(prompt !== undefined ? { continuationPrompt: prompt } : {}),
  };
};
