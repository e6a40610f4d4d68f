import { CHUNKED_MARKER } from '../../codec/chunking.js';
import { hasNumberJsonbRefuses } from '../../codec/jsonb-refusals.js';
import type { KnownMetadata } from '../../contract/storage.js';

/**
 * The metadata column's value of a row, worked out by the store before it writes the row, so the
 * server need not parse the document (PostgreSQL's JSON lexer walks it byte by byte; V8's
 * `JSON.parse` is several times cheaper). The rules are the column function's
 * (metadata-index.ts): the same value for the same key and bytes. Where the two parsers could
 * disagree, the store does not guess: `given` is false and the server computes the column as it
 * does for a row an older version writes.
 */
export interface ClientMetadata {
  /** The column's value as `jsonb` input text; null is unknown (NULL). */
  readonly json: string | null;
  /** False: the server computes the column from the row (the store could not be sure of it). */
  readonly given: boolean;
}

const UNKNOWN: ClientMetadata = { json: null, given: true };
const EMPTY: ClientMetadata = { json: '{}', given: true };
const SERVER: ClientMetadata = { json: null, given: false };

const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Occurrences of `part` in `text`, counting at most two. */
function atMostTwo(text: string, part: string): number {
  const first = text.indexOf(part);
  if (first < 0) return 0;
  return text.indexOf(part, first + part.length) < 0 ? 1 : 2;
}

/**
 * The metadata member of `doc` (parsed from `text`) as the column holds it. Its text is
 * `JSON.stringify` of what `JSON.parse` read, which holds the same value `jsonb` reads from the
 * document only if the document spells the member exactly so (a number such as
 * 12345678901234567890 loses digits in a double): the document must name `"metadata"` once and
 * follow it with exactly that text, else the server computes it.
 */
function metadataMember(text: string, doc: Record<string, unknown>): ClientMetadata {
  if (Object.hasOwn(doc, CHUNKED_MARKER) || Object.hasOwn(doc, 'metadata_blob')) return UNKNOWN;
  const meta = Object.hasOwn(doc, 'metadata') ? doc['metadata'] : undefined;
  if (!isPlainObject(meta)) return EMPTY;
  const json = JSON.stringify(meta);
  // LangChain's reviver would read an `lc` member back as another value: unknown, as the function says.
  if (json.includes('"lc"')) return UNKNOWN;
  if (atMostTwo(text, '"metadata"') !== 1 || !text.includes(`"metadata":${json}`)) return SERVER;
  return { json, given: true };
}

/** The metadata column of a row the store writes under `key` with `bytes` (see {@link ClientMetadata}). */
export function clientMetadata(key: string, bytes: Uint8Array): ClientMetadata {
  const n = bytes.length;
  if (!key.endsWith('.json') || n < 2 || bytes[0] !== OPEN_BRACE || bytes[n - 1] !== CLOSE_BRACE) return UNKNOWN;
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return UNKNOWN; // not UTF-8: the server's convert_from refuses it too
  }
  // An escape can spell a member's name, or a character jsonb refuses (NUL): left to the server.
  if (text.includes('\\u')) return SERVER;
  const named = text.includes('"metadata') || text.includes(CHUNKED_MARKER);
  if (named && hasNumberJsonbRefuses(text)) return SERVER;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return UNKNOWN;
  }
  if (!isPlainObject(doc)) return UNKNOWN;
  return named ? metadataMember(text, doc) : EMPTY;
}

/**
 * The column's text a put's `knownMetadata` gives for its `bytes`, or undefined when it gives
 * none: it describes another array (a wrapper put other bytes) or is absent.
 */
export function knownMetadataJson(bytes: Uint8Array, known: KnownMetadata | undefined): string | null | undefined {
  return known !== undefined && known.bytes === bytes ? known.json : undefined;
}

/**
 * The metadata parameters of a put of `bytes` under `key`: its column's text and whether it is
 * given. `known` (from {@link knownMetadataJson}) is taken instead of parsing the bytes, under a
 * key whose column is computed at all.
 */
export function metadataParams(key: string, bytes: Uint8Array, known?: string | null): [string | null, boolean] {
  if (known !== undefined && key.endsWith('.json')) return [known, true];
  const m = clientMetadata(key, bytes);
  return [m.json, m.given];
}
