import { z } from 'zod';
import { Rfc3339Schema, storedSnapshotMetaShape } from '../../contract/snapshot.js';
import type { JsonSchema } from '../../codec/validate.js';
import type { TriggerSpec } from '../../contract/profile.js';

const OneLine = z.string().regex(/^[^\n]*$/);
const Item = z.string().min(1);

/** `**Issue:** CIA-XXX — [Title]`. */
export const ProgressIssueSchema = z
  .object({
    /** Tracker identifier (`CIA-123`, `#42`). */
    id: OneLine.min(1),
    /** Issue title; empty when the line names none. */
    title: OneLine,
  })
  .strict();

/** `## Current Task`: `- [task description] — [status or last action]`. */
export const ProgressCurrentTaskSchema = z
  .object({
    description: Item,
    /** Status or last action; empty when the line names none. */
    status: OneLine,
  })
  .strict();

/** `## Decisions Made`: `- [decision]: [rationale]`. */
export const ProgressDecisionSchema = z
  .object({
    decision: Item,
    /** Empty when the line gives none. */
    rationale: z.string(),
  })
  .strict();

/** `## Blockers`: `- [blocker description] (unblocked by: [condition])`. */
export const ProgressBlockerSchema = z
  .object({
    description: Item,
    /** The unblocking condition; empty when the line names none. */
    unblockedBy: OneLine,
  })
  .strict();

/** A `##` section the spec does not define, kept so content is never lost on update. */
export const ProgressExtraSectionSchema = z.object({ heading: OneLine.min(1), body: z.string() }).strict();

/**
 * `.ccc-progress.md` (progress-protocol.md, Step 1) as data: the header lines and the
 * six `##` sections, in the spec's order.
 */
export const ProgressDocumentSchema = z
  .object({
    issue: ProgressIssueSchema,
    /** `**Session:** [timestamp]`. */
    session: OneLine,
    /** `**Execution Mode:** exec:[mode]` — the mode without `exec:`. */
    executionMode: OneLine,
    /** `## Completed Tasks` (each rendered with a trailing ✓). */
    completedTasks: z.array(Item),
    /** `## Current Task`; absent when there is none. */
    currentTask: ProgressCurrentTaskSchema.optional(),
    /** `## Remaining Tasks`. */
    remainingTasks: z.array(Item),
    /** `## Decisions Made`. */
    decisions: z.array(ProgressDecisionSchema),
    /** `## Blockers`. */
    blockers: z.array(ProgressBlockerSchema),
    /** `## Continuation Prompt`: the prompt `/ccc:go` reads on resume. */
    continuationPrompt: z.string().min(1),
    /** Other `##` sections, in document order (rendered after the Continuation Prompt). */
    extraSections: z.array(ProgressExtraSectionSchema).optional(),
  })
  .strict();

/** `.ccc-progress.md` as data. */
export type ProgressDocument = z.infer<typeof ProgressDocumentSchema>;
/** `**Issue:** CIA-XXX — [Title]`. */
export type ProgressIssue = z.infer<typeof ProgressIssueSchema>;
/** `- [task description] — [status or last action]`. */
export type ProgressCurrentTask = z.infer<typeof ProgressCurrentTaskSchema>;
/** `- [decision]: [rationale]`. */
export type ProgressDecision = z.infer<typeof ProgressDecisionSchema>;
/** `- [blocker description] (unblocked by: [condition])`. */
export type ProgressBlocker = z.infer<typeof ProgressBlockerSchema>;

/**
 * What savepoint adds to a stored `.ccc-progress.md`, as one HTML comment right under the
 * `# Session Progress` title (invisible when rendered, outside every section):
 * `<!-- savepoint: {"run_id":…,"sequence":…,…,"integrity":{…}} -->`.
 */
export const ProgressMetaSchema = z
  .object({
    snapshot_id: z.string().min(1),
    created_at: Rfc3339Schema,
    ...storedSnapshotMetaShape,
  })
  .strict();
/** savepoint's metadata comment in a stored `.ccc-progress.md`. */
export type ProgressMeta = z.infer<typeof ProgressMetaSchema>;

/** A parsed stored progress file: the document and savepoint's metadata. */
export const StoredProgressSchema = z.object({ document: ProgressDocumentSchema, meta: ProgressMetaSchema }).strict();
/** A parsed stored progress file. */
export type StoredProgress = z.infer<typeof StoredProgressSchema>;

const toJsonSchema = (schema: z.ZodType): JsonSchema => z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any' }) as JsonSchema;

/** JSON Schema (draft 2020-12) of a parsed `.ccc-progress.md` ({@link ProgressDocument}). */
export const progressDocumentJsonSchema: JsonSchema = toJsonSchema(ProgressDocumentSchema);
/** JSON Schema (draft 2020-12) of a parsed stored progress file (`{ document, meta }`). */
export const storedProgressJsonSchema: JsonSchema = toJsonSchema(StoredProgressSchema);

/** Statuses of a progress checkpoint: the status comment's In Progress / Blocked / Resuming, plus a terminal `completed`. */
export const PROGRESS_STATUSES = ['in_progress', 'blocked', 'resuming', 'completed'] as const;
/** A progress checkpoint status. */
export type ProgressStatus = (typeof PROGRESS_STATUSES)[number];

/** The context boundaries progress-protocol.md checkpoints at. */
export const PROGRESS_TRIGGERS = {
  handoff_request: { description: 'explicit handoff request (/ccc:checkpoint, the manual profile)' },
  session_split: { description: 'the session is split' },
  context_threshold: { description: 'the context threshold is reached' },
  gate_boundary: { description: 'the stop hook at a checkpoint gate (the automated profile)' },
} as const satisfies Record<string, TriggerSpec>;
