/**
 * What PostgreSQL's `jsonb` input refuses in a text `JSON.parse` reads. A number beyond
 * `numeric`'s range (an exponent of four digits or more, or a run of thousands of digits) makes
 * the server's parse fail where `JSON.parse` reads Infinity or 0. Only tokens after `:`, `,` or
 * `[` count, so an id such as `"1e1234"` inside a string rarely matches (and a match only means
 * "not sure": the caller leaves the text to the server).
 */
const LARGE_EXPONENT = /[:,[]\s*-?\d+(?:\.\d+)?[eE][+-]?\d{4}/;
const LONG_DIGITS = /\d{6000}/;

/** Whether `text` may hold a number `jsonb` refuses (see above; false is certain, true is not). */
export function hasNumberJsonbRefuses(text: string): boolean {
  return LARGE_EXPONENT.test(text) || (text.length >= 6000 && LONG_DIGITS.test(text));
}

/**
 * Whether JSON `text` may hold something `jsonb` refuses or reads otherwise than `JSON.parse`: an
 * escape (`\u0000`, a lone surrogate, or a member's name spelt with escapes) or such a number.
 * False is certain.
 */
export function mayDifferAsJsonb(text: string): boolean {
  return text.includes('\\u') || hasNumberJsonbRefuses(text);
}
