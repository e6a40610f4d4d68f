/**
 * Retention: a pure planner of composable rules (like restic's `forget`), an inventory
 * built from storage, and an applier that executes a plan and logs it.
 */
export {
  CALENDAR_UNITS,
  MAX_RETENTION_RULES,
  RetentionRuleSchema,
  RetentionPolicySchema,
  retentionPolicyJsonSchema,
  resolveRetentionPolicy,
  retentionRuleName,
  describeRetentionRule,
  keepLast,
  keepWithin,
  keepLatestStatus,
  keepHourly,
  keepDaily,
  keepWeekly,
  keepMonthly,
  keepYearly,
  preserveRuns,
  keepRunTiers,
  type CalendarUnit,
  type CalendarRuleOptions,
  type KeepLastRule,
  type KeepWithinRule,
  type KeepLatestStatusRule,
  type KeepCalendarRule,
  type PreserveRunsRule,
  type RunTiersRule,
  type RetentionRule,
  type RetentionPolicy,
  type ResolvedRule,
  type ResolvedRetentionPolicy,
} from './policy.js';
export { parseRetentionDuration, formatRetentionDuration, RETENTION_DURATION_PATTERN, type RetentionDuration } from './duration.js';
export { calendarBucketer, calendarBucketLabel } from './calendar.js';
export {
  buildInventory,
  compareInventorySnapshots,
  type BuildInventoryOptions,
  type RetentionInventory,
  type InventoryRun,
  type InventorySnapshot,
  type InventoryBatch,
  type InventoryProblem,
  type RetentionFile,
  type UnreadableFile,
} from './inventory.js';
export {
  planRetention,
  type RetentionPlan,
  type PlanRetentionOptions,
  type PlannedSnapshot,
  type PlannedRun,
  type RetentionAction,
  type RetentionOperation,
  type RunTier,
  type DeleteReason,
} from './plan.js';
export { applyRetention, RetentionPruneError, type ApplyRetentionOptions, type RetentionReport, type RetentionOperationOutcome } from './apply.js';
export { formatRetentionPlan, formatRetentionReport, type FormatRetentionPlanOptions } from './format.js';
export {
  RetentionSummarySchema,
  retentionSummaryJsonSchema,
  genericRetentionSummarizer,
  phasedWorkflowSummarizer,
  summarizePhasedPayload,
  buildRetentionSummary,
  encodeRetentionSummary,
  decodeRetentionSummary,
  type RetentionSummary,
  type RetentionSummaryInput,
  type RetentionSummarizer,
} from './summary.js';
export {
  PreservedRunEntrySchema,
  PreservedRunsInputSchema,
  PreservedRunsSchema,
  preservedRunsJsonSchema,
  preservedRunsCanonicalJsonSchema,
  decodePreservedRuns,
  encodePreservedRuns,
  preservedRunIds,
  preserveRun,
  unpreserveRun,
  type PreservedRunEntry,
  type PreservedRuns,
  type PreserveRunOptions,
} from './preserved-runs.js';
export {
  RetentionLogSchema,
  RetentionLogEntrySchema,
  RetentionLogRunSchema,
  retentionLogJsonSchema,
  decodeRetentionLog,
  encodeRetentionLog,
  readRetentionLog,
  appendRetentionLog,
  DEFAULT_RETENTION_LOG_ENTRIES,
  type RetentionLog,
  type RetentionLogEntry,
} from './log.js';
export {
  snapshotLifecycleRetention,
  phasedWorkflowRetention,
  createSnapshotLifecycleRetention,
  createPhasedWorkflowRetention,
  type SnapshotLifecycleRetentionOptions,
  type PhasedWorkflowRetentionOptions,
} from './defaults.js';
export { runRetention, cleanupAfterRunCompletion, type RunRetentionOptions, type RetentionRun, type CleanupAfterRunCompletionOptions, type RetentionCleanupResult } from './run.js';
