/**
 * `.ccc-state.json` as editors and other tools leave it: a UTF-8 byte order mark, `//` and
 * block comments, trailing commas (JSONC). Read liberally; savepoint writes plain JSON.
 */

/** `text` without a leading byte order mark. */
export const withoutBom = (text: string): string => (text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);

/**
 * JSONC text as JSON text: comments become spaces and trailing commas go, strings untouched.
 * A comment that never ends, or any other error, is left for `JSON.parse` to report.
 */
export function jsoncToJson(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === '"') {
      const end = stringEnd(text, i);
      out += text.slice(i, end);
      i = end;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && text[i + 1] === '*') {
      const end = text.indexOf('*/', i + 2);
      if (end < 0) return text;
      out += ' ';
      i = end + 2;
    } else {
      out += c;
      i++;
    }
  }
  return out.replace(/,(\s*[}\]])/g, '$1');
}

/** The index just past the string literal starting at `start` (or the end of the text). */
function stringEnd(text: string, start: number): number {
  let i = start + 1;
  while (i < text.length) {
    if (text[i] === '\\') i += 2;
    else if (text[i] === '"') return i + 1;
    else i++;
  }
  return text.length;
}
