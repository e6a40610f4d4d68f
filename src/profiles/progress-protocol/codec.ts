/**
 * Render and parse `.ccc-progress.md` exactly as progress-protocol.md (Step 1) lays it out.
 */
import { canonicalJson, parseJson } from '../../codec/canonical-json.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertValid, documentValidator, type DocumentValidator } from '../../codec/document-validator.js';
import * as generated from '../../codec/generated/progress-progress-document-json-schema.js';
import {
  assertRenderable,
  normalizeBlock,
  normalizeNewlines,
  normalizeText,
  parseListItems,
  renderListItems,
  sectionKey,
  splitSections,
} from '../handoff-markdown/markdown.js';
import { ProgressDocumentSchema, type ProgressBlocker, type ProgressDecision, type ProgressDocument, type ProgressMeta } from './model.js';
import { assertStringArgument } from '../../contract/arguments.js';

/** Title line of the progress file. */
export const PROGRESS_TITLE = '# Session Progress';

type ListField = 'completedTasks' | 'currentTask' | 'remainingTasks' | 'decisions' | 'blockers' | 'continuationPrompt';

/** The spec's `##` sections, in order. */
export const PROGRESS_SECTIONS: readonly { readonly field: ListField; readonly title: string }[] = [
  { field: 'completedTasks', title: 'Completed Tasks' },
  { field: 'currentTask', title: 'Current Task' },
  { field: 'remainingTasks', title: 'Remaining Tasks' },
  { field: 'decisions', title: 'Decisions Made' },
  { field: 'blockers', title: 'Blockers' },
  { field: 'continuationPrompt', title: 'Continuation Prompt' },
];

/** Section keys the spec defines (`## Decisions` read as Decisions Made). */
export const isProgressSectionKey = (key: string): boolean => BY_KEY.has(key);

const BY_KEY = new Map<string, { readonly field: ListField; readonly title: string }>([
  ...PROGRESS_SECTIONS.map((s) => [sectionKey(s.title), s] as const),
  ['decisions', PROGRESS_SECTIONS[3]!],
]);

/** A header line of the progress file (`**Issue:**`, `**Session:**`, `**Execution Mode:**`). */
export const PROGRESS_HEADER_LINE = /^\*\*(issue|session|execution mode)(?::\*\*|\*\*\s*:)\s*(.*?)\s*$/i;
/** savepoint's metadata comment line. */
export const SAVEPOINT_META_LINE = /^<!--\s*savepoint:\s*(\{.*\})\s*-->\s*$/;
const TASK_SEPARATOR = /\s+(?:—|–|--)\s+/;
const ISSUE_SEPARATOR = /\s+(?:—|–|--|-)\s+/;
const NONE = /^none\.?$/i;
const DONE_MARK = /\s*[✓✔]\s*$/;
const UNBLOCKED = /^([\s\S]*?)\s*\(unblocked by:\s*(.*?)\s*\)\s*$/i;

function schemaError(message: string, details: Record<string, string | number | readonly string[]> = {}): CheckpointError {
  return new CheckpointError('checkpoint_schema_invalid', message, { details });
}

function splitLast(text: string, separator: RegExp): [string, string] | undefined {
  const global = new RegExp(separator.source, 'g');
  let last: RegExpExecArray | undefined;
  for (let m = global.exec(text); m; m = global.exec(text)) last = m;
  return last ? [text.slice(0, last.index), text.slice(last.index + last[0].length)] : undefined;
}

// progressDocumentJsonSchema's validator, generated at build time.
const validator = documentValidator(generated.validate);
/** Checks a parsed progress document against {@link progressDocumentJsonSchema} with ajv. */
export function validateProgressDocument(document: unknown): ReturnType<DocumentValidator> {
  return validator(document);
}

/** A parsed progress file: the document and, for files savepoint wrote, its metadata comment. */
export interface ParsedProgress {
  readonly document: ProgressDocument;
  /** savepoint's metadata (run id, sequence, integrity…), when the file carries the comment. */
  readonly meta?: unknown;
}

/**
 * Parses `.ccc-progress.md`. Reads what people and other tools write: CRLF, extra blank
 * lines, `*` bullets, `- None` for an empty list, `[x]` or `✓` on completed tasks,
 * `## Decisions` for `## Decisions Made`, and sections in any order; other `##`
 * sections are kept in `extraSections`. The `**Issue:**` line and the
 * `## Continuation Prompt` section are required (`checkpoint_schema_invalid` naming the
 * one missing); any other missing section reads as empty.
 */
export function parseProgress(text: string, where = '.ccc-progress.md'): ParsedProgress {
  assertStringArgument(text, 'parseProgress', 'text');
  const lines = normalizeNewlines(text).split('\n');
  const { preamble, sections } = splitSections(lines, 2, 2);
  const { header, meta } = parsePreamble(preamble, where);
  if (header.issue === undefined || header.issue === '')
    throw schemaError(`${where}: the **Issue:** line is missing`, { where, section: 'Issue' });
  const issueParts = ISSUE_SEPARATOR.exec(header.issue);
  const issue = issueParts
    ? { id: header.issue.slice(0, issueParts.index).trim(), title: header.issue.slice(issueParts.index + issueParts[0].length).trim() }
    : { id: header.issue.trim(), title: '' };

  const doc: Record<string, unknown> = {
    issue,
    session: header.session ?? '',
    executionMode: (header['execution mode'] ?? '').replace(/^exec:/, ''),
    completedTasks: [],
    remainingTasks: [],
    decisions: [],
    blockers: [],
  };
  const seen = new Set<ListField>();
  const extras: { heading: string; body: string }[] = [];
  for (const section of sections) {
    const spec = BY_KEY.get(section.key);
    if (!spec) {
      extras.push({ heading: section.title, body: normalizeBlock(section.lines) });
      continue;
    }
    if (seen.has(spec.field)) throw schemaError(`${where}: section "${spec.title}" appears more than once`, { where, section: spec.title });
    seen.add(spec.field);
    readSection(doc, spec.field, section.lines, where);
  }
  if (!seen.has('continuationPrompt'))
    throw schemaError(`${where}: missing required section "Continuation Prompt"`, { where, sections: ['Continuation Prompt'] });
  if (extras.length > 0) doc.extraSections = extras;
  assertValid(validateProgressDocument(doc), where);
  return meta === undefined ? { document: doc as ProgressDocument } : { document: doc as ProgressDocument, meta };
}

/** The `**Field:** value` lines before the first section (by lower-case field), and savepoint's metadata comment, if any. */
function parsePreamble(preamble: readonly string[], where: string): { header: Record<string, string>; meta: unknown } {
  const header: Record<string, string> = {};
  let meta: unknown;
  for (const line of preamble) {
    const m = PROGRESS_HEADER_LINE.exec(line);
    if (m) {
      header[m[1]!.toLowerCase()] = m[2]!;
      continue;
    }
    const c = SAVEPOINT_META_LINE.exec(line);
    if (c) meta = parseJson(c[1]!, `${where} (savepoint metadata)`);
  }
  return { header, meta };
}

/** Sets the document field one known section holds, from the section's lines. */
function readSection(doc: Record<string, unknown>, field: ListField, lines: readonly string[], where: string): void {
  const items = field === 'continuationPrompt' ? [] : parseListItems(lines).filter((i) => !NONE.test(i));
  switch (field) {
    case 'completedTasks':
      doc.completedTasks = items.map((i) => i.replace(DONE_MARK, '').replace(/^\[[xX]\]\s+/, ''));
      break;
    case 'remainingTasks':
      doc.remainingTasks = items.map((i) => i.replace(/^\[ \]\s+/, ''));
      break;
    case 'currentTask': {
      if (items.length > 1)
        throw schemaError(`${where}: section "Current Task" lists more than one task`, { where, section: 'Current Task' });
      const only = items[0];
      if (only !== undefined) {
        const parts = splitLast(only, TASK_SEPARATOR);
        doc.currentTask = parts ? { description: parts[0].trim(), status: parts[1].trim() } : { description: only, status: '' };
      }
      break;
    }
    case 'decisions':
      doc.decisions = items.map((i): ProgressDecision => {
        const at = i.indexOf(': ');
        return at > 0 ? { decision: i.slice(0, at).trim(), rationale: i.slice(at + 2).trim() } : { decision: i, rationale: '' };
      });
      break;
    case 'blockers':
      doc.blockers = items.map((i): ProgressBlocker => {
        const m = UNBLOCKED.exec(i);
        return m && m[1]!.trim() !== '' ? { description: m[1]!.trim(), unblockedBy: m[2]! } : { description: i, unblockedBy: '' };
      });
      break;
    case 'continuationPrompt': {
      const value = normalizeBlock(lines);
      if (value === '') throw schemaError(`${where}: section "Continuation Prompt" is empty`, { where, section: 'Continuation Prompt' });
      doc.continuationPrompt = value;
      break;
    }
  }
}

function bullets(items: readonly string[], where: string): string {
  const normalized = items.map(normalizeText).filter((i) => i !== '');
  normalized.forEach((item, i) => {
    if (NONE.test(item)) throw schemaError(`${where} item ${i + 1} reads as "None"`, { where });
    assertRenderable(item, `${where} item ${i + 1}`, false);
  });
  return normalized.length === 0 ? '- None' : renderListItems(normalized);
}

function check(ok: boolean, message: string): void {
  if (!ok) throw schemaError(message);
}

/**
 * Renders `.ccc-progress.md` in the spec's layout. An empty list is written `- None`
 * (and read back as empty); `meta`, when given, becomes savepoint's metadata comment
 * under the title. Throws `checkpoint_schema_invalid` for a document that does not
 * match the schema or could not be read back as written (a decision containing `: `,
 * a completed task ending in ✓, a task named "None").
 */
export function renderProgress(doc: ProgressDocument, meta?: ProgressMeta): string {
  const checked = ProgressDocumentSchema.safeParse(doc);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw schemaError(`progress document does not match its schema: /${issue.path.join('/')} ${issue.message}`, {
      paths: checked.error.issues.slice(0, 20).map((i) => `/${i.path.join('/')}`),
    });
  }
  const id = doc.issue.id.trim();
  check(!ISSUE_SEPARATOR.test(id), 'the issue id may not contain a spaced dash (it separates id and title)');
  doc.completedTasks.forEach((t) =>
    check(!DONE_MARK.test(t) && !/^\[[xX]\]\s/.test(t), `completed task "${t.slice(0, 40)}" may not carry its own ✓ or [x]`),
  );
  doc.remainingTasks.forEach((t) => check(!/^\[ \]\s/.test(t), `remaining task "${t.slice(0, 40)}" may not start with "[ ]"`));
  const current = doc.currentTask;
  if (current) {
    check(
      !TASK_SEPARATOR.test(current.status) && (current.status.trim() !== '' || !TASK_SEPARATOR.test(current.description)),
      'the current task may contain " — " only in its description, and only when it has a status',
    );
  }
  doc.decisions.forEach((d) =>
    check(
      !d.decision.includes(': ') && !d.decision.includes('\n'),
      `decision "${d.decision.slice(0, 40)}" may not contain ": " or a line break (": " separates the rationale)`,
    ),
  );
  doc.blockers.forEach((b) =>
    check(!/\(unblocked by:/i.test(b.description), `blocker "${b.description.slice(0, 40)}" may not contain "(unblocked by:" itself`),
  );

  const title = doc.issue.title.trim();
  const head = [PROGRESS_TITLE, ...(meta ? [`<!-- savepoint: ${canonicalJson(meta)} -->`] : [])].join('\n');
  const fields = [
    `**Issue:** ${id}${title ? ` — ${title}` : ''}`,
    `**Session:** ${doc.session.trim()}`.trimEnd(),
    `**Execution Mode:** exec:${doc.executionMode.trim()}`,
  ].join('\n');
  const currentLine = current ? [`${current.description.trim()}${current.status.trim() ? ` — ${current.status.trim()}` : ''}`] : [];
  const prompt = normalizeText(doc.continuationPrompt);
  check(prompt !== '', 'the continuation prompt is empty');
  assertRenderable(prompt, 'section "Continuation Prompt"', true);
  const parts = [
    head,
    fields,
    `## Completed Tasks\n${bullets(
      doc.completedTasks.map((t) => `${t.trim()} ✓`),
      'section "Completed Tasks"',
    )}`,
    `## Current Task\n${bullets(currentLine, 'section "Current Task"')}`,
    `## Remaining Tasks\n${bullets(doc.remainingTasks, 'section "Remaining Tasks"')}`,
    `## Decisions Made\n${bullets(
      doc.decisions.map((d) => (d.rationale.trim() ? `${d.decision.trim()}: ${d.rationale.trim()}` : d.decision.trim())),
      'section "Decisions Made"',
    )}`,
    `## Blockers\n${bullets(
      doc.blockers.map((b) =>
        b.unblockedBy.trim() ? `${b.description.trim()} (unblocked by: ${b.unblockedBy.trim()})` : b.description.trim(),
      ),
      'section "Blockers"',
    )}`,
    `## Continuation Prompt\n${prompt}`,
  ];
  for (const extra of doc.extraSections ?? []) {
    const heading = extra.heading.trim();
    check(!BY_KEY.has(sectionKey(heading)) && heading !== '', `extra section "${heading}" cannot be written under that heading`);
    const body = normalizeText(extra.body);
    assertRenderable(body, `section "${heading}"`, true);
    parts.push(body === '' ? `## ${heading}` : `## ${heading}\n${body}`);
  }
  return `${parts.join('\n\n')}\n`;
}

/**
 * The text of the `## Continuation Prompt` section of a progress file, or `undefined`
 * when the section is missing or empty. Reads only that section (as `/ccc:go` does), so it
 * works on files other tools wrote.
 */
export function readContinuationPrompt(text: string): string | undefined {
  assertStringArgument(text, 'readContinuationPrompt', 'text');
  const { sections } = splitSections(normalizeNewlines(text).split('\n'), 2, 2);
  const section = sections.find((s) => s.key === 'continuationprompt');
  const value = section ? normalizeBlock(section.lines) : '';
  return value === '' ? undefined : value;
}
