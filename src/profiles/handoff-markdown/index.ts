export {
  HandoffDocumentSchema,
  HandoffPayloadSchema,
  StoredHandoffSchema,
  HandoffStoredFrontMatterSchema,
  PlayByPlayEntrySchema,
  ArtifactEntrySchema,
  ExtraSectionSchema,
  handoffDocumentJsonSchema,
  storedHandoffJsonSchema,
  HANDOFF_HEADER_FIELDS,
  ISO_8601_PATTERN,
  type HandoffDocument,
  type HandoffPayload,
  type StoredHandoff,
  type PlayByPlayEntry,
  type ArtifactEntry,
  type ExtraSection,
} from './model.js';
export {
  parseHandoff,
  renderHandoff,
  validateHandoffDocument,
  parsePlayByPlayEntry,
  renderPlayByPlayEntry,
  parseArtifactTable,
  renderArtifactTable,
  HANDOFF_SECTIONS,
} from './codec.js';
export { nextCheckpoint, nextCheckpointId, SAVEPOINT_FRONT_MATTER_KEYS, type HandoffUpdate, type NextCheckpointOptions } from './carry-forward.js';
export { compress, estimateTokens, splitDecision, type CompressOptions, type CompressResult, type TokenCounter } from './compress.js';
export { HANDOFF_TRIGGERS, detectHandoffTriggers, contextPressure, type HandoffTrigger, type ContextPressureInput } from './triggers.js';
export {
  handoffMarkdown,
  handoffMarkdownProfile,
  handoffMarkdownFormat,
  handoffLayout,
  handoffHistoryNaming,
  handoffCheckpointId,
  handoffChecksum,
  handoffResumeRule,
  type HandoffMarkdownProfileOptions,
  type HandoffMarkdownFormatOptions,
  type HandoffLayoutOptions,
} from './profile.js';
