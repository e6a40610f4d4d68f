/**
 * The small Markdown reader and writer both document profiles share: sections split on
 * headings outside code fences, bullet lists with continuation lines, GFM table cells
 * with escaped pipes, and the normal form text is kept in. No YAML here, so the
 * progress-protocol subpath can use it without the `yaml` peer.
 *
 * Normal form of a text block (what parsing yields and rendering expects): line endings
 * are `\n`, trailing whitespace is removed from every line, runs of blank lines outside
 * code fences are collapsed to one, and leading/trailing blank lines are dropped.
 */
import { CheckpointError } from '../../contract/errors.js';

/** A fence opener, also after list markers (`- ```ts`). */
const FENCE_OPEN = /^\s*(?:(?:[-*+]|\d{1,9}[.)])\s+)*(`{3,}|~{3,})(.*)$/;
const HEADING = /^(#{1,6})(?:[ \t]+(.*?))?[ \t]*$/;
const BULLET = /^( {0,3})([-*+]|\d{1,9}[.)])(?:([ \t]+)(.*)|$)/;

/** Line endings to `\n`, without a byte-order mark. */
export function normalizeNewlines(text: string): string {
  return (text.startsWith('\uFEFF') ? text.slice(1) : text).replace(/\r\n?/g, '\n');
}

interface Fence {
  readonly char: string;
  readonly length: number;
}

/** The fence `line` opens, if any. */
function fenceOpenedBy(line: string): Fence | undefined {
  const open = FENCE_OPEN.exec(line);
  // A backtick fence's info string may not contain a backtick (that is inline code).
  if (!open || (open[1]![0] === '`' && open[2]!.includes('`'))) return undefined;
  return { char: open[1]![0]!, length: open[1]!.length };
}

/** True when `line` closes `fence`. */
function closes(line: string, fence: Fence): boolean {
  const close = /^\s*(`{3,}|~{3,})\s*$/.exec(line);
  return close !== null && close[1]![0] === fence.char && close[1]!.length >= fence.length;
}

function scanFences(lines: readonly string[]): { fenced: boolean[]; unclosed: boolean } {
  const fenced: boolean[] = [];
  let fence: Fence | undefined;
  for (const line of lines) {
    if (fence) {
      fenced.push(true);
      if (closes(line, fence)) fence = undefined;
      continue;
    }
    fence = fenceOpenedBy(line);
    fenced.push(fence !== undefined);
  }
  return { fenced, unclosed: fence !== undefined };
}

/**
 * For each line, whether it is part of a fenced code block (the fence lines included).
 * An unclosed fence runs to the end, as CommonMark says.
 */
export function fencedLines(lines: readonly string[]): boolean[] {
  return scanFences(lines).fenced;
}

/** True when every fence `text` opens is closed again. */
export function fencesBalanced(text: string): boolean {
  return !scanFences(text.split('\n')).unclosed;
}

/** A heading line (`## Title`), or `undefined`. Only column-0 ATX headings count. */
export function headingOf(line: string): { level: number; title: string } | undefined {
  const m = HEADING.exec(line);
  if (!m) return undefined;
  const title = (m[2] ?? '')
    .replace(/[ \t]+#+$/, '')
    .replace(/^#+$/, '')
    .trim();
  return { level: m[1]!.length, title };
}

/** Section names compared without case, spaces or punctuation: `Play-By-Play` = `play by play`. */
export function sectionKey(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]/g, '');
}

/** One section of a document: its heading and the lines under it up to the next section heading. */
export interface MarkdownSection {
  readonly level: number;
  readonly title: string;
  readonly key: string;
  /** Line index (0-based, in the body) of the heading, for messages. */
  readonly line: number;
  readonly lines: string[];
}

/**
 * Splits `lines` into sections at headings of level `minLevel`..`maxLevel` outside code
 * fences. Lines before the first such heading are returned as `preamble`.
 */
export function splitSections(lines: readonly string[], maxLevel = 3, minLevel = 1): { preamble: string[]; sections: MarkdownSection[] } {
  const fenced = fencedLines(lines);
  const preamble: string[] = [];
  const sections: MarkdownSection[] = [];
  let current: MarkdownSection | undefined;
  lines.forEach((line, i) => {
    const h = fenced[i] ? undefined : headingOf(line);
    if (h && h.level >= minLevel && h.level <= maxLevel) {
      current = { level: h.level, title: h.title, key: sectionKey(h.title), line: i, lines: [] };
      sections.push(current);
      return;
    }
    (current ? current.lines : preamble).push(line);
  });
  return { preamble, sections };
}

/** Puts lines in normal form (see the module comment) and joins them. */
export function normalizeBlock(lines: readonly string[]): string {
  const fenced = fencedLines(lines);
  const out: string[] = [];
  lines.forEach((raw, i) => {
    const line = raw.replace(/[ \t]+$/, '');
    if (line === '' && !fenced[i] && out.length > 0 && out[out.length - 1] === '') return;
    out.push(line);
  });
  while (out.length > 0 && out[0] === '') out.shift();
  while (out.length > 0 && out[out.length - 1] === '') out.pop();
  return out.join('\n');
}

/** Normal form of a text (see the module comment). */
export function normalizeText(text: string): string {
  return normalizeBlock(normalizeNewlines(text).split('\n'));
}

/**
 * Parses the items of a bullet list (`-`, `*`, `+` or `1.`). An item runs until the next
 * bullet at the list's own indentation; its continuation lines lose the item's content
 * indentation, so nested lists and code fences survive. Text that is not in a bullet
 * (a paragraph written instead of a list) becomes an item of its own, one per paragraph.
 */
export function parseListItems(lines: readonly string[]): string[] {
  const items: string[][] = [];
  let current: string[] | undefined;
  let baseIndent: number | undefined;
  let contentIndent = 0;
  let blankBefore = false;
  let fence: Fence | undefined;
  const indentOf = (line: string): number => /^ */.exec(line)![0].length;
  for (const line of lines) {
    if (fence) {
      current!.push(line.slice(Math.min(indentOf(line), contentIndent)));
      if (closes(line, fence)) fence = undefined;
      continue;
    }
    const bullet = BULLET.exec(line);
    if (bullet && (baseIndent === undefined || bullet[1]!.length === baseIndent)) {
      baseIndent = bullet[1]!.length;
      contentIndent = baseIndent + bullet[2]!.length + (bullet[3] === undefined ? 1 : Math.min(bullet[3].length, 4));
      current = [bullet[4] ?? ''];
      items.push(current);
      blankBefore = false;
      fence = fenceOpenedBy(line);
      continue;
    }
    if (line.trim() === '') {
      current?.push('');
      blankBefore = current !== undefined;
      continue;
    }
    const indent = indentOf(line);
    if (!current || (blankBefore && indent < Math.max(contentIndent, 1))) {
      // A paragraph outside any bullet.
      contentIndent = 0;
      current = [line.trim()];
      items.push(current);
    } else {
      current.push(line.slice(Math.min(indent, contentIndent)));
    }
    blankBefore = false;
    fence = fenceOpenedBy(line);
  }
  return items.map((item) => normalizeBlock(item)).filter((item) => item !== '');
}

/** Renders items as a `- ` bullet list; continuation lines are indented by two spaces. */
export function renderListItems(items: readonly string[]): string {
  return items
    .map((item) =>
      item
        .split('\n')
        .map((line, i) => (i === 0 ? `- ${line}` : line === '' ? '' : `  ${line}`))
        .join('\n'),
    )
    .join('\n');
}

/** Splits one GFM table row into its cells: `\|` is a literal pipe, leading/trailing pipes are optional. */
export function splitTableRow(line: string): string[] {
  let text = line.trim();
  if (text.startsWith('|')) text = text.slice(1);
  const cells: string[] = [];
  let cell = '';
  let ended = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === '\\' && text[i + 1] === '|') {
      cell += '|';
      i++;
      continue;
    }
    if (ch === '|') {
      cells.push(cell.trim());
      cell = '';
      ended = i === text.length - 1;
      continue;
    }
    cell += ch;
  }
  if (!ended || cell.trim() !== '') cells.push(cell.trim());
  return cells;
}

/** Escapes a table cell: `|` → `\|`. */
export function escapeTableCell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

/** True for a table's delimiter row (`|---|:---:|`). */
export function isTableDelimiter(line: string): boolean {
  const cells = splitTableRow(line);
  return cells.length > 0 && cells.every((c) => /^:?-{1,}:?$/.test(c));
}

/** True when `line` looks like a table row. */
export function isTableRow(line: string): boolean {
  return /(^\s*\|)|(?:[^\\]\|)/.test(line);
}

/**
 * Checks that `text` can be rendered inside a section and read back unchanged: every code
 * fence it opens is closed and, for free text, no line outside a fence is a level 1–3
 * heading (it would start a new section). Throws `checkpoint_schema_invalid` naming `where`.
 */
export function assertRenderable(text: string, where: string, freeText: boolean): void {
  if (!fencesBalanced(text)) {
    throw new CheckpointError('checkpoint_schema_invalid', `${where} has a code fence that is never closed`, { details: { where } });
  }
  if (!freeText) return;
  const lines = text.split('\n');
  const fenced = fencedLines(lines);
  lines.forEach((line, i) => {
    const h = fenced[i] ? undefined : headingOf(line);
    if (h && h.level <= 3) {
      throw new CheckpointError(
        'checkpoint_schema_invalid',
        `${where} has a line that would start a new section (a level ${h.level} heading)`,
        {
          details: { where, line: i + 1 },
        },
      );
    }
  });
}
