export {
  HandoffDocumentSchema,
  HandoffPayloadSchema,
  StoredHandoffSchema,
  HandoffStoredFrontMatterSchema,
  HandoffSealedFrontMatterSchema,
  LegacyStoredHandoffSchema,
  SEAL_LINE_PATTERN,
  PlayByPlayEntrySchema,
  ArtifactEntrySchema,
  ExtraSectionSchema,
  handoffDocumentJsonSchema,
  legacyStoredHandoffJsonSchema,
  storedHandoffJsonSchema,
  HANDOFF_HEADER_FIELDS,
  ISO_8601_PATTERN,
  type HandoffDocument,
  type HandoffPayload,
  type StoredHandoff,
  type LegacyStoredHandoff,
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
export {
  nextCheckpoint,
  nextCheckpointId,
  SAVEPOINT_FRONT_MATTER_KEYS,
  type HandoffUpdate,
  type NextCheckpointOptions,
} from './carry-forward.js';
export {
  compress,
  estimateTokens,
  splitDecision,
  SEAL_LINE_PLACEHOLDER,
  SEAL_LINE_MAX_TOKENS,
  type CompressOptions,
  type CompressResult,
  type TokenCounter,
} from './compress.js';
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
export { SEAL_KEY, COALESCED_KEY, parseSealLine, sealLine, handoffSealDigest, type HandoffSeal } from './seal.js';
export { sealHandoffAsIs, FOREIGN_HANDOFF_SOURCE, FOREIGN_HANDOFF_STATUS, type HandoffSealOptions } from './foreign.js';
export { importHandoffMarkdownDocument, importHandoffMarkdownRun, type ImportHandoffMarkdownOptions } from './import.js';
