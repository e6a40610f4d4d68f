/**
 * ResumePlanner: finds the newest valid snapshot of a run, restores it, and says where
 * to resume and why.
 */
export type { ResumePoint, ResumeRule, ResumeRuleContext, ResumeWarning } from './types.js';
export * from './rules/index.js';
