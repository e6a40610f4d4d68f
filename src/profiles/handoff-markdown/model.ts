import { z } from 'zod';
import type { JsonValue } from '../../contract/json.js';
import type { JsonSchema } from '../../codec/validate.js';
import { Rfc3339Schema, storedSnapshotMetaShape, TriggerRecordSchema } from '../../contract/snapshot.js';
import { JsonValueSchema } from '../default-document-schema.js';

/** One line of text (no line break). */
const OneLine = z.string().regex(/^[^\n]*$/);

/**
 * ISO-8601 date-time as people write it in front matter: `2025-12-14T15:30:00Z`,
 * with or without seconds and fractions, with `Z` or a `±hh:mm` offset.
 */
export const ISO_8601_PATTERN = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)$/;

/** A Play-By-Play line: `Phase/Step → Action → Outcome`. */
export const PlayByPlayEntrySchema = z
  .object({
    /** The phase or step (`Phase 2`); empty when the line names none. */
    phase: OneLine,
    /** What was done. */
    action: OneLine.min(1),
    /** How it ended (`Complete`); empty when the line names none. */
    outcome: OneLine,
  })
  .strict();
/** A Play-By-Play line: `Phase/Step → Action → Outcome`. */
export type PlayByPlayEntry = z.infer<typeof PlayByPlayEntrySchema>;

/** A row of the Artifact Trail table: `| File | Status | Key Change |`. */
export const ArtifactEntrySchema = z
  .object({
    /** Path of the file (rendered in backticks). */
    file: OneLine.min(1).regex(/^[^`]*$/),
    /** `created`, `modified` or `deleted` in the spec; any text is accepted from hand-written tables. */
    status: OneLine,
    /** Brief description of the change. */
    keyChange: OneLine,
  })
  .strict();
/** A row of the Artifact Trail table. */
export type ArtifactEntry = z.infer<typeof ArtifactEntrySchema>;

/** A section the spec does not define, kept so hand-written content is never lost. */
export const ExtraSectionSchema = z
  .object({
    heading: OneLine.min(1),
    body: z.string(),
  })
  .strict();
/** A section the spec does not define. */
export type ExtraSection = z.infer<typeof ExtraSectionSchema>;

const Item = z.string().min(1);

const bodyShape = {
  /** `## Problem`: stable problem statement (Markdown text). */
  problem: z.string().min(1),
  /** `## Session Intent`: the user's goal and requirements (Markdown text). */
  sessionIntent: z.string().min(1),
  /** `### Decisions`: locked-in choices, one item each. */
  decisions: z.array(Item),
  /** `### Technical Context`: stack, environment, configuration facts. */
  technicalContext: z.array(Item),
  /** `### Play-By-Play`: major actions completed, oldest first. */
  playByPlay: z.array(PlayByPlayEntrySchema),
  /** `### Artifact Trail`: files touched, oldest first. */
  artifactTrail: z.array(ArtifactEntrySchema),
  /** `### Current State`: what exists now. */
  currentState: z.array(Item),
  /** `### Next Actions`: pending work and blockers. */
  nextActions: z.array(Item),
  /** `## User Rules` (optional): constraints and preferences. */
  userRules: z.array(Item).optional(),
  /** Sections the spec does not define, in document order; rendered after User Rules. */
  extraSections: z.array(ExtraSectionSchema).optional(),
};

/**
 * The hand-off document (handoff-markdown.md) as data. Header fields come from the
 * front matter; `frontMatter` holds any other front-matter keys (savepoint's own
 * `run_id`, `integrity`… in stored documents, or whatever a person added).
 */
export const HandoffDocumentSchema = z
  .object({
    /** Unique identifier, e.g. `chk-001` or `session-abc-003`. */
    checkpoint: z.string().min(1),
    /** ISO-8601 timestamp of creation. */
    created: z.string().regex(ISO_8601_PATTERN),
    /** Conversation turn or phase this checkpoint summarizes up to. */
    anchor: z.string().min(1).optional(),
    /** Other front-matter keys, in document order. */
    frontMatter: z.record(z.string(), JsonValueSchema).optional(),
    ...bodyShape,
  })
  .strict();

/** The hand-off document (handoff-markdown.md) as data. */
export interface HandoffDocument {
  /** Unique identifier, e.g. `chk-001` or `session-abc-003`. */
  checkpoint: string;
  /** ISO-8601 timestamp of creation. */
  created: string;
  /** Conversation turn or phase this checkpoint summarizes up to. */
  anchor?: string;
  /** Other front-matter keys, in document order. */
  frontMatter?: Record<string, JsonValue>;
  /** `## Problem`: stable problem statement (Markdown text). */
  problem: string;
  /** `## Session Intent`: the user's goal and requirements (Markdown text). */
  sessionIntent: string;
  /** `### Decisions`: locked-in choices, one item each. */
  decisions: string[];
  /** `### Technical Context`: stack, environment, configuration facts. */
  technicalContext: string[];
  /** `### Play-By-Play`: major actions completed, oldest first. */
  playByPlay: PlayByPlayEntry[];
  /** `### Artifact Trail`: files touched, oldest first. */
  artifactTrail: ArtifactEntry[];
  /** `### Current State`: what exists now. */
  currentState: string[];
  /** `### Next Actions`: pending work and blockers. */
  nextActions: string[];
  /** `## User Rules` (optional): constraints and preferences. */
  userRules?: string[];
  /** Sections the spec does not define, in document order; rendered after User Rules. */
  extraSections?: ExtraSection[];
}

/**
 * What an agent passes to `checkpoint()` with the `handoffMarkdown` profile: the
 * document without the fields savepoint fills in (`checkpoint` is the snapshot id,
 * `created` its creation time).
 */
export const HandoffPayloadSchema = z
  .object({
    anchor: z.string().min(1).optional(),
    ...bodyShape,
  })
  .strict();
/** The `handoffMarkdown` profile's payload. */
export type HandoffPayload = Omit<HandoffDocument, 'checkpoint' | 'created' | 'frontMatter'>;

/**
 * The front matter of a hand-off savepoint stored before its one-line seal (savepoint up to
 * this version): run id, sequence, trigger and status as separate keys and an `integrity`
 * object. Still read; never written.
 */
export const HandoffStoredFrontMatterSchema = z.object(storedSnapshotMetaShape).strict();

/** A hand-off document as an earlier savepoint stored it (see {@link HandoffStoredFrontMatterSchema}). Still read; never written. */
export const LegacyStoredHandoffSchema = z
  .object({
    checkpoint: z.string().min(1),
    created: Rfc3339Schema,
    anchor: z.string().min(1).optional(),
    frontMatter: HandoffStoredFrontMatterSchema,
    ...bodyShape,
  })
  .strict();
/** A hand-off document as an earlier savepoint stored it. */
export type LegacyStoredHandoff = z.infer<typeof LegacyStoredHandoffSchema>;

/**
 * savepoint's seal line: `<format_version> <sequence> <trigger> <status> [<priority>] <checksum>`
 * (the checksum is the base64url of a SHA-256, 43 characters).
 */
export const SEAL_LINE_PATTERN = /^\S+ [1-9]\d{0,15} [a-z][a-z0-9_]* [a-z][a-z0-9_]*(?: (?:critical|high|medium|low))? [A-Za-z0-9_-]{43}$/;

/**
 * The front matter of a stored hand-off: savepoint's one seal line (`savepoint`), the
 * triggers coalesced into the snapshot when there are some (`savepoint_coalesced`), and any
 * key another tool wrote, kept as it was (the seal covers them too).
 */
export const HandoffSealedFrontMatterSchema = z
  .object({
    savepoint: z.string().regex(SEAL_LINE_PATTERN),
    savepoint_coalesced: z.array(TriggerRecordSchema).optional(),
  })
  .catchall(JsonValueSchema);

/**
 * A hand-off document as savepoint stores it: the spec's document (any ISO 8601 `created`,
 * extra sections and other tools' front-matter keys kept) whose front matter also carries
 * savepoint's seal line (see {@link HandoffSealedFrontMatterSchema}). The run id is the
 * file's folder.
 */
export const StoredHandoffSchema = z
  .object({
    checkpoint: z.string().min(1),
    created: z.string().regex(ISO_8601_PATTERN),
    anchor: z.string().min(1).optional(),
    frontMatter: HandoffSealedFrontMatterSchema,
    ...bodyShape,
  })
  .strict();
/** A hand-off document as savepoint stores it. */
export type StoredHandoff = z.infer<typeof StoredHandoffSchema>;

const toJsonSchema = (schema: z.ZodType): JsonSchema => z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;

/** JSON Schema (draft 2020-12) of a parsed hand-off document ({@link HandoffDocument}). */
export const handoffDocumentJsonSchema: JsonSchema = toJsonSchema(HandoffDocumentSchema);
/** JSON Schema (draft 2020-12) of a parsed stored hand-off document (front matter with savepoint's seal line). */
export const storedHandoffJsonSchema: JsonSchema = toJsonSchema(StoredHandoffSchema);
/** JSON Schema (draft 2020-12) of a parsed hand-off document as an earlier savepoint stored it (still read). */
export const legacyStoredHandoffJsonSchema: JsonSchema = toJsonSchema(LegacyStoredHandoffSchema);

/** Front-matter keys the spec defines; they are never part of {@link HandoffDocument.frontMatter}. */
export const HANDOFF_HEADER_FIELDS = ['checkpoint', 'created', 'anchor'] as const;
