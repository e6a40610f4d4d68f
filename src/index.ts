/**
 * savepoint — durable checkpoints for agent runtimes and workflow orchestrators.
 *
 * This entry imports no `node:` module: it runs in Node, browsers, Deno, Bun and edge
 * runtimes. Node-only adapters live in subpaths (`savepoint/fs`).
 *
 * @packageDocumentation
 */
export { REASON_CODES, isReasonCode, type ReasonCode } from './model/reason-codes.js';
export { CheckpointError, isCheckpointError, toCheckpointError, type CheckpointErrorDetails, type CheckpointErrorOptions } from './model/errors.js';
export { systemClock, toRfc3339, parseRfc3339, sleep, type Clock, type TimerHandle, type TimerOptions } from './model/clock.js';
export { newSnapshotId, newUuidV4, isUuidV4, assertRunId, SNAPSHOT_ID_PATTERN, RUN_ID_PATTERN, RESERVED_RUN_IDS } from './model/ids.js';
export {
  PRIORITIES,
  FORMAT_VERSION,
  Rfc3339Schema,
  TriggerRecordSchema,
  IntegritySchema,
  snapshotSchema,
  type Priority,
  type TriggerRecord,
  type Integrity,
  type Snapshot,
  type SnapshotDraft,
} from './model/snapshot.js';
export { compileValidator, assertValid, type JsonSchema, type SchemaIssue, type DocumentValidator } from './model/validate.js';
export {
  RunIndexSchema,
  RunIndexEntrySchema,
  runIndexJsonSchema,
  decodeRunIndex,
  encodeRunIndex,
  emptyRunIndex,
  mergeRunIndex,
  pruneRunIndex,
  type RunIndex,
  type RunIndexEntry,
} from './model/run-index.js';

export { canonicalJson, parseJson, type JsonValue, type JsonObject } from './codec/canonical-json.js';
export { sha256Hex, toHex } from './codec/sha256.js';
export { gzip, gunzip, isGzip, crc32, type GunzipOptions } from './codec/gzip.js';
export { utf8Encode, utf8Decode } from './codec/utf8.js';
export {
  jsonDocumentFormat,
  documentChecksum,
  sealDocument,
  sealDocumentBytes,
  type SealedDocument,
  verifyDocument,
  INTEGRITY_FIELD,
  type DocumentFormat,
  type EncodedSnapshot,
  type JsonDocumentFormatOptions,
} from './codec/json-document.js';
export { splitDocument, resolveParts, hasPartRefs, PART_MARKER, PARTS_MARKER, type PartRef, type PartFile, type SplitResult } from './codec/parts.js';

export {
  listAll,
  type StorageAdapter,
  type StorageCapabilities,
  type StoredObject,
  type StorageEntry,
  type PutOptions,
  type PutResult,
  type DeleteOptions,
  type BatchOperation,
  type BatchOutcome,
  type RateBudget,
} from './storage/adapter.js';
export { assertKey, assertPrefix, joinKey, MAX_KEY_LENGTH, MAX_SEGMENT_BYTES } from './storage/keys.js';
export { memoryStorage, type MemoryStorageOptions } from './storage/memory.js';

export {
  defineProfile,
  type Profile,
  type ProfileDefinition,
  type TriggerSpec,
  type StatusSpec,
  type SnapshotIdContext,
  type PayloadOf,
} from './profiles/define-profile.js';
export {
  standardLayout,
  historyBySnapshotId,
  GZIP_SUFFIX,
  type ProfileLayout,
  type KeyInfo,
  type KeyKind,
  type HistoryRef,
  type HistoryNaming,
  type StandardLayoutOptions,
} from './profiles/layout.js';
export { defaultProfile, DefaultDocumentSchema, JsonValueSchema, JsonStateSchema, toLifecycleHeader, fromLifecycleHeader, type LifecycleHeader, LIFECYCLE_STATUSES, type DefaultDocument } from './profiles/default-profile.js';
export { readSnapshot, decodeStoredSnapshot } from './profiles/read-snapshot.js';
export { collectRunFiles, type RunFiles, type StoreFiles, type ClassifiedEntry } from './profiles/run-files.js';

export type { ResumePoint, ResumeRule, ResumeRuleContext } from './resume/types.js';
export { BatchFileSchema, batchFileJsonSchema, encodeBatchFile, decodeBatchFile, type BatchFile, type BatchMember } from './profiles/batch-file.js';

// Components, each behind its own barrel.
export * from './writer/index.js';
export * from './retention/index.js';
export * from './resume/index.js';
export * from './profiles/json-profiles.js';
