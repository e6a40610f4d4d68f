/**
 * `savepoint/toolkit` — what people who write their own profiles or storage adapters need
 * beyond the root entry: the document building blocks (the JSON document format, envelope
 * schemas, validators, seals, gzip, large-document parts), layouts and key checks, reading
 * stored snapshots and run indexes back, resume-rule and retention-policy helpers, and the
 * writer's detailed result and event types.
 *
 * Most applications need only the root entry (`savepoint`). Like the root, this entry
 * imports no `node:` module.
 *
 * @module savepoint/toolkit
 */

// Errors, ids, time: what a custom profile's hooks and an adapter's errors are built from.
export { toCheckpointError, type CheckpointErrorOptions } from '../model/errors.js';
export { newSnapshotId, assertRunId } from '../model/ids.js';
export { toRfc3339, type TimerHandle, type TimerOptions } from '../model/clock.js';

// A profile's document: the envelope schemas, validators of payloads and documents.
export { PRIORITIES, Rfc3339Schema, TriggerRecordSchema, IntegritySchema, type Priority, type Integrity, type SnapshotDraft } from '../model/snapshot.js';
export { JsonValueSchema } from '../profiles/default-document-schema.js';
export { compileValidator, assertValid, type JsonSchema, type SchemaIssue, type DocumentValidator } from '../model/validate.js';
export { validateSync, type StandardSchemaV1 } from '../model/standard-schema.js';

// Document formats: the JSON format, seals, gzip, large documents in parts, tolerant reads.
export { sha256Hex } from '../codec/sha256.js';
export { gzip, gunzip, type GunzipOptions } from '../codec/gzip.js';
export {
  jsonDocumentFormat,
  documentChecksum,
  sealDocumentBytes,
  verifyDocument,
  decodeTolerant,
  type SealedDocument,
  type DocumentFormat,
  type EncodedSnapshot,
  type JsonDocumentFormatOptions,
  type ForeignRead,
  type ForeignReadWarning,
} from '../codec/json-document.js';
export { splitDocument, resolveParts, type PartRef, type PartFile, type SplitResult, type SplitOptions } from '../codec/parts.js';
export type { RunImporter, RunImportOptions, RunImportReport, RunImportFile, RunImportAction } from '../profiles/import-run.js';

// Storage adapters: key and batch checks.
export { assertKey, assertPrefix, joinKey, MAX_KEY_LENGTH } from '../storage/keys.js';
export { assertBatchOperation } from '../storage/batch-operation.js';
export type { BatchCheck, RateBudget } from '../storage/adapter.js';
export type { BufferedStorage, BufferedPutResult, BufferedBatchOutcome } from '../storage/buffered.js';

// Profiles: layouts and reading stored snapshots back.
export type { TriggerSpec, StatusSpec, SnapshotIdContext } from '../profiles/define-profile.js';
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
export type { DefaultDocument } from '../profiles/default-profile.js';
export { readSnapshot, decodeStoredSnapshot, decodeStoredSnapshotTolerant } from '../profiles/read-snapshot.js';
export { coalescedTriggers } from '../model/coalesced-triggers.js';
export { decodeRunIndex, encodeRunIndex, mergeRunIndex, type RunIndex, type RunIndexEntry } from '../model/run-index.js';
export { decodeBatchFile, type BatchFile, type BatchMember } from '../profiles/batch-file.js';

// The JSON Schema of every store-wide document, so that tools in any language validate the same files.
export { runIndexJsonSchema } from '../model/run-index.js';
export { batchFileJsonSchema } from '../profiles/batch-file.js';
export { retentionSummaryJsonSchema } from '../retention/summary.js';
export { preservedRunsJsonSchema } from '../retention/preserved-runs.js';
export { retentionLogJsonSchema } from '../retention/log.js';
export { diffSnapshots, type SnapshotChange, type DiffSnapshotsOptions } from '../runs/diff.js';

// Writing: detailed result and event types.
export type { CheckpointOutcome, CheckpointSuccess, CheckpointFailure, WriterLockIdentity, WriterEventMap, WriterEventName } from '../writer/types.js';

// Run history: option and result types of listRunSnapshots, getRunSnapshot, deleteRun.
export type { ListRunSnapshotsOptions, GetRunSnapshotOptions, DeleteRunOptions, DeleteRunResult } from '../runs/index.js';

// Resume rules: the rule contract and the default rule to build on.
export type { ResumeRuleContext, ResumeWarning } from '../resume/types.js';
export { RESUME_HISTORY_LIMIT } from '../resume/types.js';
export type { ResumeSource } from '../resume/plan-resume.js';
export type { FindIncompleteRunsOptions } from '../resume/incomplete-runs.js';
export type { ResumeWarningCode } from '../resume/warnings.js';
export { defaultResumeRule } from '../resume/default-rule.js';

// Retention: policies from configuration, rule names and durations, the inventory planRetention
// takes, run summaries, and the error applyRetention throws.
export {
  resolveRetentionPolicy,
  retentionRuleName,
  describeRetentionRule,
  retentionPolicyJsonSchema,
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
export { RetentionPolicySchema } from '../retention/policy-schema.js';
export { parseRetentionDuration, formatRetentionDuration, type RetentionDuration } from '../retention/duration.js';
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
export {
  genericRetentionSummarizer,
  buildRetentionSummary,
  type RetentionSummary,
  type RetentionSummaryInput,
  type RetentionSummarizer,
} from '../retention/summary.js';
export type { PreserveRunOptions } from '../retention/preserved-runs.js';
