import { BIG_STRING, canonicalTextOrPieces, NEEDS_ESCAPE, parseJson } from './canonical-json.js';
import { type JsonValue } from '../contract/json.js';
import { CheckpointError } from '../contract/errors.js';
import { utf8Chunks, utf8EncodePieces, utf8Length } from './utf8.js';

/**
 * Canonical JSON held in pieces (`canonicalJsonOf`): a big string that needs no escape is a
 * piece of its own, by reference, between two `"` pieces. These helpers measure, encode and
 * parse such text without joining it into one string, so a large checkpoint is split with
 * the caller's strings shared, never copied whole (≤ 3× the payload).
 */

/** Below this length a string's JSON form is measured from a copy (cheaper than the chunked encoder). */
const SHORT = 1024;

/** UTF-8 length of `text`'s JSON form (quoted and escaped as `JSON.stringify` does), without building it for a long string that needs no escape. */
export function jsonStringBytes(text: string): number {
  if (text.length >= SHORT && !NEEDS_ESCAPE.test(text)) return 2 + utf8Length(text);
  const json = JSON.stringify(text);
  let n = json.length;
  for (let i = 0; i < json.length; i++) {
    const c = json.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff) {
      n += 2; // a surrogate pair: 2 UTF-16 units, 4 bytes
      i++;
    } else n += 2;
  }
  return n;
}

/** The canonical JSON of `value` as pieces (one piece when it holds no big string). */
function piecesOf(value: JsonValue): readonly string[] {
  if (typeof value === 'string' && value.length >= BIG_STRING && !NEEDS_ESCAPE.test(value)) return ['"', value, '"'];
  const { text, pieces } = canonicalTextOrPieces(value);
  return pieces ?? [text];
}

/** UTF-8 of `value`'s canonical JSON, in one buffer of its exact size; big strings are encoded straight from the caller's string. */
export function canonicalJsonBytes(value: JsonValue): Uint8Array {
  return utf8EncodePieces(piecesOf(value));
}

/** UTF-8 length of `value`'s canonical JSON, without building its bytes or its whole text. */
export function canonicalJsonLength(value: JsonValue): number {
  return utf8Chunks(piecesOf(value));
}

/**
 * Parses canonical JSON given in pieces: the same value `parseJson` makes of the joined text,
 * except that each big string is the piece itself, shared, not a copy. The rest of the text
 * is joined with a placeholder string in place of each big string (a tag that no other piece
 * contains, so no value of the document can be mistaken for one), parsed, and the
 * placeholders are replaced in one walk.
 */
export function parseJsonPieces(pieces: readonly string[], where = 'document'): JsonValue {
  const big: string[] = [];
  const rest: (string | number)[] = [];
  for (let i = 0; i < pieces.length; i++) {
    const p = pieces[i]!;
    // Only a big string by reference is a lone `"` piece (every other piece is a whole token or more).
    if (p === '"' && pieces[i + 2] === '"' && pieces[i + 1]!.length >= BIG_STRING) {
      rest.push(big.length);
      big.push(pieces[i + 1]!);
      i += 2;
    } else rest.push(p);
  }
  if (big.length === 0) return parseJson(pieces.join(''), where);
  let tag = '$savepoint_piece_';
  while (rest.some((p) => typeof p === 'string' && p.includes(tag))) tag += '_';
  let text = '';
  for (const p of rest) text += typeof p === 'number' ? `"${tag}${p}"` : p;
  const root: { value: JsonValue } = { value: parseJson(text, where) };
  let found = 0;
  const stack: Record<string | number, JsonValue>[] = [root as unknown as Record<string, JsonValue>];
  while (stack.length > 0) {
    const holder = stack.pop()!;
    for (const key of Array.isArray(holder) ? holder.keys() : Object.keys(holder)) {
      const v = holder[key]!;
      if (typeof v === 'string') {
        if (v.startsWith(tag)) {
          holder[key] = big[Number(v.slice(tag.length))]!;
          found++;
        }
      } else if (typeof v === 'object' && v !== null) stack.push(v as Record<string | number, JsonValue>);
    }
  }
  if (found !== big.length)
    throw new CheckpointError('checkpoint_schema_invalid', `${where}: ${found} of ${big.length} large strings found again after parsing`);
  return root.value;
}
