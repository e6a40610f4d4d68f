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
export { toCheckpointError, type CheckpointErrorOptions } from '../contract/errors.js';
export { newSnapshotId, assertRunId } from '../contract/ids.js';
export { toRfc3339, type TimerHandle, type TimerOptions } from '../contract/clock.js';

// A profile's document: the envelope schemas, validators of payloads and documents.
export {
  PRIORITIES,
  Rfc3339Schema,
  TriggerRecordSchema,
  IntegritySchema,
  type Priority,
  type Integrity,
  type SnapshotDraft,
} from '../contract/snapshot.js';
export { JsonValueSchema } from '../profiles/default-document-schema.js';
export { compileValidator, assertValid, type JsonSchema, type SchemaIssue, type DocumentValidator } from '../codec/validate.js';
export { validateSync, type StandardSchemaV1 } from '../contract/standard-schema.js';

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
  type JsonDocumentFormatOptions,
} from '../codec/json-document.js';
export {
  type DocumentClaims,
  type DocumentFormat,
  type EncodedSnapshot,
  type ForeignRead,
  type ForeignReadWarning,
} from '../contract/document-format.js';
export { splitDocument, resolveParts } from '../codec/parts.js';
export { type PartRef, type PartFile, type SplitResult, type SplitOptions } from '../contract/split.js';
export type { RunImporter, RunImportOptions, RunImportReport, RunImportFile, RunImportAction } from '../profiles/import-run.js';

// Storage adapters: key and batch checks.
export { assertKey, assertPrefix, joinKey, MAX_KEY_LENGTH } from '../storage/keys.js';
export { assertBatchOperation } from '../storage/batch-operation.js';
export type { BatchCheck, MultiGetStorage, RateBudget } from '../contract/storage.js';
export { listKeysOf, type KeyListingStorage } from '../contract/storage.js';
export type { BufferedStorage, BufferedPutResult, BufferedBatchOutcome } from '../contract/buffered-storage.js';
export type { SynchronousStorage } from '../contract/synchronous-storage.js';
export type { MetadataListing, MetadataListingOptions } from '../contract/metadata-listing.js';
export type { LinkedRead, ReadLinks, MemberLink, LinkedValues, ListedObject, FirstUnder, AbsentLinked } from '../contract/linked-read.js';
export { isAbsentLinked } from '../contract/linked-read.js';
export { moveManyOf, moveOf, type KeyMove, type MovableStorage } from '../contract/move.js';

// Profiles: layouts and reading stored snapshots back.
export type { TriggerSpec, StatusSpec, SnapshotIdContext } from '../contract/profile.js';
export type { HeldHeadJoin, HeldHead, HeldMember, HeldBatch } from '../contract/held-batch.js';
export { historyBySnapshotId, type HistoryNaming, type StandardLayoutOptions } from '../snapshot-io/layout.js';
export { GZIP_SUFFIX, type ProfileLayout, type KeyInfo, type KeyKind, type HistoryRef } from '../contract/layout.js';
export type { DefaultDocument } from '../profiles/default-profile.js';
export { readSnapshot, decodeStoredSnapshot, decodeStoredSnapshotTolerant } from '../snapshot-io/read-snapshot.js';
export { coalescedTriggers } from '../contract/coalesced-triggers.js';
export { decodeRunIndex, encodeRunIndex, mergeRunIndex, type RunIndex, type RunIndexEntry } from '../codec/run-index.js';
export { decodeBatchFile, type BatchFile, type BatchMember } from '../snapshot-io/batch-file.js';

// The JSON Schema of every store-wide document, so that tools in any language validate the same files.
export { runIndexJsonSchema } from '../codec/run-index.js';
export { batchFileJsonSchema } from '../snapshot-io/batch-file.js';
export { retentionSummaryJsonSchema } from '../retention/summary.js';
export { preservedRunsJsonSchema } from '../retention/preserved-runs.js';
export { retentionLogJsonSchema } from '../retention/log.js';
export { diffSnapshots, type SnapshotChange, type DiffSnapshotsOptions } from '../runs/diff.js';

// Writing: detailed result and event types.
export type {
  CheckpointOutcome,
  CheckpointSuccess,
  CheckpointFailure,
  WriterLockIdentity,
  WriterEventMap,
  WriterEventName,
} from '../writer/types.js';

// Run history: option and result types of listRunSnapshots, getRunSnapshot, deleteRun.
export type { ListRunSnapshotsOptions, GetRunSnapshotOptions, DeleteRunOptions, DeleteRunResult } from '../runs/index.js';

// Resume rules: the rule contract and the default rule to build on.
export type { ResumeRuleContext, ResumeWarning, ResumeCallerContext, UnreadableSnapshotFile } from '../contract/resume-rule.js';
export { RESUME_HISTORY_LIMIT } from '../contract/resume-rule.js';
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
  type CalendarRuleOptions,
  type ResolvedRule,
  type ResolvedRetentionPolicy,
} from '../retention/policy.js';
export {
  type CalendarUnit,
  type KeepLastRule,
  type KeepWithinRule,
  type KeepLatestStatusRule,
  type KeepCalendarRule,
  type PreserveRunsRule,
  type RunTiersRule,
} from '../contract/retention-policy.js';
export { RetentionPolicySchema } from '../retention/policy-schema.js';
export { parseRetentionDuration, formatRetentionDuration } from '../retention/duration.js';
export { type RetentionDuration } from '../contract/retention-policy.js';
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
export type {
  PlanRetentionOptions,
  PlannedSnapshot,
  PlannedRun,
  RetentionAction,
  RetentionOperation,
  RunTier,
  DeleteReason,
} from '../retention/plan.js';
export { RetentionPruneError, type ApplyRetentionOptions, type RetentionOperationOutcome } from '../retention/apply.js';
export type { FormatRetentionPlanOptions } from '../retention/format.js';
export type { RetentionRun, CleanupAfterRunCompletionOptions, RetentionCleanupResult } from '../retention/run.js';
export { genericRetentionSummarizer, buildRetentionSummary } from '../retention/summary.js';
export { type RetentionSummary, type RetentionSummaryInput, type RetentionSummarizer } from '../contract/retention-policy.js';
export type { PreserveRunOptions } from '../retention/preserved-runs.js';
