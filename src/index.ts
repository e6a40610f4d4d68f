/**
 * `savepoint` — durable checkpoints for agent runtimes and workflow orchestrators.
 *
 * The root entry holds what most users need: the writer, resume, retention, the storage
 * contract with the embedded `memoryStorage`, `defineProfile` and the generic
 * `defaultProfile`, the errors, and canonical JSON. Each spec system is a subpath of its own
 * (`savepoint/snapshot-lifecycle`, `savepoint/phased-workflow`, `savepoint/plan-executor`,
 * `savepoint/handoff-markdown`, `savepoint/progress-protocol`), each store too
 * (`savepoint/fs`, `savepoint/github`), and the building blocks for custom profiles,
 * adapters and store tools live in `savepoint/toolkit`.
 *
 * This entry imports no `node:` module: it runs in Node, browsers, Deno, Bun and edge
 * runtimes.
 *
 * @module savepoint
 */

// Errors and the snapshot model.
export { CheckpointError, isCheckpointError, type CheckpointErrorDetails } from './contract/errors.js';
export { REASON_CODES, type ReasonCode } from './contract/reason-codes.js';
export type { Snapshot, TriggerRecord } from './contract/snapshot.js';
export { systemClock, type Clock } from './contract/clock.js';
export { canonicalJson, parseJson } from './codec/canonical-json.js';
export { type JsonValue, type JsonObject, type JsonPayload } from './contract/json.js';

// Storage: the contract and the embedded store.
export {
  listAll,
  type StorageAdapter,
  type StorageCapabilities,
  type StoredObject,
  type StorageEntry,
  type GetOptions,
  type PutOptions,
  type KnownMetadata,
  type PutResult,
  type DeleteOptions,
  type BatchOperation,
  type BatchOptions,
  type BatchOutcome,
  type StoreReaders,
} from './contract/storage.js';
export { memoryStorage, type MemoryStorageOptions } from './storage/memory.js';

// Encryption at rest: any store, holding only ciphertext (WebCrypto; docs/security.md).
export {
  encryptedStorage,
  type EncryptedStorage,
  type EncryptedStorageOptions,
  type EncryptionKeyInput,
} from './storage/encrypted/encrypted-storage.js';
export { EncryptionKey } from './storage/encrypted/encryption-key.js';
export type { EncryptedKeyring, KeyringEntry, KeyringListing } from './storage/encrypted/keyring-admin.js';

// Profiles.
export { defineProfile } from './profiles/define-profile.js';
export { type Profile, type ProfileDefinition } from './contract/profile.js';
export { standardLayout } from './snapshot-io/layout.js';
export {
  defaultProfile,
  jsonProfile,
  type JsonProfileOptions,
  type DefaultTrigger,
  type LifecycleStatus,
} from './profiles/default-profile.js';
export type { PayloadSchema, PayloadOf, TriggerOf, StatusOf } from './contract/profile.js';
export type { StandardSchemaV1 } from './contract/standard-schema.js';

// Writing.
export { createWriter } from './profiles/default-writer.js';
export type { CheckpointInput, CheckpointResult, CheckpointWriter, HeartbeatPayload, WriterOptions } from './writer/types.js';
export type { CheckpointSuccess, CheckpointFailure } from './writer/types.js';

// Resuming.
export { planResume, findIncompleteRuns, type PlanResumeInput, type FindIncompleteRunsInput } from './profiles/default-resume.js';
export type { PlanResumeOptions, ResumePlan } from './resume/plan-resume.js';
export type { IncompleteRun } from './resume/incomplete-runs.js';
export type { ResumePoint, ResumeRule } from './contract/resume-rule.js';
export { RESUME_WARNING_CODES } from './resume/warnings.js';

// Retention.
export {
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
} from './retention/policy.js';
export { type RetentionPolicy, type RetentionRule } from './contract/retention-policy.js';
export { planRetention, type RetentionPlan } from './retention/plan.js';
export { applyRetention, type RetentionReport } from './retention/apply.js';
export { runRetention, cleanupAfterRunCompletion, type RunRetentionOptions } from './retention/run.js';
export { sweepChunks, CHUNK_SWEEP_GRACE_MS, type ChunkSweepOptions, type ChunkSweepReport } from './retention/chunk-sweep.js';
export { type AutoSweepOptions, type AutoSweepOutcome } from './writer/auto-sweep.js';
export { preserveRun, unpreserveRun } from './retention/preserved-runs.js';
export { formatRetentionPlan, formatRetentionReport } from './retention/format.js';

// Run history: list a run's snapshots (metadata filter, before, limit), get one by id or sequence, delete a run.
export { listRunSnapshots, getRunSnapshot, deleteRun } from './runs/index.js';
