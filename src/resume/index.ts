/**
 * ResumePlanner: finds the newest valid snapshot of a run, restores it, and says where
 * to resume and why.
 */
export type { ResumePoint, ResumeRule, ResumeRuleContext, ResumeWarning } from './types.js';
export { planResume, type PlanResumeOptions, type ResumePlan, type ResumeSource } from './plan-resume.js';
export {
  locateNewestSnapshot,
  historyKeysDerivable,
  type LocateSnapshotOptions,
  type LocatedSnapshot,
  type NewerCheck,
  type SkippedFile,
  type SnapshotOrigin,
} from './locate.js';
export { findIncompleteRuns, type FindIncompleteRunsOptions, type IncompleteRun } from './incomplete-runs.js';
export { RESUME_WARNING_CODES, type ResumeWarningCode } from './warnings.js';
export * from './rules/index.js';
