/**
 * Render and parse the hand-off document exactly as handoff-markdown.md lays it out.
 *
 * The front matter goes through the `yaml` package (YAML 1.2 core schema, so
 * `created: 2025-12-14T15:30:00Z` stays a string). `yaml` is an optional peer dependency
 * of the `savepoint/handoff-markdown` subpath: install it next to savepoint
 * (`npm install yaml`); importing this subpath without it fails with Node's
 * "Cannot find package 'yaml'" error.
 */
import { parseDocument, stringify } from 'yaml';
import { canonicalJson } from '../../codec/canonical-json.js';
import { type JsonValue } from '../../contract/json.js';
import { CheckpointError } from '../../contract/errors.js';
import { assertValid, documentValidator as validatorOf, type DocumentValidator } from '../../codec/document-validator.js';
import * as generated from '../../codec/generated/handoff-handoff-document-json-schema.js';
import {
  assertRenderable,
  escapeTableCell,
  headingOf,
  isTableDelimiter,
  isTableRow,
  normalizeBlock,
  normalizeNewlines,
  normalizeText,
  parseListItems,
  renderListItems,
  sectionKey,
  splitSections,
  splitTableRow,
} from './markdown.js';
import {
  HANDOFF_HEADER_FIELDS,
  HandoffDocumentSchema,
  PlayByPlayEntrySchema,
  type ArtifactEntry,
  type ExtraSection,
  type HandoffDocument,
  type PlayByPlayEntry,
} from './model.js';
import { assertArrayArgument, assertSchemaArgument, assertStringArgument } from '../../contract/arguments.js';

type SectionKind = 'text' | 'list' | 'playByPlay' | 'table';
type SectionField =
  | 'problem'
  | 'sessionIntent'
  | 'decisions'
  | 'technicalContext'
  | 'playByPlay'
  | 'artifactTrail'
  | 'currentState'
  | 'nextActions'
  | 'userRules';

interface SectionSpec {
  readonly field: SectionField;
  readonly title: string;
  readonly level: 2 | 3;
  readonly kind: SectionKind;
  readonly required: boolean;
}

/** The spec's sections, in document order. Decisions … Next Actions sit under `## Essential Information`. */
export const HANDOFF_SECTIONS: readonly SectionSpec[] = [
  { field: 'problem', title: 'Problem', level: 2, kind: 'text', required: true },
  { field: 'sessionIntent', title: 'Session Intent', level: 2, kind: 'text', required: true },
  { field: 'decisions', title: 'Decisions', level: 3, kind: 'list', required: true },
  { field: 'technicalContext', title: 'Technical Context', level: 3, kind: 'list', required: true },
  { field: 'playByPlay', title: 'Play-By-Play', level: 3, kind: 'playByPlay', required: true },
  { field: 'artifactTrail', title: 'Artifact Trail', level: 3, kind: 'table', required: true },
  { field: 'currentState', title: 'Current State', level: 3, kind: 'list', required: true },
  { field: 'nextActions', title: 'Next Actions', level: 3, kind: 'list', required: true },
  { field: 'userRules', title: 'User Rules', level: 2, kind: 'list', required: false },
];

const ESSENTIAL_INFORMATION = 'Essential Information';
const BY_KEY = new Map(HANDOFF_SECTIONS.map((s) => [sectionKey(s.title), s]));
const RESERVED_KEYS = new Set([...BY_KEY.keys(), sectionKey(ESSENTIAL_INFORMATION)]);

/** The arrow between Phase, Action and Outcome; ` -> ` is read too. */
const ARROW = /\s+->\s+|\s*→\s*/;
const ARROW_TEST = /->|→/;

function schemaError(message: string, details: Record<string, string | number | readonly string[]> = {}): CheckpointError {
  return new CheckpointError('checkpoint_schema_invalid', message, { details });
}

/** Reads a Play-By-Play line: `Phase → Action → Outcome` (two parts: phase and action; one part: action). */
export function parsePlayByPlayEntry(text: string): PlayByPlayEntry {
  assertStringArgument(text, 'parsePlayByPlayEntry', 'text');
  const parts = text
    .replace(/\s*\n\s*/g, ' ')
    .split(ARROW)
    .map((p) => p.trim());
  if (parts.length === 1) return { phase: '', action: parts[0]!, outcome: '' };
  if (parts.length === 2) return { phase: parts[0]!, action: parts[1]!, outcome: '' };
  return { phase: parts[0]!, action: parts.slice(1, -1).join(' → '), outcome: parts[parts.length - 1]! };
}

/** Writes a Play-By-Play line; empty phase/outcome parts are left out as {@link parsePlayByPlayEntry} expects. */
export function renderPlayByPlayEntry(entry: PlayByPlayEntry): string {
  assertSchemaArgument(PlayByPlayEntrySchema, entry, 'renderPlayByPlayEntry', 'entry');
  const phase = entry.phase.trim();
  const action = entry.action.trim();
  const outcome = entry.outcome.trim();
  if (phase === '' && outcome === '') return action;
  if (outcome === '') return `${phase} → ${action}`;
  return phase === '' ? `→ ${action} → ${outcome}` : `${phase} → ${action} → ${outcome}`;
}

function assertPlayByPlayRenderable(entry: PlayByPlayEntry, where: string): void {
  const bad =
    ARROW_TEST.test(entry.phase) || ARROW_TEST.test(entry.outcome) || (entry.outcome.trim() === '' && ARROW_TEST.test(entry.action));
  if (bad) throw schemaError(`${where} has an arrow inside a part; only the action of a three-part line may contain one`, { where });
}

const TABLE_HEADER = '| File | Status | Key Change |';
const TABLE_DELIMITER = '|------|--------|------------|';

/** Renders the Artifact Trail table (header and delimiter rows included). */
export function renderArtifactTable(rows: readonly ArtifactEntry[]): string {
  assertArrayArgument(rows, 'renderArtifactTable', 'rows');
  const lines = [TABLE_HEADER, TABLE_DELIMITER];
  for (const row of rows) {
    lines.push(
      `| \`${escapeTableCell(row.file.trim())}\` | ${escapeTableCell(row.status.trim())} | ${escapeTableCell(row.keyChange.trim())} |`,
    );
  }
  return lines.join('\n');
}

const NOTHING = /^(?:[-*+]\s*)?(?:none|n\/a|—|-)\.?$/i;

/**
 * Reads the Artifact Trail table. Columns are found by header name (`File`/`Path`,
 * `Status`, `Key Change`/`Change`/`Description`), else by position; `\|` is a literal
 * pipe; backticks around the file are removed; a missing cell is empty and extra cells
 * join the key change. A line saying "None" is read as no rows.
 */
export function parseArtifactTable(lines: readonly string[], where: string): ArtifactEntry[] {
  assertArrayArgument(lines, 'parseArtifactTable', 'lines');
  const rows: string[][] = [];
  let columns = { file: 0, status: 1, keyChange: 2 };
  const body = lines.map((l) => l.trim()).filter((l) => l !== '');
  for (let i = 0; i < body.length; i++) {
    const line = body[i]!;
    if (!isTableRow(line)) {
      if (NOTHING.test(line)) continue;
      throw schemaError(`${where}: section "Artifact Trail" must be a table of File / Status / Key Change`, {
        where,
        section: 'Artifact Trail',
      });
    }
    if (isTableDelimiter(line)) continue;
    const next = body[i + 1];
    if (next !== undefined && isTableDelimiter(next)) {
      const keys = splitTableRow(line).map(sectionKey);
      const find = (names: readonly string[], fallback: number): number => {
        const at = keys.findIndex((k) => names.includes(k));
        return at >= 0 ? at : fallback;
      };
      columns = {
        file: find(['file', 'path', 'files'], 0),
        status: find(['status'], 1),
        keyChange: find(['keychange', 'change', 'changes', 'description'], 2),
      };
      continue;
    }
    rows.push(splitTableRow(line));
  }
  const used = new Set([columns.file, columns.status, columns.keyChange]);
  return rows
    .filter((cells) => cells.some((c) => c !== ''))
    .map((cells) => {
      const extra = cells.filter((_, i) => !used.has(i) && i > Math.max(...used));
      const keyChange = [cells[columns.keyChange] ?? '', ...extra].filter((c, i) => i === 0 || c !== '').join(' | ');
      const file = (cells[columns.file] ?? '').replace(/^`+([^`]*)`+$/, '$1').trim();
      return { file, status: cells[columns.status] ?? '', keyChange };
    });
}

// handoffDocumentJsonSchema's validator, generated at build time.
const documentValidator = validatorOf(generated.validate);
/** Checks a parsed document against {@link handoffDocumentJsonSchema} with ajv. */
export function validateHandoffDocument(document: unknown): ReturnType<DocumentValidator> {
  return documentValidator(document);
}

/** Splits front matter from body. Leading blank lines before the opening `---` are allowed. */
function splitFrontMatter(text: string, where: string): { yaml: string; body: string[] } {
  const lines = normalizeNewlines(text).split('\n');
  let start = 0;
  while (start < lines.length && lines[start]!.trim() === '') start++;
  if (lines[start]?.trimEnd() !== '---')
    throw schemaError(`${where}: the front matter (--- checkpoint / created ---) is missing`, { where, section: 'front matter' });
  let end = start + 1;
  while (end < lines.length && !/^(?:---|\.\.\.)\s*$/.test(lines[end]!)) end++;
  if (end >= lines.length) throw schemaError(`${where}: the front matter is not closed by a --- line`, { where, section: 'front matter' });
  return { yaml: lines.slice(start + 1, end).join('\n'), body: lines.slice(end + 1) };
}

function readFrontMatter(yamlText: string, where: string): Record<string, unknown> {
  const doc = parseDocument(yamlText, { prettyErrors: false, uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const line = first.linePos?.[0]?.line;
    throw schemaError(`${where}: the front matter is not valid YAML (${first.code}${line === undefined ? '' : ` at line ${line + 1}`})`, {
      where,
      section: 'front matter',
    });
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    // yaml throws a ReferenceError for an alias bomb ("excessive alias count") and for an
    // alias to an anchor that is not there: hostile or broken input, not a program error.
    throw schemaError(
      `${where}: the front matter's aliases expand too far or point nowhere (${err instanceof Error ? err.name : 'error'})`,
      {
        where,
        section: 'front matter',
      },
    );
  }
  if (value === null || value === undefined) return {};
  if (typeof value !== 'object' || Array.isArray(value))
    throw schemaError(`${where}: the front matter must be a YAML mapping`, { where, section: 'front matter' });
  return value as Record<string, unknown>;
}

/** Numbers and booleans people write unquoted (`anchor: 3`) are read as the text they are. */
function scalarText(value: unknown): unknown {
  return typeof value === 'number' || typeof value === 'boolean' ? String(value) : value;
}

/**
 * Parses a hand-off document without the final schema check. Structure errors (no front
 * matter, a missing or repeated section, a table that is not a table) throw
 * `checkpoint_schema_invalid` naming the section.
 */
function parseHandoffStructure(text: string, where: string): Record<string, unknown> {
  const { yaml, body } = splitFrontMatter(text, where);
  const fm = readFrontMatter(yaml, where);
  const doc: Record<string, unknown> = {};
  doc.checkpoint = scalarText(fm.checkpoint);
  doc.created = fm.created;
  if (fm.anchor !== undefined && fm.anchor !== null && fm.anchor !== '') doc.anchor = scalarText(fm.anchor);
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fm)) if (!(HANDOFF_HEADER_FIELDS as readonly string[]).includes(key)) rest[key] = value;
  if (Object.keys(rest).length > 0) {
    try {
      canonicalJson(rest);
    } catch (err) {
      throw new CheckpointError('checkpoint_schema_invalid', `${where}: the front matter holds a value JSON cannot carry`, {
        cause: err,
        details: { where },
      });
    }
    doc.frontMatter = rest;
  }

  const { sections } = splitSections(body, 3, 1);
  const seen = new Set<SectionField>();
  const extras: ExtraSection[] = [];
  for (const section of sections) {
    const spec = BY_KEY.get(section.key);
    if (!spec) {
      if (section.key === sectionKey(ESSENTIAL_INFORMATION)) continue;
      const bodyText = normalizeBlock(section.lines);
      // A level-1 heading with nothing under it is a document title.
      if (section.level === 1 && bodyText === '') continue;
      extras.push({ heading: section.title, body: bodyText });
      continue;
    }
    if (seen.has(spec.field)) throw schemaError(`${where}: section "${spec.title}" appears more than once`, { where, section: spec.title });
    seen.add(spec.field);
    switch (spec.kind) {
      case 'text': {
        const value = normalizeBlock(section.lines);
        if (value === '') throw schemaError(`${where}: section "${spec.title}" is empty`, { where, section: spec.title });
        doc[spec.field] = value;
        break;
      }
      case 'list':
        doc[spec.field] = parseListItems(section.lines);
        break;
      case 'playByPlay':
        doc[spec.field] = parseListItems(section.lines).map(parsePlayByPlayEntry);
        break;
      case 'table':
        doc[spec.field] = parseArtifactTable(section.lines, where);
        break;
    }
  }
  const missing = HANDOFF_SECTIONS.filter((s) => s.required && !seen.has(s.field)).map((s) => s.title);
  if (missing.length > 0) {
    throw schemaError(`${where}: missing required section${missing.length > 1 ? 's' : ''} ${missing.map((m) => `"${m}"`).join(', ')}`, {
      where,
      sections: missing,
    });
  }
  if (extras.length > 0) doc.extraSections = extras;
  return doc;
}

/**
 * Parses a hand-off document. Accepts what people write by hand: CRLF line endings,
 * extra blank lines, code fences whose lines start with `#`, escaped pipes in the
 * Artifact Trail, `*`/`+`/numbered bullets, section headings at any level 1–3 in any
 * case, and no User Rules. Text before the first section and directly under
 * `## Essential Information` is not part of the model; sections the spec does not
 * define are kept in `extraSections`.
 *
 * Throws `checkpoint_schema_invalid` naming the section when a required section is
 * missing or empty, and naming the JSON path when the result does not match
 * {@link handoffDocumentJsonSchema} (checked with ajv).
 *
 * @example
 * ```ts
 * const doc = parseHandoff(await readFile('chk-003.md', 'utf8'));
 * doc.nextActions; // ['Phase 3: Implement game mechanics (timer, scoring, combos)', 'Blocked: None']
 * ```
 */
export function parseHandoff(text: string, where = 'hand-off document'): HandoffDocument {
  if (typeof text !== 'string')
    throw schemaError('parseHandoff needs the document as a string', {
      where: typeof where === 'string' ? where : 'hand-off document',
      section: 'front matter',
    });
  const doc = parseHandoffStructure(text, where);
  assertValid(validateHandoffDocument(doc), where);
  return doc as unknown as HandoffDocument;
}

/** Parses without the schema check, for callers that validate against another schema (stored documents). */
export function parseHandoffUnchecked(text: string, where: string): Record<string, unknown> {
  return parseHandoffStructure(text, where);
}

function renderFrontMatter(doc: HandoffDocument): string {
  const fm: Record<string, JsonValue> = { checkpoint: doc.checkpoint, created: doc.created };
  if (doc.anchor !== undefined) fm.anchor = doc.anchor;
  for (const [key, value] of Object.entries(doc.frontMatter ?? {})) {
    if ((HANDOFF_HEADER_FIELDS as readonly string[]).includes(key)) {
      throw schemaError(`frontMatter may not repeat the header field "${key}"`, { field: key });
    }
    fm[key] = value;
  }
  return stringify(fm, { lineWidth: 0 });
}

function sectionBlock(heading: string, body: string): string {
  return body === '' ? heading : `${heading}\n${body}`;
}

function renderItems(items: readonly string[], where: string): string {
  const normalized = items.map(normalizeText).filter((i) => i !== '');
  normalized.forEach((item, i) => assertRenderable(item, `${where} item ${i + 1}`, false));
  return renderListItems(normalized);
}

/**
 * Renders a hand-off document in the spec's layout: front matter, `## Problem`,
 * `## Session Intent`, `## Essential Information` with its six `###` sections (the
 * Artifact Trail as a File / Status / Key Change table), optional `## User Rules`, then
 * any extra sections. Text is written in normal form (trailing spaces and repeated
 * blank lines removed), so `parseHandoff(renderHandoff(doc))` equals `doc` for a
 * document in normal form.
 *
 * Throws `checkpoint_schema_invalid` when the document does not match the schema or
 * holds text that could not be read back as written (an unclosed code fence, a heading
 * line inside Problem).
 */
export function renderHandoff(doc: HandoffDocument): string {
  const checked = HandoffDocumentSchema.safeParse(doc);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw schemaError(`hand-off document does not match its schema: /${issue.path.join('/')} ${issue.message}`, {
      paths: checked.error.issues.slice(0, 20).map((i) => `/${i.path.join('/')}`),
    });
  }
  const parts: string[] = [`---\n${renderFrontMatter(doc)}---`];
  for (const spec of HANDOFF_SECTIONS) {
    if (spec.field === 'decisions') parts.push(`## ${ESSENTIAL_INFORMATION}`);
    const heading = `${'#'.repeat(spec.level)} ${spec.title}`;
    switch (spec.kind) {
      case 'text': {
        const text = normalizeText(doc[spec.field as 'problem' | 'sessionIntent']);
        if (text === '') throw schemaError(`section "${spec.title}" is empty`, { section: spec.title });
        assertRenderable(text, `section "${spec.title}"`, true);
        parts.push(sectionBlock(heading, text));
        break;
      }
      case 'list': {
        const items = doc[spec.field as 'decisions'] as string[] | undefined;
        if (items === undefined) continue;
        parts.push(sectionBlock(heading, renderItems(items, `section "${spec.title}"`)));
        break;
      }
      case 'playByPlay':
        doc.playByPlay.forEach((e, i) => assertPlayByPlayRenderable(e, `section "Play-By-Play" item ${i + 1}`));
        parts.push(sectionBlock(heading, renderListItems(doc.playByPlay.map(renderPlayByPlayEntry))));
        break;
      case 'table':
        parts.push(`${heading}\n\n${renderArtifactTable(doc.artifactTrail)}`);
        break;
    }
  }
  for (const extra of doc.extraSections ?? []) {
    const heading = extra.heading.trim();
    if (RESERVED_KEYS.has(sectionKey(heading)) || headingOf(`## ${heading}`)?.title !== heading) {
      throw schemaError(`extra section "${heading}" cannot be written under that heading`, { section: heading });
    }
    const body = normalizeText(extra.body);
    assertRenderable(body, `section "${heading}"`, true);
    parts.push(sectionBlock(`## ${heading}`, body));
  }
  return `${parts.join('\n\n')}\n`;
}
