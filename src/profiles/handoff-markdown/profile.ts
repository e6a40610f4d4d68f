import type { JsonObject, JsonValue } from '../../contract/json.js';
import type { DocumentFormat } from '../../contract/document-format.js';
import { gunzip, isGzip } from '../../codec/gzip.js';
import { utf8Decode, utf8Encode } from '../../codec/utf8.js';
import { CheckpointError } from '../../contract/errors.js';
import { FORMAT_VERSION, type Integrity, type Snapshot, type SnapshotDraft } from '../../contract/snapshot.js';
import { assertValid, documentValidator } from '../../codec/document-validator.js';
import * as generated from '../../codec/generated/handoff-stored-handoff-json-schema.js';
import * as generatedLegacy from '../../codec/generated/handoff-legacy-stored-handoff-json-schema.js';
import { defineProfile } from '../define-profile.js';
import { type Profile } from '../../contract/profile.js';
import { LIFECYCLE_STATUSES } from '../default-profile.js';
import { standardLayout, type HistoryNaming } from '../../snapshot-io/layout.js';
import { type KeyInfo, type ProfileLayout } from '../../contract/layout.js';
import type { ResumePoint, ResumeRule } from '../../contract/resume-rule.js';
import type { RetentionPolicy } from '../../contract/retention-policy.js';
import { parseHandoffUnchecked, renderHandoff, renderPlayByPlayEntry } from './codec.js';
import {
  HandoffPayloadSchema,
  storedHandoffJsonSchema,
  type HandoffDocument,
  type HandoffPayload,
  type LegacyStoredHandoff,
  type StoredHandoff,
} from './model.js';
import { base64urlOfHex, liberalUtc } from './foreign-text.js';
import {
  COALESCED_KEY,
  handoffChecksum,
  handoffSealDigest,
  parseSealLine,
  payloadOf,
  SEAL_KEY,
  sealLine,
  type HandoffSeal,
} from './seal.js';

export { handoffChecksum };
import { handoffForeignReader, keepHandoffForeignFields } from './foreign.js';
import { HANDOFF_TRIGGERS } from './triggers.js';
import { assertObjectArgument, assertOptionsArgument, assertStringArgument } from '../../contract/arguments.js';

/** Options of {@link handoffMarkdownFormat}. */
export interface HandoffMarkdownFormatOptions {
  /** Written first on savepoint's seal line (`integrity.format_version` of the model). No spaces. @default FORMAT_VERSION ('1.0') */
  readonly formatVersion?: string;
}

const validateLegacy = documentValidator(generatedLegacy.validate); // legacyStoredHandoffJsonSchema's, generated at build time

/** A hand-off an earlier savepoint stored (run id, sequence, … and `integrity` as separate front-matter keys): strict read. */
async function decodeLegacy(doc: Record<string, unknown>, where: string): Promise<Snapshot<HandoffPayload>> {
  assertValid(validateLegacy(doc), where);
  const stored = doc as unknown as LegacyStoredHandoff;
  if ((await handoffChecksum(doc)) !== stored.frontMatter.integrity.checksum) {
    throw new CheckpointError('checkpoint_integrity_mismatch', `${where}: stored checksum does not match the content`, {
      details: { where },
    });
  }
  const fm = stored.frontMatter;
  return {
    id: stored.checkpoint,
    runId: fm.run_id,
    sequence: fm.sequence,
    createdAt: stored.created,
    source: fm.source,
    sourceDetails: fm.source_details ?? [],
    ...(fm.priority ? { priority: fm.priority } : {}),
    status: fm.status,
    payload: payloadOf(doc),
    integrity: fm.integrity,
  };
}

/** Rejects a draft whose payload is not a hand-off payload, naming the first mismatch. */
function assertHandoffPayload(payload: unknown, where: string): void {
  const parsedPayload = HandoffPayloadSchema.safeParse(payload);
  if (parsedPayload.success) return;
  const issue = parsedPayload.error.issues[0]!;
  throw new CheckpointError(
    'checkpoint_schema_invalid',
    `${where}: payload does not match the hand-off schema: /${issue.path.join('/')} ${issue.message}`,
    {
      details: { paths: parsedPayload.error.issues.slice(0, 20).map((i) => `/${i.path.join('/')}`) },
    },
  );
}

/** The document a draft becomes before its checksum is known: the seal line without checksum, and the coalesced triggers. */
function unsealedDocument(draft: SnapshotDraft<HandoffPayload>, seal: HandoffSeal): HandoffDocument {
  const frontMatter: Record<string, JsonValue> = {
    [SEAL_KEY]: sealLine(seal),
    ...(draft.sourceDetails.length > 0 ? { [COALESCED_KEY]: draft.sourceDetails as unknown as JsonValue } : {}),
  };
  return {
    ...(draft.payload as HandoffPayload),
    checkpoint: draft.id,
    created: draft.createdAt,
    frontMatter,
  };
}

/** Rejects a seal line whose trigger or status savepoint does not know. */
function assertKnownTriggerAndStatus(seal: HandoffSeal, where: string): void {
  if (!Object.hasOwn(HANDOFF_TRIGGERS, seal.source) || !(LIFECYCLE_STATUSES as readonly string[]).includes(seal.status)) {
    throw new CheckpointError('checkpoint_schema_invalid', `${where}: the seal line names an unknown trigger or status`, {
      details: { where },
    });
  }
}

/** The run a hand-off file belongs to: its folder, as the layout classifies it. */
function runIdOf(info: KeyInfo | undefined, where: string): string {
  if (info?.runId === undefined)
    throw new CheckpointError('checkpoint_schema_invalid', `${where} is not a hand-off file of this layout: its folder names the run`, {
      details: { where },
    });
  return info.runId;
}

/**
 * The {@link DocumentFormat} of the `handoffMarkdown` profile: the spec's Markdown document
 * whose front matter also carries savepoint's one seal line, `savepoint: <format_version>
 * <sequence> <trigger> <status> [<priority>] <checksum>` (≤ 25 tokens; see
 * `handoffSealDigest`), and `savepoint_coalesced` when triggers were coalesced. The run id
 * is the file's folder (`<root>/<run>/…`, from `options`' layout). Reads gunzip `.gz`
 * history transparently, parse, validate with ajv against {@link storedHandoffJsonSchema},
 * then verify the checksum; documents an earlier savepoint sealed are read too. A document
 * without savepoint's seal (another tool's) is read by the spec's own rules through
 * `decodeForeign`; an edited `latest.md` is the newest truth (`keepForeignFields` carries
 * another tool's keys and sections into savepoint's next rewrite).
 */
export function handoffMarkdownFormat(options: HandoffMarkdownFormatOptions & HandoffLayoutOptions = {}): DocumentFormat<HandoffPayload> {
  assertOptionsArgument(options, 'handoffMarkdownFormat');
  const formatVersion = options.formatVersion ?? FORMAT_VERSION;
  if (!/^\S{1,16}$/.test(formatVersion))
    throw new CheckpointError('checkpoint_config_invalid', 'formatVersion must be 1-16 characters without spaces');
  const validate = documentValidator(generated.validate); // storedHandoffJsonSchema's, generated at build time
  const layout = handoffLayout(options);
  const locate = (where: string): KeyInfo | undefined => layout.classify(where);

  return {
    extension: '.md',
    jsonSchema: storedHandoffJsonSchema,
    async encode(draft: SnapshotDraft<HandoffPayload>) {
      const where = `snapshot ${draft.sequence} of run ${draft.runId}`;
      assertHandoffPayload(draft.payload, where);
      const seal: HandoffSeal = {
        formatVersion,
        sequence: draft.sequence,
        source: draft.source,
        status: draft.status,
        ...(draft.priority ? { priority: draft.priority } : {}),
      };
      // Seal what a reader will parse back (text in normal form), so the checksum verifies.
      const normalized = parseHandoffUnchecked(renderHandoff(unsealedDocument(draft, seal)), where);
      const digest = await handoffSealDigest(normalized, seal);
      const sealed = {
        ...normalized,
        frontMatter: { ...(normalized.frontMatter as JsonObject), [SEAL_KEY]: sealLine({ ...seal, checksum: base64urlOfHex(digest) }) },
      };
      assertValid(validate(sealed), where);
      const integrity: Integrity = { format_version: formatVersion, algorithm: 'sha256', checksum: digest };
      return {
        bytes: utf8Encode(renderHandoff(sealed as unknown as HandoffDocument)),
        snapshot: { ...draft, payload: payloadOf(sealed), integrity },
      };
    },
    async decode(bytes: Uint8Array, where: string): Promise<Snapshot<HandoffPayload>> {
      const plain = isGzip(bytes) ? gunzip(bytes, where) : bytes;
      const doc = parseHandoffUnchecked(utf8Decode(plain, where), where);
      const fm = (doc.frontMatter ?? {}) as Record<string, unknown>;
      if (fm[SEAL_KEY] === undefined && fm.integrity !== undefined && fm.run_id !== undefined) return decodeLegacy(doc, where);
      const seal = parseSealLine(fm[SEAL_KEY]);
      if (!seal)
        throw new CheckpointError('checkpoint_schema_invalid', `${where} has no savepoint seal line (another tool wrote it)`, {
          details: { where },
        });
      assertValid(validate(doc), where);
      assertKnownTriggerAndStatus(seal, where);
      const digest = await handoffSealDigest(doc, seal);
      if (base64urlOfHex(digest) !== seal.checksum) {
        throw new CheckpointError('checkpoint_integrity_mismatch', `${where}: stored checksum does not match the content`, {
          details: { where },
        });
      }
      const runId = runIdOf(locate(where), where);
      const createdAt = liberalUtc(String(doc.created));
      if (createdAt === undefined)
        throw new CheckpointError('checkpoint_schema_invalid', `${where}: created is not an ISO 8601 time`, { details: { where } });
      const stored = doc as unknown as StoredHandoff;
      return {
        id: stored.checkpoint,
        runId,
        sequence: seal.sequence,
        createdAt,
        source: seal.source,
        sourceDetails: stored.frontMatter.savepoint_coalesced ?? [],
        ...(seal.priority ? { priority: seal.priority } : {}),
        status: seal.status,
        payload: payloadOf(doc),
        integrity: { format_version: seal.formatVersion, algorithm: 'sha256', checksum: digest },
      };
    },
    decodeForeign: handoffForeignReader(locate),
    keepForeignFields: keepHandoffForeignFields,
  };
}

/** Options of {@link handoffLayout}. */
export interface HandoffLayoutOptions {
  /** Folder holding one sub-folder per run. @default 'checkpoints' */
  readonly root?: string;
  /** Prefix of checkpoint ids and history file names (`chk` → `chk-003.md`). @default 'chk' */
  readonly idPrefix?: string;
}

const ID_PREFIX = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** `chk-003` for sequence 3: at least three digits, as in the spec's examples. */
export function handoffCheckpointId(sequence: number, idPrefix = 'chk'): string {
  return `${idPrefix}-${String(sequence).padStart(3, '0')}`;
}

/** History entries `chk-NNN.md` directly in the run folder. */
export function handoffHistoryNaming(idPrefix = 'chk'): HistoryNaming {
  assertStringArgument(idPrefix, 'handoffHistoryNaming', 'idPrefix');
  const escaped = idPrefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const pattern = new RegExp(`^${escaped}-(\\d{3,})\\.md$`);
  return {
    dir: '',
    keyFrom: 'sequence',
    name: (ref) => `${handoffCheckpointId(ref.sequence, idPrefix)}.md`,
    parse: (fileName) => {
      const m = pattern.exec(fileName);
      return m ? { sequence: Number(m[1]), snapshotId: fileName.slice(0, -3) } : undefined;
    },
  };
}

/**
 * `<root>/<run_id>/chk-001.md, chk-002.md, …` (one immutable file per checkpoint) plus
 * `<root>/<run_id>/latest.md`, the newest checkpoint. No index file: the spec has none,
 * and resume falls back to scanning the `chk-NNN.md` files.
 */
export function handoffLayout(options: HandoffLayoutOptions = {}): ProfileLayout {
  assertOptionsArgument(options, 'handoffLayout');
  const idPrefix = options.idPrefix ?? 'chk';
  if (!ID_PREFIX.test(idPrefix))
    throw new CheckpointError('checkpoint_config_invalid', 'idPrefix must be 1-64 characters of [A-Za-z0-9._-]');
  return standardLayout({
    root: options.root ?? 'checkpoints',
    latestName: 'latest.md',
    indexName: false,
    history: handoffHistoryNaming(idPrefix),
  });
}

const NO_BLOCKER = /^blocked\s*:\s*(?:none|no|n\/a|-|—)?\.?\s*$/i;
const BLOCKER = /^blocked\s*:/i;
/** A task-list checkbox at the start of an item: `[ ]` open, `[x]` done. */
const CHECKBOX = /^\[([ xX])\]\s*/;
/** An item that says there is nothing to do. */
const NOTHING = /^(?:none|nothing|n\/a|-|—)\.?$/i;

/** One Next Actions item as the rule reads it: its text without a checkbox, and whether it is ticked off. */
interface ActionItem {
  readonly text: string;
  readonly done: boolean;
}

function actionItem(line: string): ActionItem {
  const box = CHECKBOX.exec(line);
  return box ? { text: line.slice(box[0].length).trim(), done: box[1] !== ' ' } : { text: line.trim(), done: false };
}

/**
 * Resume rule of the hand-off profile: Next Actions is the resume point. `at` is the
 * first open Next Action that is not a `Blocked:` line, without its task-list checkbox
 * (`- [ ] Phase 3` → `Phase 3`); ticked items (`- [x] …`) and `None` are not work. A
 * `Blocked: <something>` line other than `Blocked: None`, ticked or not as `- [ ] Blocked: …`,
 * makes the run ineligible for automatic resume (a human unblocks it; a ticked `- [x] Blocked:`
 * is cleared), as does a terminal status or an empty Next Actions list. `continuationPrompt`
 * names the checkpoint and lists the Next Actions; `restored.markdown` is the whole
 * hand-off document, ready to paste into a new session.
 */
export const handoffResumeRule: ResumeRule<HandoffPayload> = (snapshot, context) => {
  assertObjectArgument(snapshot, 'handoffResumeRule', 'snapshot');
  assertObjectArgument(snapshot.payload, 'handoffResumeRule', 'snapshot.payload');
  assertObjectArgument(context, 'handoffResumeRule', 'context');
  const p = snapshot.payload;
  const terminal = context.isTerminal
    ? context.isTerminal(snapshot.status)
    : snapshot.status === 'completed' || snapshot.status === 'failed';
  const open = p.nextActions
    .map(actionItem)
    .filter((a) => !a.done && !NOTHING.test(a.text))
    .map((a) => a.text);
  const work = open.filter((a) => !BLOCKER.test(a));
  const blockers = open.filter((a) => BLOCKER.test(a) && !NO_BLOCKER.test(a));
  const remaining = open.filter((a) => !NO_BLOCKER.test(a));
  const header = `Continue from hand-off checkpoint ${snapshot.id}${p.anchor ? ` (${p.anchor})` : ''}.`;
  const continuationPrompt = [header, 'Next actions:', ...p.nextActions.map((a) => `- ${a.replace(/\n/g, '\n  ')}`)].join('\n');
  const doc: HandoffDocument = { ...p, checkpoint: snapshot.id, created: snapshot.createdAt };
  const base = {
    completed: p.playByPlay.map(renderPlayByPlayEntry),
    remaining,
    continuationPrompt,
    restored: { document: doc, markdown: renderHandoff(doc) },
  };
  let point: Omit<ResumePoint, keyof typeof base>;
  if (terminal) {
    point = {
      at: 'done',
      reason: `run_${snapshot.status}`,
      explanation: `Checkpoint ${snapshot.id} ended the run with status ${snapshot.status}.`,
      eligible: false,
    };
  } else if (blockers.length > 0) {
    point = {
      at: work[0] ?? blockers[0]!,
      reason: 'blocked',
      explanation: `Checkpoint ${snapshot.id} lists ${blockers.length} active blocker(s) under Next Actions; a human must clear them first.`,
      eligible: false,
    };
  } else if (work.length === 0) {
    point = {
      at: 'done',
      reason: 'no_next_actions',
      explanation: `Checkpoint ${snapshot.id} lists no pending Next Actions.`,
      eligible: false,
    };
  } else {
    point = {
      at: work[0]!,
      reason: 'next_action',
      explanation: `Resume with the first of ${work.length} Next Action(s) of checkpoint ${snapshot.id}.`,
      eligible: true,
    };
  }
  return { ...point, ...base };
};

/** Options of {@link handoffMarkdownProfile}. */
export interface HandoffMarkdownProfileOptions extends HandoffLayoutOptions, HandoffMarkdownFormatOptions {
  /** Profile name (the CLI's `--profile`). @default 'handoffMarkdown' */
  readonly name?: string;
  /** Default retention policy. @default none (keep everything) */
  readonly retention?: RetentionPolicy;
  /** Largest stored document in bytes; larger ones are `checkpoint_too_large` (Markdown is never split). @default 10 * 1024 * 1024 */
  readonly maxSnapshotBytes?: number;
  /** Coalescing window. @default 3000 */
  readonly coalesceWindowMs?: number;
}

/**
 * Makes a `handoffMarkdown` profile (handoff-markdown.md): payload {@link HandoffPayload},
 * triggers `phase_completion`, `major_decision`, `context_shift`, `session_break`,
 * `pre_compression` (no heartbeat: the spec checkpoints at natural breakpoints),
 * statuses `in_progress` / `paused` / `completed` / `failed`, snapshot ids `chk-NNN`,
 * layout {@link handoffLayout}, format {@link handoffMarkdownFormat}, resume rule
 * {@link handoffResumeRule}.
 *
 * @example
 * ```ts
 * const profile = handoffMarkdownProfile({ root: 'handoffs', idPrefix: 'session-abc' });
 * const writer = createWriter({ storage, profile, runId: 'chromatic-quest' });
 * await writer.checkpoint({ source: 'phase_completion', status: 'in_progress', payload });
 * ```
 */
export function handoffMarkdownProfile(options: HandoffMarkdownProfileOptions = {}): Profile<HandoffPayload> {
  assertOptionsArgument(options, 'handoffMarkdownProfile');
  const idPrefix = options.idPrefix ?? 'chk';
  return defineProfile<HandoffPayload>({
    name: options.name ?? 'handoffMarkdown',
    description: 'Markdown hand-off documents with front matter, carried forward and compressed under a token budget',
    sharedFiles: 'the next session and people read the Markdown hand-off documents',
    payload: HandoffPayloadSchema,
    triggers: HANDOFF_TRIGGERS,
    statuses: { all: LIFECYCLE_STATUSES, terminal: ['completed', 'failed'], active: 'in_progress' },
    document: handoffMarkdownFormat(options),
    layout: handoffLayout(options),
    newSnapshotId: (ctx) => handoffCheckpointId(ctx.sequence, idPrefix),
    heartbeat: false,
    onOversize: 'reject',
    // A chk-NNN.md is sealed history (docs/handoff-markdown.md): a coalesced trigger goes to
    // latest.md, and the next hand-off's file carries it (docs/writing.md).
    immutableHistory: true,
    ...(options.maxSnapshotBytes !== undefined ? { maxSnapshotBytes: options.maxSnapshotBytes } : {}),
    ...(options.coalesceWindowMs !== undefined ? { coalesceWindowMs: options.coalesceWindowMs } : {}),
    ...(options.retention ? { retention: options.retention } : {}),
    resume: handoffResumeRule,
  });
}

/** The built-in `handoffMarkdown` profile with default options (`checkpoints/<run>/chk-NNN.md` + `latest.md`). */
export const handoffMarkdown: Profile<HandoffPayload> = handoffMarkdownProfile();
