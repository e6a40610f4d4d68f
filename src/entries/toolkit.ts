/**
 * `savepoint/toolkit` — the building blocks under the root entry, for people who write
 * their own profiles, storage adapters or store tools: the stored document formats and
 * their seals, layouts and key naming, the run index and batch files, schemas of every
 * store-wide document, the retention inventory and rule schemas, the resume locator, and
 * the writer's detailed result and event types.
 *
 * Most applications need only the root entry (`savepoint`). Like the root, this entry
 * imports no `node:` module.
 *
 * @module savepoint/toolkit
 */

// Errors, ids, time.
export { toCheckpointError, type CheckpointErrorOptions } from '../model/errors.js';
export { isReasonCode } from '../model/reason-codes.js';
export { newSnapshotId, assertRunId, RESERVED_RUN_IDS } from '../model/ids.js';
export { toRfc3339, parseRfc3339, sleep, type TimerHandle, type TimerOptions } from '../model/clock.js';

// The snapshot model and validation.
export {
  PRIORITIES,
  FORMAT_VERSION,
  Rfc3339Schema,
  TriggerRecordSchema,
  IntegritySchema,
  snapshotSchema,
  type Priority,
  type Integrity,
  type SnapshotDraft,
} from '../model/snapshot.js';
export { coalescedTriggers } from '../model/coalesced-triggers.js';
export { compileValidator, assertValid, type JsonSchema, type SchemaIssue, type DocumentValidator } from '../model/validate.js';

// Codec and stored documents.
export { sha256Hex } from '../codec/sha256.js';
export { gzip, gunzip, type GunzipOptions } from '../codec/gzip.js';
export {
  jsonDocumentFormat,
  documentChecksum,
  sealDocument,
  sealDocumentBytes,
  verifyDocument,
  type SealedDocument,
  type DocumentFormat,
  type EncodedSnapshot,
  type JsonDocumentFormatOptions,
  decodeTolerant,
  FOREIGN_READ_WARNINGS,
  type ForeignRead,
  type ForeignReadWarning,
} from '../codec/json-document.js';
export type { RunImporter, RunImportOptions, RunImportReport, RunImportFile, RunImportAction } from '../profiles/import-run.js';
export { splitDocument, resolveParts, type PartRef, type PartFile, type SplitResult, type SplitOptions } from '../codec/parts.js';
export { RunIndexSchema, RunIndexEntrySchema } from '../model/run-index-schema.js';
export {
  runIndexJsonSchema,
  decodeRunIndex,
  encodeRunIndex,
  emptyRunIndex,
  mergeRunIndex,
  pruneRunIndex,
  type RunIndex,
  type RunIndexEntry,
} from '../model/run-index.js';
export { BatchFileSchema } from '../profiles/batch-file-schema.js';
export { batchFileJsonSchema, encodeBatchFile, decodeBatchFile, type BatchFile, type BatchMember } from '../profiles/batch-file.js';

// Storage: keys and the rest of the contract.
export { assertKey, assertPrefix, joinKey, MAX_KEY_LENGTH } from '../storage/keys.js';
export { assertBatchOperation } from '../storage/batch-operation.js';
export type { BatchCheck, RateBudget } from '../storage/adapter.js';
export type { BufferedStorage, BufferedPutResult, BufferedBatchOutcome } from '../storage/buffered.js';

// Profiles: layouts, reading, the default profile's document.
export type { TriggerSpec, StatusSpec, SnapshotIdContext, PayloadOf } from '../profiles/define-profile.js';
export { validateSync, isStandardSchema, type StandardSchemaV1 } from '../model/standard-schema.js';
export {
  historyBySnapshotId,
  GZIP_SUFFIX,
  type ProfileLayout,
  type KeyInfo,
  type KeyKind,
  type HistoryRef,
  type HistoryNaming,
  type StandardLayoutOptions,
} from '../profiles/layout.js';
export { DefaultDocumentSchema, JsonValueSchema, JsonStateSchema } from '../profiles/default-document-schema.js';
export { LIFECYCLE_STATUSES, type DefaultDocument } from '../profiles/default-profile.js';
export { readSnapshot, decodeStoredSnapshot, decodeStoredSnapshotTolerant } from '../profiles/read-snapshot.js';
export { collectRunFiles, type RunFiles, type StoreFiles, type ClassifiedEntry } from '../profiles/run-files.js';

// Writing: detailed result and event types.
export type { CheckpointOutcome, CheckpointSuccess, CheckpointFailure, WriterLockIdentity, WriterEventMap, WriterEventName } from '../writer/types.js';

// Run history: option and result types of listRunSnapshots, getRunSnapshot, deleteRun.
export type { ListRunSnapshotsOptions, GetRunSnapshotOptions, DeleteRunOptions, DeleteRunResult } from '../runs/index.js';

// Resuming: the locator and the rule contract.
export {
  locateNewestSnapshot,
  type LocateSnapshotOptions,
  type LocatedSnapshot,
  type NewerCheck,
  type SkippedFile,
  type SnapshotOrigin,
} from '../resume/locate.js';
export type { ResumeRuleContext, ResumeWarning } from '../resume/types.js';
export { RESUME_HISTORY_LIMIT } from '../resume/types.js';
export type { ResumeSource } from '../resume/plan-resume.js';
export type { FindIncompleteRunsOptions } from '../resume/incomplete-runs.js';
export type { ResumeWarningCode } from '../resume/warnings.js';
export { defaultResumeRule } from '../resume/default-rule.js';

// Retention: rules and their schemas, inventory, summaries, store-wide documents.
export {
  CALENDAR_UNITS,
  MAX_RETENTION_RULES,
  retentionPolicyJsonSchema,
  resolveRetentionPolicy,
  retentionRuleName,
  describeRetentionRule,
  type CalendarUnit,
  type CalendarRuleOptions,
  type KeepLastRule,
  type KeepWithinRule,
  type KeepLatestStatusRule,
  type KeepCalendarRule,
  type PreserveRunsRule,
  type RunTiersRule,
  type ResolvedRule,
  type ResolvedRetentionPolicy,
} from '../retention/policy.js';
export { RetentionRuleSchema, RetentionPolicySchema } from '../retention/policy-schema.js';
export { parseRetentionDuration, formatRetentionDuration, RETENTION_DURATION_PATTERN, type RetentionDuration } from '../retention/duration.js';
export { calendarBucketer, calendarBucketLabel } from '../retention/calendar.js';
export {
  buildInventory,
  type BuildInventoryOptions,
  type RetentionInventory,
  type InventoryRun,
  type InventorySnapshot,
  type InventoryBatch,
  type InventoryProblem,
  type RetentionFile,
  type UnreadableFile,
} from '../retention/inventory.js';
export type { PlanRetentionOptions, PlannedSnapshot, PlannedRun, RetentionAction, RetentionOperation, RunTier, DeleteReason } from '../retention/plan.js';
export { RetentionPruneError, type ApplyRetentionOptions, type RetentionOperationOutcome } from '../retention/apply.js';
export type { FormatRetentionPlanOptions } from '../retention/format.js';
export type { RetentionRun, CleanupAfterRunCompletionOptions, RetentionCleanupResult } from '../retention/run.js';
export { RetentionSummarySchema } from '../retention/summary-schema.js';
export {
  retentionSummaryJsonSchema,
  genericRetentionSummarizer,
  buildRetentionSummary,
  encodeRetentionSummary,
  decodeRetentionSummary,
  type RetentionSummary,
  type RetentionSummaryInput,
  type RetentionSummarizer,
} from '../retention/summary.js';
export { PreservedRunEntrySchema, PreservedRunsInputSchema, PreservedRunsSchema } from '../retention/preserved-runs-schema.js';
export {
  preservedRunsJsonSchema,
  decodePreservedRuns,
  encodePreservedRuns,
  preservedRunIds,
  type PreservedRunEntry,
  type PreservedRuns,
  type PreserveRunOptions,
} from '../retention/preserved-runs.js';
export { RetentionLogSchema, RetentionLogEntrySchema, RetentionLogRunSchema } from '../retention/log-schema.js';
export {
  retentionLogJsonSchema,
  decodeRetentionLog,
  encodeRetentionLog,
  readRetentionLog,
  appendRetentionLog,
  DEFAULT_RETENTION_LOG_ENTRIES,
  type RetentionLog,
  type RetentionLogEntry,
} from '../retention/log.js';
export { diffSnapshots, type SnapshotChange, type DiffSnapshotsOptions } from '../runs/diff.js';
