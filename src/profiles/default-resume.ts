import type { JsonValue } from '../contract/json.js';
import type { Profile } from '../contract/profile.js';
import { assertOptionsArgument } from '../contract/arguments.js';
import { planResume as planProfileResume, type PlanResumeOptions, type ResumePlan } from '../resume/plan-resume.js';
import {
  findIncompleteRuns as findProfileIncompleteRuns,
  type FindIncompleteRunsOptions,
  type IncompleteRun,
} from '../resume/incomplete-runs.js';
import { defaultProfile } from './default-profile.js';

/**
 * A profile as the resume front ends take it: the run's own profile, typed by its payload, or
 * one over any JSON (`defaultProfile`, `jsonProfile()`) when the caller names the payload type
 * with a type argument instead — `planResume<AgentState>({ storage, runId })`. The payload type
 * is the caller's to name: reading validates the document against the profile's schema, not
 * against a TypeScript type, exactly as `createWriter<AgentState>()` does when writing.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- a profile of any trigger and status names
type ResumeProfile<P> = Profile<P> | Profile<JsonValue, any, any>;

/** Options of {@link planResume}: the engine's, with `profile` optional (default {@link defaultProfile}). */
export type PlanResumeInput<P> = Omit<PlanResumeOptions<P>, 'profile'> & { readonly profile?: ResumeProfile<P> };

/** Options of {@link findIncompleteRuns}: the engine's, with `profile` optional (default {@link defaultProfile}). */
export type FindIncompleteRunsInput<P> = Omit<FindIncompleteRunsOptions<P>, 'profile'> & { readonly profile?: ResumeProfile<P> };

function withProfile<O extends { readonly profile?: unknown }, P>(options: O): O & { readonly profile: Profile<P> } {
  // Only an absent profile is defaulted: `null` or any other value is a mistake the engine refuses.
  const profile = options.profile === undefined ? defaultProfile : options.profile;
  return { ...options, profile: profile as Profile<P> };
}

/**
 * Where and how to resume a run: its newest valid snapshot, the rule's decision, and why
 * (see the engine's `planResume` in `resume/plan-resume.ts` for every rule). Without a
 * `profile` it reads with {@link defaultProfile}, the profile `createWriter` writes with when
 * given none; name the payload type with a type argument.
 *
 * @example
 * ```ts
 * interface AgentState { step: number; notes: string[] }
 * const plan = await planResume<AgentState>({ storage, runId: 'run-1' });
 * if (plan.eligible) console.log(plan.snapshot.payload.step);
 * ```
 */
export async function planResume<P = JsonValue>(options: PlanResumeInput<P>): Promise<ResumePlan<P>> {
  assertOptionsArgument(options, 'planResume');
  return planProfileResume(withProfile<PlanResumeInput<P>, P>(options));
}

/**
 * The runs whose newest snapshot is not terminal, newest first (see the engine's
 * `findIncompleteRuns` in `resume/incomplete-runs.ts`). Without a `profile` it reads with
 * {@link defaultProfile}.
 */
export async function findIncompleteRuns<P = JsonValue>(options: FindIncompleteRunsInput<P>): Promise<IncompleteRun[]> {
  assertOptionsArgument(options, 'findIncompleteRuns');
  return findProfileIncompleteRuns(withProfile<FindIncompleteRunsInput<P>, P>(options));
}
