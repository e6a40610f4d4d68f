import { CheckpointError } from '../contract/errors.js';

/** Longest key accepted, in UTF-16 code units. */
export const MAX_KEY_LENGTH = 1024;
/** Longest single path segment accepted (most file systems cap names at 255 bytes). */
export const MAX_SEGMENT_BYTES = 255;

const encoder = new TextEncoder();

function reject(why: string, key: unknown): never {
  // The key itself is not echoed: it may come from untrusted input or hold a secret.
  throw new CheckpointError('checkpoint_key_invalid', `invalid storage key: ${why}`, {
    details: { length: typeof key === 'string' ? key.length : -1 },
  });
}

/**
 * The single place keys are checked. A valid key is a relative, slash-separated path
 * that cannot escape an adapter's root on any platform: non-empty; at most
 * {@link MAX_KEY_LENGTH} characters; no leading `/`, no drive letter, no empty, `.` or
 * `..` segment; no backslash, NUL or other control character; no lone UTF-16 surrogate
 * (a store that names files or rows in UTF-8 would turn it into U+FFFD, so `x\ud800` and
 * `x\ufffd` would be one key there and two in memory); each segment at most
 * {@link MAX_SEGMENT_BYTES} UTF-8 bytes. Throws `checkpoint_key_invalid`.
 */
export function assertKey(key: unknown): asserts key is string {
  // The usual key passes one pass over its characters: cheaper than hashing it for a set
  // (a new history key is a new string, its hash not cached yet) and adding it there.
  if (plainKey(key)) return;
  // Checking the rest is pure, and a run touches the same few keys on every checkpoint and
  // read: remember the last keys that passed.
  if (typeof key === 'string' && recentlyValid.has(key)) return;
  checkKey(key);
  if (recentlyValid.size >= RECENT_KEYS) recentlyValid.clear();
  recentlyValid.add(key);
}

const RECENT_KEYS = 1024;
const recentlyValid = new Set<string>();

/**
 * One pass over the usual key (a history entry's, new on every checkpoint): true only for a
 * key `checkKey` accepts — printable, no backslash, no surrogate (paired or not), relative, no
 * drive letter, no empty, `.` or `..` segment, short segments. Anything else, valid or not, goes to `checkKey`, which
 * decides and words the error (a property test holds the two together).
 */
function plainKey(key: unknown): key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > MAX_KEY_LENGTH) return false;
  if (key.length > 1 && key.charCodeAt(1) === 0x3a) return false; // "C:…": checkKey decides
  let start = 0;
  for (let i = 0; i <= key.length; i++) {
    const c = i === key.length ? 0x2f : key.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
    if (c !== 0x2f) continue;
    const length = i - start;
    if (length === 0 || length * 3 > MAX_SEGMENT_BYTES) return false;
    if (key.charCodeAt(start) === 0x2e && (length === 1 || (length === 2 && key.charCodeAt(start + 1) === 0x2e))) return false;
    start = i + 1;
  }
  return true;
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string') reject('not a string', key);
  if (key.length === 0) reject('empty', key);
  if (key.length > MAX_KEY_LENGTH) reject(`longer than ${MAX_KEY_LENGTH} characters`, key);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(key)) reject('contains a control character', key);
  if (key.includes('\\')) reject('contains a backslash', key);
  // With the u flag a well-formed pair is one code point: only an unpaired half matches.
  if (/\p{Cs}/u.test(key)) reject('contains a lone UTF-16 surrogate (not well-formed Unicode)', key);
  if (key.startsWith('/')) reject('is absolute', key);
  if (/^[A-Za-z]:/.test(key)) reject('starts with a drive letter', key);
  for (const segment of key.split('/')) {
    if (segment === '') reject('has an empty segment', key);
    if (segment === '.' || segment === '..') reject('has a "." or ".." segment', key);
    // A UTF-16 code unit is at most 3 UTF-8 bytes: short segments need no encoding (hot path).
    if (segment.length * 3 > MAX_SEGMENT_BYTES && encoder.encode(segment).length > MAX_SEGMENT_BYTES)
      reject(`has a segment longer than ${MAX_SEGMENT_BYTES} bytes`, key);
  }
}

/** Whether `key` is a valid key ({@link assertKey}), without throwing. */
export function isKey(key: string): boolean {
  try {
    assertKey(key);
    return true;
  } catch {
    return false;
  }
}

/**
 * Checks a list prefix: `''` (everything) or a string that is a valid key or a valid
 * key followed by `/`. Throws `checkpoint_key_invalid`.
 */
export function assertPrefix(prefix: unknown): asserts prefix is string {
  if (prefix === '') return;
  if (typeof prefix !== 'string') reject('prefix is not a string', prefix);
  assertKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
}

/** Whether `prefix` is a valid prefix ({@link assertPrefix}), without throwing. */
export function isPrefix(prefix: string): boolean {
  try {
    assertPrefix(prefix);
    return true;
  } catch {
    return false;
  }
}

/** Joins key segments with `/`, then validates the result. */
export function joinKey(...segments: string[]): string {
  const key = segments.filter((s) => s !== '').join('/');
  assertKey(key);
  return key;
}
