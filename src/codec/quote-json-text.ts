/** Shorter texts are quoted by `JSON.stringify` (the search below pays off on long texts only). */
const MIN_LENGTH = 4096;
/** At most one quote or backslash per this many characters is "sparse" (see {@link quoteJsonText}). */
const SPARSE = 256;

/**
 * `before + JSON.stringify(text) + after`, as one flat string, for a `text` that `JSON.stringify`
 * made (the JSON of any value, without indentation). Such a text holds no character below U+0020
 * and no lone surrogate (`JSON.stringify` escapes them), so quoting it escapes its quotes and
 * backslashes alone. Where they are sparse (the JSON of long strings: a few a message) the text
 * is copied around them by native calls (`indexOf`, slices, one `join`), several times faster than
 * `JSON.stringify`, which looks at every character; where they are dense (the JSON of objects,
 * every key quoted) `JSON.stringify` is faster and is used. The result is flat, not a
 * concatenation: encoding a concatenation to UTF-8 first copies it into a flat string.
 */
export function quoteJsonText(text: string, before = '', after = ''): string {
  if (text.length < MIN_LENGTH) return `${before}${JSON.stringify(text)}${after}`;
  const escapes = escapesIn(text, text.length / SPARSE);
  if (escapes === undefined) return `${before}${JSON.stringify(text)}${after}`;
  const parts: string[] = [before, '"'];
  let from = 0;
  for (const at of escapes) {
    // The quote or backslash stays at the start of the next slice, with a backslash before it.
    parts.push(text.slice(from, at), '\\');
    from = at;
  }
  parts.push(text.slice(from), '"', after);
  return parts.join('');
}

/** Where `text` holds a quote or a backslash, in order; undefined past `limit` of them. */
function escapesIn(text: string, limit: number): number[] | undefined {
  const at: number[] = [];
  let quote = text.indexOf('"');
  let backslash = text.indexOf('\\');
  while (quote >= 0 || backslash >= 0) {
    if (at.length >= limit) return undefined;
    if (backslash < 0 || (quote >= 0 && quote < backslash)) {
      at.push(quote);
      quote = text.indexOf('"', quote + 1);
    } else {
      at.push(backslash);
      backslash = text.indexOf('\\', backslash + 1);
    }
  }
  return at;
}
