/**
 * The front matter of a hand-off as lines of text, so that savepoint can add or replace its
 * own keys and carry another tool's keys without re-serializing them: what that tool wrote
 * stays byte for byte (its quoting, comments and layout).
 */
import { normalizeNewlines } from './markdown.js';

/** A document split around its front matter (line endings `\n`). */
export interface FrontMatterText {
  /** Lines up to and including the opening `---`. */
  readonly head: string[];
  /** The YAML lines between the fences. */
  readonly yaml: string[];
  /** The closing fence line and everything after it. */
  readonly tail: string[];
}

/** Splits `text` around its front matter; `undefined` when it has none. */
export function splitFrontMatterText(text: string): FrontMatterText | undefined {
  const lines = normalizeNewlines(text).split('\n');
  let start = 0;
  while (start < lines.length && lines[start]!.trim() === '') start++;
  if (lines[start]?.trimEnd() !== '---') return undefined;
  let end = start + 1;
  while (end < lines.length && !/^(?:---|\.\.\.)\s*$/.test(lines[end]!)) end++;
  if (end >= lines.length) return undefined;
  return { head: lines.slice(0, start + 1), yaml: lines.slice(start + 1, end), tail: lines.slice(end) };
}

/** One top-level entry of the front matter: its key (when a plain or quoted key) and its lines. */
export interface FrontMatterBlock {
  readonly key?: string;
  readonly lines: string[];
}

const KEY = /^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s#'"?:\-[\]{},&*!|>%@`][^:#]*?|-[^\s:#][^:#]*?))\s*:(?:[ \t]|$)/;

/**
 * The front matter's top-level entries: a line at column 0 that starts a `key:` begins one;
 * indented lines, blank lines and column-0 `- ` items (a block sequence) continue it. A
 * column-0 comment is a block of its own.
 */
export function frontMatterBlocks(yaml: readonly string[]): FrontMatterBlock[] {
  const blocks: { key?: string; lines: string[] }[] = [];
  for (const line of yaml) {
    const m = KEY.exec(line);
    if (m) {
      blocks.push({ key: m[1] ?? m[2]?.replace(/''/g, "'") ?? m[3]!.trim(), lines: [line] });
      continue;
    }
    const last = blocks[blocks.length - 1];
    if (last && !line.startsWith('#') && (line === '' || /^[ \t]/.test(line) || /^-(?:\s|$)/.test(line))) last.lines.push(line);
    else blocks.push({ lines: [line] });
  }
  return blocks;
}

/**
 * `text` with the front-matter entries whose keys are in `remove` taken out and `add` (whole
 * lines) appended at the end of the front matter; every other line stays as written.
 */
export function editFrontMatter(text: string, remove: ReadonlySet<string>, add: readonly string[]): string | undefined {
  const split = splitFrontMatterText(text);
  if (!split) return undefined;
  const kept = frontMatterBlocks(split.yaml).filter((b) => b.key === undefined || !remove.has(b.key));
  const yaml = kept.flatMap((b) => b.lines);
  while (yaml.length > 0 && yaml[yaml.length - 1]!.trim() === '') yaml.pop();
  return [...split.head, ...yaml, ...add, ...split.tail].join('\n');
}
