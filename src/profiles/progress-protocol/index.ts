export {
  ProgressDocumentSchema,
  ProgressIssueSchema,
  ProgressCurrentTaskSchema,
  ProgressDecisionSchema,
  ProgressBlockerSchema,
  ProgressExtraSectionSchema,
  ProgressMetaSchema,
  StoredProgressSchema,
  progressDocumentJsonSchema,
  storedProgressJsonSchema,
  type ProgressDocument,
  type ProgressIssue,
  type ProgressCurrentTask,
  type ProgressDecision,
  type ProgressBlocker,
  type ProgressMeta,
  type StoredProgress,
} from './model.js';
export {
  parseProgress,
  renderProgress,
  readContinuationPrompt,
  validateProgressDocument,
  PROGRESS_SECTIONS,
  PROGRESS_TITLE,
  type ParsedProgress,
} from './codec.js';
export {
  progressProtocol,
  progressProtocolProfile,
  progressProtocolFormat,
  progressLayout,
  progressResumeRule,
  progressChecksum,
  PROGRESS_STATUSES,
  PROGRESS_TRIGGERS,
  type ProgressStatus,
  type ProgressProtocolProfileOptions,
  type ProgressProtocolFormatOptions,
  type ProgressLayoutOptions,
} from './profile.js';
export {
  runCheckpointProtocol,
  formatCompletionReport,
  DEFAULT_COMMIT_MESSAGE,
  type CheckpointProtocolOptions,
  type CheckpointReport,
  type ProtocolProfile,
  type ProtocolStepResult,
  type StepOutcome,
  type ProgressInput,
  type CommitMessageContext,
} from './protocol.js';
export { gitSnapshot, parsePorcelainZ, type GitSnapshotOptions, type GitSnapshotResult } from './git.js';
export { readStateFile, updateStateFile, writeFileAtomic, type CccState } from './files.js';
export {
  renderStatusComment,
  statusCommentFor,
  taskPosition,
  nextActionOf,
  STATUS_LABELS,
  type StatusCommentFields,
  type StatusCommentOptions,
} from './status-comment.js';
export {
  renderContinuationBox,
  genericContinuationTemplate,
  continuationPromptFor,
  CONTINUATION_BOX,
  CONTINUATION_FOOTER,
} from './continuation.js';
export type { StatusSink } from './sinks/status-sink.js';
export { trackerRequest, trackerError, type TrackerHttpOptions, type TrackerResponse } from './sinks/http.js';
export { linearStatusSink, LINEAR_COMMENT_CREATE, LINEAR_COMMENT_UPDATE, type LinearStatusSinkOptions } from './sinks/linear.js';
export { githubIssueCommentSink, type GitHubIssueCommentSinkOptions } from './sinks/github.js';
export { runStopHook, sinkFromEnv, type StopHookDecision, type StopHookOptions, type TrackerEnv } from './stop-hook.js';
export { sealProgressAsIs, FOREIGN_PROGRESS_SOURCE, UNKNOWN_SESSION_TIME, type ProgressSealOptions } from './foreign.js';
export { importProgressProtocolDocument, importProgressProtocolRun, type ImportProgressProtocolOptions } from './import.js';
